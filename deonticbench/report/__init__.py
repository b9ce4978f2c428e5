"""One self-contained HTML file for one or more scored runs: ``report.html``.

No server, no network: the styles and the script are inlined from
``deonticbench/resources/report/``, the figures are embedded PNGs, and the data is in
the page.  The page has

* the paper's Table 2 layout with bootstrap intervals (first and final stage when the
  run retried), and the paper's published row beside it when the model is one the paper
  reports;
* the figures (``figures.draw_figure``: the metric with its interval beside the outcome
  decomposition, every run in one figure);
* for agentic runs, what each setting cost (the usage table) and the format of its
  trials (turns by kind, first-turn stops, programs run, answers left);
* paired differences when several runs are given;
* a sample browser: a small index (domain, case, mode, sample, outcome, abstain reason,
  failure category) that is filtered in the page, and the details of every sample
  (prompts as sent, responses, programs as run, SWI-Prolog's output, answer, verdict,
  gold, analysis) as gzip-compressed JSON that the browser inflates after first paint.

Prompt text is interned by paragraph (statutes and exemplars repeat across thousands of
prompts), so a whole-split run stays a few megabytes; see benchmarks/report.py.
"""

from __future__ import annotations

import base64
import gzip
import html
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._paths import RESOURCES
from ..data.domains import DISPLAY_ORDER, DOMAINS
from ..errors import DeonticBenchError
from ..prompting.render import Prompt, prompt_hash
from ..scoring.agent_format import format_rows, format_table
from ..scoring.comparisons import Comparison, comparisons_note
from ..scoring.encoding import STAGES
from ..scoring.figures import figure_png_and_modes
from ..scoring.notes import protocol_notes
from ..scoring.paper import match_model
from ..scoring.rereading import sensitivity_table
from ..scoring.results import estimated_cost, run_totals
from ..scoring.scores import RunScores
from ..scoring.tables import (
    Table,
    against_paper,
    comparison_table,
    table2,
    upstream_bootstrap_table,
)
from ..scoring.usage import usage_rows, usage_table
from ..store.record import STOP_EXPLANATIONS, Attempt, Record
from ..store.trajectory import read_trajectory
from ..vocabulary.chat import Message
from ..vocabulary.modes import ALL_MODES
from ._analysis_section import ANALYSIS_FILE, load_analysis
from ._prompt_book import prompt_book

if TYPE_CHECKING:
    from ..reliability.evaluate import SignalReport
    from ..scoring.rereading import SensitivityRow

REPORT_FILE = "report.html"
_RESOURCES = RESOURCES / "report"

INDEX_COLUMNS = (
    "run",
    "domain",
    "case_id",
    "mode",
    "sample",
    "outcome",
    "first_outcome",
    "reason",
    "attempts",
    "category",
    "gold",
    "answer",
)
"""One row per sample in the page's index, in this column order."""


class ReportWriteError(DeonticBenchError):
    pass


# -- tables ----------------------------------------------------------------------------


def _cell_html(text: str) -> str:
    parts = text.split()
    if len(parts) >= 3 and parts[1].startswith("+") and parts[2].startswith("-"):
        rest = " ".join(parts[3:])
        tail = f" {html.escape(rest)}" if rest else ""
        return (
            f'{html.escape(parts[0])} <span class="ci">{html.escape(parts[1])} '
            f"{html.escape(parts[2])}</span>{tail}"
        )
    return html.escape(text)


def table_html(table: Table, table_id: str, *, paper_rows: bool = False) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.headers)
    body = []
    for row in table.rows:
        cls = ' class="paper"' if paper_rows and row[0].startswith("paper") else ""
        cells = "".join(f"<td>{_cell_html(c)}</td>" for c in row)
        body.append(f"<tr{cls}>{cells}</tr>")
    caption = f"<caption>{html.escape(table.title)}</caption>" if table.title else ""
    return (
        f'<table id="{table_id}" class="scores">{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def _figure_html(scores: Sequence[RunScores]) -> str:
    stages = [st for st in STAGES if any(st in s.stages for s in scores)]
    out = []
    for stage in stages:
        png, modes = figure_png_and_modes(scores, stage)
        data = base64.b64encode(png).decode("ascii")
        # The modes each panel's axis shows, read back from the drawn figure, so what the
        # figure holds can be checked without its pixels; the alt text says it in words.
        shown = html.escape(_dumps(modes), quote=True)
        alt = html.escape(
            f"scores, {stage} attempt: "
            + "; ".join(f"{domain}: {', '.join(labels)}" for domain, labels in modes.items()),
            quote=True,
        )
        out.append(
            f'<figure data-stage="{stage}" data-modes="{shown}">'
            f'<img alt="{alt}" src="data:image/png;base64,{data}">'
            f"<figcaption>{stage} attempt. Top: the table's metric with its bootstrap 95% "
            "interval. Bottom: correct (run colour), wrong (pink) and abstained (hatched) "
            "shares of the samples. A mode that was not run is left out.</figcaption></figure>"
        )
    return "".join(out)


# -- samples ---------------------------------------------------------------------------


class _Interner:
    """Paragraphs of prompt text, each stored once; a text is a list of indices."""

    def __init__(self) -> None:
        self.paras: list[str] = []
        self._index: dict[str, int] = {}

    def text(self, text: str) -> list[int]:
        out = []
        for para in text.split("\n\n"):
            index = self._index.get(para)
            if index is None:
                index = len(self.paras)
                self._index[para] = index
                self.paras.append(para)
            out.append(index)
        return out


def _value(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _finite(obj: Any) -> Any:
    """JSON has no NaN or infinity (the browser's JSON.parse rejects them): null instead.
    Analysis rows come from another tool, so every value is checked, not only ours."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def _attempt_json(attempt: Attempt, prompt: Any, interner: _Interner) -> dict[str, Any]:
    execution = attempt.execution or None
    item: dict[str, Any] = {
        "index": attempt.index,
        "prompt_hash": attempt.prompt_hash,
        "response": attempt.response,
        "error": attempt.error,
        "program": attempt.program,
        "repaired": attempt.repaired,
        "answer": _value(attempt.answer),
        "reason": attempt.abstain_reason,
        "outcome": attempt.outcome,
        "tokens_in": attempt.tokens_in,
        "tokens_out": attempt.tokens_out,
        "latency_s": attempt.latency_s,
        "cached": attempt.cached,
    }
    if execution is not None:
        item["execution"] = {k: _value(v) for k, v in execution.items()}
    if prompt is not None:
        item["prompt"] = [[m.role, interner.text(m.content)] for m in prompt.messages]
        item["prompt_template"] = prompt.template
        item["prompt_verified"] = prompt.prompt_hash == attempt.prompt_hash
        item["prompt_rebuilt_hash"] = prompt.prompt_hash
    return item


def _answer_text(answer: object) -> str:
    """How the list shows an answer: 949.0 as 949, a class as itself, none as blank."""
    if answer is None:
        return ""
    if isinstance(answer, float) and math.isfinite(answer) and answer.is_integer():
        return str(int(answer))
    return str(_value(answer))


def _category(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    final = [r for r in rows if r.get("stage") == "final"]
    chosen = (final or rows)[0]
    return str(chosen.get("category") or "")


def _samples(
    scores: Sequence[RunScores], data_dir: Path | None
) -> tuple[list[list[Any]], dict[str, Any], list[str]]:
    index: list[list[Any]] = []
    details: list[dict[str, Any]] = []
    interner = _Interner()
    notes: list[str] = []
    domain_order = {d: i for i, d in enumerate(DISPLAY_ORDER)}
    mode_order = {m: i for i, m in enumerate(ALL_MODES)}
    for run_index, s in enumerate(scores):
        run = s.run
        book = prompt_book(run.config, run.records, data_dir)
        if book.problem:
            notes.append(f"{run.name}: {book.problem}")
        analysis = load_analysis(run.path / ANALYSIS_FILE)
        if analysis.problem:
            notes.append(f"{run.name}: {analysis.problem}")
        records: list[Record] = sorted(
            run.records,
            key=lambda r: (
                domain_order.get(r.domain, 99),
                mode_order.get(r.mode, 9),
                r.case_id,
                r.sample,
            ),
        )
        for record in records:
            rows = analysis.rows.get(record.key, [])
            trajectory: dict[str, Any] | None = None
            if record.agent is not None:
                trajectory, first_prompt = _trajectory_json(run.path, record, interner)
                prompts: list[Prompt | None] = [first_prompt] * len(record.attempts)
            else:
                prompts = book.chain(record)
            final = record.final
            index.append(
                [
                    run_index,
                    record.domain,
                    record.case_id,
                    record.mode,
                    record.sample,
                    final.outcome,
                    # An agentic trial is judged once, on the program it left: no first
                    # attempt apart from the final one, no retries to count.
                    "" if record.agent is not None else record.first.outcome,
                    final.abstain_reason or "",
                    "" if record.agent is not None else len(record.attempts),
                    _category(rows),
                    str(record.gold),
                    _answer_text(final.answer),
                ]
            )
            details.append(
                {
                    "gold": record.gold,
                    "model": record.model,
                    "attempts": [
                        _attempt_json(a, p, interner)
                        for a, p in zip(record.attempts, prompts, strict=True)
                    ],
                    "analysis": rows,
                    **({"trajectory": trajectory} if trajectory is not None else {}),
                }
            )
    return index, {"paras": interner.paras, "samples": details}, notes


def _trajectory_json(
    run_dir: Path, record: Record, interner: _Interner
) -> tuple[dict[str, Any], Prompt | None]:
    """An agentic sample's trajectory for the sample browser (step by step: the message,
    each tool call and its observation, token counts), and its first prompt (the system
    message and the instruction, checked against the record's hash)."""
    info = record.agent
    assert info is not None
    facts: dict[str, Any] = {
        "tool_set": info.tool_set,
        "turns": info.turns,
        "tool_calls": info.tool_calls,
        "stop_reason": info.stop_reason,
        "stop_text": STOP_EXPLANATIONS.get(info.stop_reason, info.stop_reason),
        "wall_s": info.wall_s,
        "cost_usd": info.cost_usd,
    }
    if info.trajectory is None:
        return {**facts, "problem": "no trajectory was saved"}, None
    try:
        atif = read_trajectory(run_dir, info.trajectory, info.trajectory_sha256)
    except DeonticBenchError as exc:
        return {**facts, "problem": str(exc)}, None
    steps = [s for s in atif["steps"] if isinstance(s, dict)]
    shown = []
    for step in steps:
        if step.get("source") != "agent":
            continue
        results = {
            r.get("source_call_id"): str(r.get("content") or "")
            for r in (step.get("observation") or {}).get("results", [])
        }
        metrics = step.get("metrics") or {}
        shown.append(
            {
                "message": interner.text(str(step.get("message") or "")),
                "calls": [
                    [
                        str(c.get("function_name")),
                        json.dumps(c.get("arguments"), ensure_ascii=False),
                        interner.text(results.get(c.get("tool_call_id"), "")),
                    ]
                    for c in step.get("tool_calls") or []
                ],
                "tokens": [metrics.get("prompt_tokens"), metrics.get("completion_tokens")],
                "cached": bool((step.get("extra") or {}).get("cached")),
            }
        )
    first = [s for s in steps[:2] if s.get("source") in ("system", "user")]
    prompt = None
    if len(first) == 2:
        messages = tuple(
            Message(role=str(s["source"]), content=str(s.get("message") or ""))  # type: ignore[arg-type]
            for s in first
        )
        prompt = Prompt(messages, f"{record.domain}/{record.mode}", "", prompt_hash(messages))
    return {**facts, "steps": shown}, prompt


# -- the page --------------------------------------------------------------------------


def _dumps(obj: Any) -> str:
    """Compact JSON that is valid UTF-8 and valid for JSON.parse.

    A model's reply may hold a lone surrogate (records keep it losslessly); UTF-8 cannot
    carry one, so such a document is written with ASCII escapes, which JSON.parse turns
    back into the same string."""
    text = json.dumps(_finite(obj), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(_finite(obj), ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text


def _json_in_script(obj: Any) -> str:
    # Inside <script>, "</" could end the element early; "\u2028" breaks old parsers.
    text = _dumps(obj)
    return text.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _resource(name: str) -> str:
    return (_RESOURCES / name).read_text(encoding="utf-8")


def _runs_html(scores: Sequence[RunScores]) -> str:
    rows = []
    for s in scores:
        t = run_totals(s.run)
        cost = estimated_cost(s.run.model, t)
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(v))}</td>"
                for v in (
                    s.run.name,
                    s.run.model,
                    s.run.protocol,
                    s.run.split or "?",
                    len(s.run.records),
                    t.requests,
                    f"{t.tokens_in:,} / {t.tokens_out:,}",
                    "—" if cost is None else f"${cost['usd']:,.2f}",
                    ", ".join(s.stages),
                )
            )
            + "</tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "Run",
            "Model",
            "Protocol",
            "Split",
            "Samples",
            "Requests",
            "Tokens in / out",
            "Est. cost",
            "Stages",
        )
    )
    return f'<table id="runs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _agents_html(scores: Sequence[RunScores]) -> str | None:
    """The cost and the format of each agentic setting; None when no run has one."""
    formats = format_rows(scores)
    if not formats:
        return None
    return (
        '<section id="agents"><h2>Agentic trials: cost and format</h2>'
        + table_html(usage_table(usage_rows(scores)), "usage-table")
        + table_html(format_table(formats), "format-table")
        + "</section>"
    )


def _paper_sections(scores: Sequence[RunScores]) -> list[str]:
    """Beside the paper (the runs of a model it reports, with a note where a split or a
    protocol makes its cells incomparable), and upstream's own statistics of each run's
    prompted modes (``upstream_bootstrap``, as its ``bootstrap_outputs.py`` prints them)."""
    out: list[str] = []
    matched = [s for s in scores if match_model(s.run.model)]
    if matched:
        other_split = [s.run.name for s in matched if s.run.split not in (None, "hard")]
        caution = (
            '<p class="muted">The paper\'s rows are on the hard split; '
            + html.escape(", ".join(other_split))
            + " ran on another split, so the numbers are not comparable.</p>"
            if other_split
            else ""
        )
        caution += "".join(
            f'<p class="muted protocol-note">{html.escape(note)}</p>'
            for note in protocol_notes([(s.run.name, s.run.protocol) for s in matched])
        )
        out.append(
            '<section id="paper"><h2>Beside the paper</h2>'
            + caution
            + table_html(against_paper(matched), "paper-table", paper_rows=True)
            + "</section>"
        )
    table = upstream_bootstrap_table(scores)
    if table.rows:
        out.append(
            '<section id="upstream-bootstrap"><h2>Upstream\'s statistics</h2>'
            '<p class="muted">Accuracy, abstention and wrong rates with 95% intervals as '
            "upstream's bootstrap_outputs.py computes them (1,000 replicates, seed 42): "
            "beside the paper's B.3 metrics above, not instead of them.</p>"
            + table_html(table, "upstream-bootstrap-table")
            + "</section>"
        )
    return out


def _comparison_section(comparisons: Sequence[Comparison]) -> str:
    note = comparisons_note(comparisons)
    return (
        '<section id="comparison"><h2>Paired differences</h2>'
        + (f'<p class="muted">{html.escape(note)}</p>' if note else "")
        + table_html(comparison_table(comparisons), "comparison-table")
        + "</section>"
    )


def _sensitivity_section(sensitivity: Sequence[tuple[str, SensitivityRow]]) -> str:
    return (
        '<section id="reader-sensitivity"><h2>How much the figures depend on the reader'
        '</h2><p class="muted">The same stored replies read by the harness\'s reader and '
        "by the paper's (upstream's scripts'): a figure that moves far depends on how its "
        "replies are read as much as on the model.</p>"
        + table_html(sensitivity_table(sensitivity), "sensitivity-table")
        + "</section>"
    )


def build_report(
    scores: Sequence[RunScores],
    comparisons: Sequence[Comparison] = (),
    *,
    data_dir: Path | None = None,
    reliability: Sequence[SignalReport] = (),
    sensitivity: Sequence[tuple[str, SensitivityRow]] = (),
) -> str:
    """The HTML text of the report for ``scores`` (one or more scored runs); with
    ``reliability`` (``deonticbench.reliability`` reports), a Reliability page too."""
    sections: list[str] = []
    sections.append(f'<section id="overview"><h2>Runs</h2>{_runs_html(scores)}</section>')
    sections.append(
        '<section id="scores"><h2>Scores (Table 2 layout)</h2>'
        + table_html(table2(scores), "table2")
        + "</section>"
    )
    sections += _paper_sections(scores)
    agents = _agents_html(scores)
    if agents is not None:
        sections.append(agents)
    if comparisons:
        sections.append(_comparison_section(comparisons))
    if sensitivity:
        sections.append(_sensitivity_section(sensitivity))
    if any(s.groups for s in scores):
        sections.append(f'<section id="figures"><h2>Figures</h2>{_figure_html(scores)}</section>')
    if reliability:
        from ..reliability.page import reliability_html  # start-up: only for a Reliability page

        sections.append(reliability_html(reliability, lambda t, i: table_html(t, i)))
    index, details, sample_notes = _samples(scores, data_dir)
    notes = [f"{s.run.name}: {n}" for s in scores for n in s.notes] + sample_notes
    if notes:
        items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        sections.insert(1, f'<section id="notes"><h2>Notes</h2><ul>{items}</ul></section>')
    meta = {
        "runs": [{"name": s.run.name, "model": s.run.model} for s in scores],
        "columns": list(INDEX_COLUMNS),
        "domains": {name: d.display_name for name, d in DOMAINS.items()},
    }
    text = _dumps(details)
    packed = base64.b64encode(gzip.compress(text.encode("utf-8"), 6, mtime=0)).decode("ascii")
    title = "DeonticBench report: " + ", ".join(s.run.model for s in scores)
    page = _resource("report.html")
    replacements = {
        "{{TITLE}}": html.escape(title),
        "{{CSS}}": _resource("report.css"),
        "{{BODY}}": "\n".join(sections),
        "{{META}}": _json_in_script(meta),
        "{{INDEX}}": _json_in_script(index),
        "{{DETAILS}}": packed,
        "{{JS}}": _resource("report.js"),
    }
    # One pass, so a placeholder-like text inside the data is never replaced.
    out: list[str] = []
    rest = page
    while True:
        start = rest.find("{{")
        if start < 0:
            out.append(rest)
            break
        end = rest.find("}}", start)
        key = rest[start : end + 2]
        out.append(rest[:start])
        out.append(replacements.get(key, key))
        rest = rest[end + 2 :]
    return "".join(out)


def write_report(
    scores: Sequence[RunScores],
    path: str | os.PathLike[str],
    comparisons: Sequence[Comparison] = (),
    *,
    data_dir: Path | None = None,
    reliability: Sequence[SignalReport] = (),
    sensitivity: Sequence[tuple[str, SensitivityRow]] = (),
) -> Path:
    """Write ``build_report`` to ``path`` (atomically) and return the path."""
    target = Path(path)
    text = build_report(
        scores, comparisons, data_dir=data_dir, reliability=reliability, sensitivity=sensitivity
    )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except OSError as exc:
        raise ReportWriteError(
            f"Cannot write the report to {target}: {exc.strerror or exc}."
        ) from None
    return target


__all__ = ["REPORT_FILE", "build_report", "write_report"]
