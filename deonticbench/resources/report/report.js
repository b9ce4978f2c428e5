// The sample browser of a deonticbench report.  Everything is built with textContent:
// model responses and program output are data, never markup.
(function () {
  'use strict';
  var PAGE = 100;
  var meta = JSON.parse(document.getElementById('meta').textContent);
  var rows = JSON.parse(document.getElementById('index').textContent);
  var C = {};
  meta.columns.forEach(function (name, i) { C[name] = i; });
  var byKey = {};
  rows.forEach(function (r, i) {
    var key = [r[C.domain], r[C.case_id], r[C.mode], r[C.sample]].join('\u0000');
    (byKey[key] = byKey[key] || []).push(i);
  });
  var state = { shown: [], page: 0, open: -1 };
  var detailsPromise = null;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        if (k === 'text') node.textContent = attrs[k];
        else if (k === 'cls') node.className = attrs[k];
        else node.setAttribute(k, attrs[k]);
      });
    }
    (children || []).forEach(function (c) {
      if (c === null || c === undefined) return;
      node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
    return node;
  }

  function inflate() {
    if (detailsPromise) return detailsPromise;
    detailsPromise = (async function () {
      var b64 = document.getElementById('details').textContent.trim();
      var bin = atob(b64);
      var bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
      var data = JSON.parse(await new Response(stream).text());
      window.__detailsReady = performance.now();
      return data;
    })();
    return detailsPromise;
  }

  function runName(i) { return meta.runs[i] ? meta.runs[i].name : String(i); }

  // -- filters ---------------------------------------------------------------------
  var selects = Array.prototype.slice.call(document.querySelectorAll('#filters select'));
  var caseInput = document.getElementById('f-case');

  function fillSelect(select) {
    var col = C[select.dataset.col];
    var counts = {};
    rows.forEach(function (r) { var v = String(r[col]); counts[v] = (counts[v] || 0) + 1; });
    var values = Object.keys(counts).sort();
    if (select.dataset.col === 'run') values.sort(function (a, b) { return a - b; });
    select.appendChild(el('option', { value: '', text: 'all' }));
    values.forEach(function (v) {
      var label = v;
      if (select.dataset.col === 'run') label = runName(Number(v));
      else if (select.dataset.col === 'domain') label = meta.domains[v] || v;
      else if (v === '') label = '(none)';
      select.appendChild(el('option', { value: v, text: label + ' (' + counts[v] + ')' }));
    });
    // A filter with nothing to choose between is hidden (e.g. one run, no analysis).
    var useful = values.length > 1 || (values.length === 1 && values[0] !== '');
    if (!useful || (select.dataset.col === 'run' && values.length < 2)) {
      select.parentNode.hidden = true;
    }
  }

  function applyFilters() {
    var wanted = selects
      .filter(function (s) { return s.value !== ''; })
      .map(function (s) { return [C[s.dataset.col], s.value]; });
    var needle = caseInput.value.trim().toLowerCase();
    state.shown = [];
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      var ok = true;
      for (var j = 0; j < wanted.length; j++) {
        if (String(r[wanted[j][0]]) !== wanted[j][1]) { ok = false; break; }
      }
      if (ok && needle && String(r[C.case_id]).toLowerCase().indexOf(needle) < 0) ok = false;
      if (ok) state.shown.push(i);
    }
    state.page = 0;
    renderList();
  }

  function outcomeCell(value) {
    return el('td', { cls: 'o-' + value, text: value });
  }

  function renderList() {
    var tbody = document.querySelector('#sample-list tbody');
    var pages = Math.max(1, Math.ceil(state.shown.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    var start = state.page * PAGE;
    var frag = document.createDocumentFragment();
    state.shown.slice(start, start + PAGE).forEach(function (i) {
      var r = rows[i];
      var tr = el('tr', { 'data-i': String(i) }, [
        el('td', { text: runName(r[C.run]) }),
        el('td', { text: meta.domains[r[C.domain]] || r[C.domain] }),
        el('td', { text: r[C.case_id] }),
        el('td', { text: r[C.mode] }),
        el('td', { text: String(r[C.sample]) }),
        el('td', { text: r[C.gold] }),
        el('td', { text: r[C.answer] }),
        outcomeCell(r[C.outcome]),
        // An agentic trial has no first attempt or retries of its own: a dash.
        r[C.first_outcome] === '' ? el('td', { cls: 'muted', text: '—' })
          : outcomeCell(r[C.first_outcome]),
        el('td', { text: r[C.attempts] === '' ? '—' : String(r[C.attempts]) }),
        el('td', { text: r[C.reason] }),
        el('td', { text: r[C.category] }),
      ]);
      if (i === state.open) tr.className = 'open';
      frag.appendChild(tr);
    });
    tbody.textContent = '';
    tbody.appendChild(frag);
    document.getElementById('count').textContent =
      state.shown.length + ' of ' + rows.length + ' samples';
    document.getElementById('page').textContent = 'page ' + (state.page + 1) + ' of ' + pages;
    document.getElementById('prev').disabled = state.page === 0;
    document.getElementById('next').disabled = state.page >= pages - 1;
  }

  // -- one sample ------------------------------------------------------------------
  function programBlock(text) {
    var pre = el('pre', { cls: 'program' });
    text.replace(/\n$/, '').split('\n').forEach(function (line, n) {
      pre.appendChild(el('span', { cls: 'line', 'data-n': String(n + 1), text: line }));
    });
    return pre;
  }

  function textBlock(text, cls) {
    return el('pre', { cls: cls || '', text: text === '' ? '(empty)' : text });
  }

  function promptText(paras, refs) {
    return refs.map(function (k) { return paras[k]; }).join('\n\n');
  }

  // The harness hashes [[role, content], ...] as compact JSON (Python json.dumps with
  // ensure_ascii=False and separators (",", ":")); JSON.stringify writes the same bytes.
  async function sha256Hex(text) {
    var digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
    return Array.prototype.map
      .call(new Uint8Array(digest), function (b) { return ('0' + b.toString(16)).slice(-2); })
      .join('');
  }

  function promptSection(paras, attempt) {
    if (!attempt.prompt) {
      return el('p', { cls: 'muted', text: 'The prompt could not be rebuilt (see Notes).' });
    }
    var messages = attempt.prompt.map(function (m) { return [m[0], promptText(paras, m[1])]; });
    var status = el('span', {
      cls: attempt.prompt_verified ? 'ok' : 'bad',
      text: attempt.prompt_verified
        ? 'rebuilt prompt matches the recorded sha256 ' + attempt.prompt_hash.slice(0, 16) + '…'
        : 'rebuilt prompt differs from the recorded hash ' + attempt.prompt_hash.slice(0, 16) +
          '… (templates or data changed since the run)',
    });
    var browserCheck = el('span', { cls: 'muted browser-check' });
    if (window.crypto && crypto.subtle) {
      sha256Hex(JSON.stringify(messages)).then(function (hex) {
        var same = hex === attempt.prompt_hash;
        browserCheck.className = (same ? 'ok' : 'bad') + ' browser-check';
        browserCheck.textContent = same
          ? ' · the text shown hashes to it in this browser too'
          : ' · the text shown hashes to ' + hex.slice(0, 16) + '… in this browser';
      });
    }
    var box = el('details', { cls: 'prompt' }, [
      el('summary', {
        text: 'Prompt as sent (' + messages.length + ' messages, ' +
          (attempt.prompt_template || '') + ')',
      }),
    ]);
    messages.forEach(function (m) {
      box.appendChild(el('div', { cls: 'role', text: m[0] }));
      box.appendChild(textBlock(m[1], 'message'));
    });
    return el('div', {}, [el('div', {}, [status, browserCheck]), box]);
  }

  function attemptSection(paras, a, total) {
    var title = 'Attempt ' + (a.index + 1) + ' of ' + total + ': ' + a.outcome +
      (a.reason ? ' (' + a.reason + ')' : '');
    var parts = [el('h4', { text: title }), promptSection(paras, a)];
    if (a.error) parts.push(el('p', { cls: 'bad', text: 'Request failed: ' + a.error }));
    parts.push(el('div', { cls: 'role', text: 'Response' + (a.cached ? ' (from the cache)' : '') +
      ' · ' + a.tokens_in + ' tokens in, ' + a.tokens_out + ' out' }));
    parts.push(textBlock(a.response === null ? '(no response)' : a.response, 'response'));
    return el('div', { cls: 'attempt' }, parts.concat(runParts(a)));
  }

  // An agentic trial has no reply to show: what is judged is the program it left.
  function trialResultSection(paras, a, t) {
    var title = 'Judged final state: ' + a.outcome + (a.reason ? ' (' + a.reason + ')' : '');
    var parts = [el('h4', { text: title }), promptSection(paras, a)];
    if (a.error) parts.push(el('p', { cls: 'bad', text: 'Request failed: ' + a.error }));
    parts.push(el('p', { cls: 'muted', text: 'Tokens over the ' + t.turns + ' turns: ' +
      a.tokens_in + ' in, ' + a.tokens_out + ' out' }));
    if (a.response !== null && a.response !== undefined && a.response !== a.program) {
      parts.push(el('div', { cls: 'role', text: 'Final program: solution.pl as the agent left it' }));
      parts.push(programBlock(a.response));
    }
    if (a.program === null || a.program === undefined) {
      parts.push(el('p', { cls: 'muted', text: 'The trial left no program to run.' }));
    }
    return el('div', { cls: 'attempt trial-result' }, parts.concat(runParts(a, 'Final program')));
  }

  // The program as run, SWI-Prolog's output and the verdict: alike for a reply and a trial.
  function runParts(a, programTitle) {
    var parts = [];
    if (a.program !== null && a.program !== undefined) {
      parts.push(el('div', { cls: 'role', text: (programTitle || 'Program') + ' as run' +
        (a.repaired ? ' (entrypoint repaired by the harness)' : '') }));
      parts.push(programBlock(a.program));
    }
    if (a.execution) {
      var x = a.execution;
      parts.push(el('div', { cls: 'role', text: 'SWI-Prolog: status ' + x.status +
        (x.limit ? ' (limit: ' + x.limit + ')' : '') + ', exit code ' + x.exit_code +
        ', ' + Number(x.wall_s).toFixed(2) + ' s' }));
      parts.push(el('div', { cls: 'muted', text: 'stdout' }));
      parts.push(textBlock(x.stdout, 'stdout'));
      parts.push(el('div', { cls: 'muted', text: 'stderr' }));
      parts.push(textBlock(x.stderr, 'stderr'));
    }
    parts.push(el('dl', { cls: 'facts' }, [
      el('dt', { text: 'Answer read' }), el('dd', { text: a.answer === null ? '—' : String(a.answer) }),
      el('dt', { text: 'Verdict' }), el('dd', { cls: 'o-' + a.outcome, text: a.outcome }),
    ]));
    return parts;
  }

  // An agentic trial, turn by turn: what the model said, each tool call and what it saw.
  function trajectorySection(paras, t) {
    if (!t) return null;
    var calls = Object.keys(t.tool_calls || {}).map(function (k) {
      return k + ' ×' + t.tool_calls[k];
    }).join(', ');
    var parts = [el('h4', { text: 'Trial: ' + t.turns + ' turns, tools ' + t.tool_set + ' (' +
      (calls || 'no calls') + '), ' + Number(t.wall_s).toFixed(2) + ' s' }),
      el('p', { cls: 'stop', text: 'Stopped after turn ' + t.turns + ' (' + t.stop_reason +
        '): ' + (t.stop_text || t.stop_reason) + '.' })];
    if (t.problem) {
      parts.push(el('p', { cls: 'bad', text: 'The trajectory cannot be shown: ' + t.problem }));
      return el('div', { cls: 'trajectory' }, parts);
    }
    var steps = t.steps || [];
    steps.forEach(function (step, n) {
      var last = n === steps.length - 1;
      var box = el('details', { cls: 'turn' + (last ? ' stopped' : '') }, [el('summary', {
        text: 'Turn ' + (n + 1) + ' · ' + (step.tokens[0] === null ? '?' : step.tokens[0]) +
          ' tokens in, ' + (step.tokens[1] === null ? '?' : step.tokens[1]) + ' out' +
          (step.cached ? ' (from the cache)' : '') + ' · ' +
          (step.calls.length ? step.calls.map(function (c) { return c[0]; }).join(', ') : 'no tool call') +
          (last ? ' · stopped here: ' + t.stop_reason : ''),
      })]);
      box.appendChild(el('div', { cls: 'role', text: 'message' }));
      box.appendChild(textBlock(promptText(paras, step.message), 'message'));
      step.calls.forEach(function (c) {
        box.appendChild(el('div', { cls: 'role', text: 'call ' + c[0] + ' ' + c[1] }));
        box.appendChild(textBlock(promptText(paras, c[2]), 'observation'));
      });
      if (last) {
        box.appendChild(el('p', { cls: 'stop', text: 'The trial stopped after this turn: ' +
          (t.stop_text || t.stop_reason) + '.' }));
      }
      parts.push(box);
    });
    return el('div', { cls: 'trajectory' }, parts);
  }

  function analysisSection(rowsOf) {
    if (!rowsOf || !rowsOf.length) return null;
    var fields = [];
    rowsOf.forEach(function (r) {
      Object.keys(r).forEach(function (k) { if (fields.indexOf(k) < 0) fields.push(k); });
    });
    var head = el('tr', {}, fields.map(function (f) { return el('th', { text: f }); }));
    var body = rowsOf.map(function (r) {
      return el('tr', {}, fields.map(function (f) {
        var v = r[f];
        if (v !== null && typeof v === 'object') v = JSON.stringify(v);
        return el('td', { text: v === undefined || v === null ? '' : String(v) });
      }));
    });
    return el('div', { cls: 'analysis' }, [
      el('h4', { text: 'Program analysis' }),
      el('table', {}, [el('thead', {}, [head]), el('tbody', {}, body)]),
    ]);
  }

  function otherRuns(i) {
    if (meta.runs.length < 2) return null;
    var r = rows[i];
    var key = [r[C.domain], r[C.case_id], r[C.mode], r[C.sample]].join('\u0000');
    var others = (byKey[key] || []).filter(function (j) { return j !== i; });
    if (!others.length) return null;
    return el('p', {}, ['Same sample in other runs: '].concat(others.map(function (j) {
      var a = el('a', { href: '#', 'data-open': String(j),
        cls: 'o-' + rows[j][C.outcome], text: runName(rows[j][C.run]) + ': ' + rows[j][C.outcome] });
      return el('span', {}, [a, ' ']);
    })));
  }

  async function openSample(i) {
    state.open = i;
    // A link to this sample: report.html#sample-<i> opens it again.
    history.replaceState(null, '', '#sample-' + i);
    renderList();
    var box = document.getElementById('detail');
    box.hidden = false;
    box.textContent = 'loading…';
    var data = await inflate();
    if (state.open !== i) return;
    var d = data.samples[i];
    var r = rows[i];
    // A trial never retries: its chain would be one link that says nothing.
    var chain = d.trajectory ? null : el('div', { cls: 'chain' }, ['Retry chain: '].concat(
      d.attempts.map(function (a) {
        return el('span', { cls: 'o-' + a.outcome,
          text: (a.index + 1) + ': ' + a.outcome + (a.reason ? ' (' + a.reason + ')' : '') });
      })));
    var parts = [
      el('button', { type: 'button', cls: 'close', text: 'close' }),
      el('h3', { text: (meta.domains[r[C.domain]] || r[C.domain]) + ' · ' + r[C.case_id] +
        ' · ' + r[C.mode] + ' · sample ' + r[C.sample] }),
      el('dl', { cls: 'facts' }, [
        el('dt', { text: 'Run' }), el('dd', { text: runName(r[C.run]) + ' (' + d.model + ')' }),
        el('dt', { text: 'Gold' }), el('dd', { cls: 'gold', text: String(d.gold) }),
        el('dt', { text: 'Final answer' }), el('dd', { text: r[C.answer] || '—' }),
        el('dt', { text: 'Verdict' }), el('dd', { cls: 'o-' + r[C.outcome] + ' verdict', text: r[C.outcome] }),
      ]),
      chain,
      otherRuns(i),
      analysisSection(d.analysis),
      trajectorySection(data.paras, d.trajectory),
    ];
    d.attempts.forEach(function (a) {
      parts.push(d.trajectory ? trialResultSection(data.paras, a, d.trajectory)
        : attemptSection(data.paras, a, d.attempts.length));
    });
    box.textContent = '';
    parts.forEach(function (p) { if (p) box.appendChild(p); });
    box.scrollIntoView({ block: 'start' });
  }

  // -- wiring ----------------------------------------------------------------------
  selects.forEach(function (s) { fillSelect(s); s.addEventListener('change', applyFilters); });
  caseInput.addEventListener('input', applyFilters);
  document.getElementById('filters').addEventListener('submit', function (e) { e.preventDefault(); });
  document.getElementById('prev').addEventListener('click', function () { state.page--; renderList(); });
  document.getElementById('next').addEventListener('click', function () { state.page++; renderList(); });
  document.querySelector('#sample-list tbody').addEventListener('click', function (e) {
    var tr = e.target.closest('tr[data-i]');
    if (tr) openSample(Number(tr.getAttribute('data-i')));
  });
  document.getElementById('detail').addEventListener('click', function (e) {
    if (e.target.classList.contains('close')) {
      state.open = -1;
      e.currentTarget.hidden = true;
      history.replaceState(null, '', location.pathname + location.search);
      renderList();
      return;
    }
    var link = e.target.closest('a[data-open]');
    if (link) { e.preventDefault(); openSample(Number(link.getAttribute('data-open'))); }
  });
  applyFilters();
  var linked = /^#sample-(\d+)$/.exec(location.hash);
  if (linked && Number(linked[1]) < rows.length) openSample(Number(linked[1]));
  window.__reportReady = performance.now();
  document.body.setAttribute('data-ready', '1');
  // Inflate the details once the page is up, so opening a sample is instant.
  setTimeout(function () { inflate().catch(function (err) { console.warn(err); }); }, 0);
})();
