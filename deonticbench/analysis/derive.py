"""Reports derived instead of analysed: a program that is another program of the same
analysis with upstream's leading lines taken off.

Under ``--protocol paper`` a reference run's attempt is the case's reference program as
upstream runs it: upstream's own directive that prints the gold label kept on line 1
(the harness's preparation removes it), and for housing and uscis the paper reader's
neutral first line before it.  ``analyze`` analyses that attempt and the reference as
the harness runs it, which is the same text without those lines: the longer program's
report, those lines' directives and runs left out and every line number moved back,
is the shorter program's report.

Only where that holds by construction is a report derived; everything else is analysed
as before (``analyse_deriving`` falls back to the analyser whenever a check fails):

* the texts: the longer program is a prefix of whole lines followed by the shorter one,
  each line of the prefix the paper reader's neutral first line or, all together,
  upstream's label directives as SWI-Prolog's reader finds them
  (``reading.is_upstream_prefix``, reading's own rule, decides);
  the shorter program does not start with what only line 1 can hold (a script line or
  a byte-order mark) and states no module header (only a file's first term is one);
* the longer program's report: each directive on the prefix's lines is ``true`` or a
  ``format/2`` call of a format string with only ``~w``, ``~a`` and ``~n`` and atomic
  arguments (SWI-Prolog's printed goal, matched whole: output only, no goal called, no
  hook, no state changed), each ran first (plain directives run in file order) and
  succeeded with the proof such a goal has; nothing else in the report sits on the
  prefix's lines; no goal met the time limit (the budget of a program is shared by its
  runs); and the analysed file is named only where a load message cites one of its
  lines as ``FILE:LINE`` (moved back too), the shorter program's text never naming it.

``tests/analysis/test_analysis_derive.py`` compares, field by field, every derived
report of the hard reference programs of airline, housing and sara_numeric with the
report the analyser gives the program itself, and shows each check refusing what it
guards against.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..reading import is_upstream_prefix
from ..solver import Solver
from .engine import AnalyserMode, analyse_many

_MAX_PREFIX_LINES = 4
"""The neutral line and a label directive (upstream's span one or two lines)."""
_LINE_ONE_ONLY = ("#!", "\ufeff")
"""What SWI-Prolog reads differently on line 1: a script line, a byte-order mark."""
_MODULE_HEADER = re.compile(r"(?<![\w$])module\s*\(")
_ATOMIC = r'(?:"[^"\\~]*"|-?\d+(?:\.\d+)?|[a-z]\w*)'
_PRINT_GOAL = re.compile(rf'format\("(?:[^"\\~]|~[wan])*",\[{_ATOMIC}(?:,{_ATOMIC})*\]\)')
"""A label directive's goal as the analyser prints it (quoted): output only."""

_TOP_KEYS = frozenset({"index", "analyser", "static", "runs"})
_STATIC_KEYS = frozenset(
    {"defined", "called", "undefined", "syntax_errors", "warnings", "signatures",
     "fail_rules", "directives", "constants", "clauses"}
)  # fmt: skip
_RUN_KEYS = frozenset(
    {"line", "kind", "goal", "output", "status", "error", "undefined", "proof", "nodes",
     "truncated"}
)  # fmt: skip
_LINED = {"defined": "line", "fail_rules": "line", "syntax_errors": "line",
          "warnings": "line", "directives": "line", "clauses": "l"}  # fmt: skip
"""Every static field whose entries carry a line of the program, and its key."""
_FILE_NAMED = re.compile(r"target_\d+\.pl")
"""The analysed file's name (the analyser's ``select_target``), as a message shows it."""


@dataclass(frozen=True)
class Derivation:
    """The shorter program's report is the ``longer`` program's with its first
    ``lines`` lines left out."""

    longer: str
    lines: int


def prefix_lines(longer: str, shorter: str) -> int | None:
    """How many whole lines ``longer`` has before ``shorter``, when they are only the
    neutral line and label directives and the shorter program reads alike after them;
    None otherwise."""
    if not shorter or len(shorter) >= len(longer) or not longer.endswith(shorter):
        return None
    if shorter.startswith(_LINE_ONE_ONLY) or _MODULE_HEADER.search(shorter):
        return None
    if _FILE_NAMED.search(shorter):
        return None  # a name of its own that a message could show as the file's
    prefix = longer[: len(longer) - len(shorter)]
    if not prefix.endswith("\n") or "\r" in prefix:
        return None
    return prefix.count("\n") if is_upstream_prefix(prefix) else None


def find_derivations(programs: Sequence[str]) -> dict[str, Derivation]:
    """The programs whose report can be derived from another program's of
    ``programs`` (canonical texts); a longer program is always analysed itself."""
    known = set(programs)
    found: dict[str, Derivation] = {}
    for longer in programs:
        start = 0
        for _ in range(_MAX_PREFIX_LINES):
            start = longer.find("\n", start) + 1
            if start == 0:
                break
            shorter = longer[start:]
            if shorter in known and shorter not in found:
                lines = prefix_lines(longer, shorter)
                if lines is not None:
                    found[shorter] = Derivation(longer, lines)
                    break
    return {s: d for s, d in found.items() if d.longer not in found}


def derive_report(
    report: dict[str, Any], lines: int, printed: str | None = None
) -> dict[str, Any] | None:
    """The report of the program ``report``'s program is without its first ``lines``
    lines (see the module docstring), or None when a check fails.  ``printed``: the
    report as the analyser printed it, when at hand (spares serialising it)."""
    if set(report) != _TOP_KEYS or set(report["static"]) != _STATIC_KEYS:
        return None
    runs = report["runs"]
    if any(set(run) != _RUN_KEYS or run["status"] == "limit" for run in runs):
        return None
    directives = report["static"]["directives"]
    leading = [d for d in directives if _on_prefix(d["line"], lines)]
    if leading != directives[: len(leading)] or not _prefix_runs(runs, leading):
        return None
    # A copy of what changes only: the longer program's report stays as it is, and
    # whatever carries no line (most proof leaves, the static fields without lines) is
    # shared by both reports, which nothing changes once made.  Parsing the printed text
    # again instead copied a run's 8 MB of reports for 161 programs of hard.
    text = printed if printed is not None else json.dumps(report)
    static = dict(report["static"])
    for field in _LINED:
        entries = static[field][len(leading) :] if field == "directives" else static[field]
        static[field] = [dict(entry) for entry in entries]
    cited = _shift_messages(static, report["index"], lines)
    if cited is None or cited != len(_FILE_NAMED.findall(text)):
        return None  # a line on the prefix, or the file named outside a load message
    for field, key in _LINED.items():
        if not all(_shift(entry, key, lines) for entry in static[field]):
            return None
    derived_runs: list[dict[str, Any]] = []
    for run in runs[len(leading) :]:
        proof = _shifted_proof(run["proof"], lines)
        moved = {**run, "proof": proof}
        if proof is None or not _shift(moved, "line", lines):
            return None
        derived_runs.append(moved)
    return {**report, "static": static, "runs": derived_runs}


def _shift_messages(static: dict[str, Any], index: Any, lines: int) -> int | None:
    """Move back the lines the load messages cite as ``FILE:LINE`` of the analysed file
    (``target_INDEX.pl``: SWI-Prolog words a discontiguous clause's earlier definition
    so); how many were cited, or None when one is on the prefix."""
    cited = re.compile(rf"(target_{int(index)}\.pl:)(\d+)\b")
    count = 0
    for entry in (*static["warnings"], *static["syntax_errors"]):
        message = entry.get("message")
        if not isinstance(message, str):
            continue
        found = [int(m.group(2)) for m in cited.finditer(message)]
        if any(line <= lines for line in found):
            return None
        count += len(found)
        if found:
            entry["message"] = cited.sub(
                lambda m: f"{m.group(1)}{int(m.group(2)) - lines}", message
            )
    return count


def _on_prefix(line: Any, lines: int) -> bool:
    return isinstance(line, int) and line <= lines


def _prefix_directive(directive: dict[str, Any]) -> bool:
    goal = directive.get("goal")
    return directive.get("kind") == "directive" and (
        goal == "true" or (isinstance(goal, str) and _PRINT_GOAL.fullmatch(goal) is not None)
    )


def _prefix_runs(runs: list[dict[str, Any]], leading: list[dict[str, Any]]) -> bool:
    """The prefix's directives are print goals that ran first, in order, and succeeded
    as such goals do."""
    if len(runs) < len(leading) or not all(_prefix_directive(d) for d in leading):
        return False
    for run, directive in zip(runs, leading, strict=False):
        proof = [] if directive["goal"] == "true" else [{"k": "builtin", "g": directive["goal"]}]
        expected = {"line": directive["line"], "kind": "directive", "goal": directive["goal"],
                    "status": True, "error": None, "undefined": None, "proof": proof,
                    "nodes": len(proof), "truncated": False}  # fmt: skip
        if any(run[key] != value for key, value in expected.items()):
            return False
    return True


def _shift(entry: dict[str, Any], key: str, lines: int) -> bool:
    """Move ``entry[key]`` back by ``lines``; False when it sits on the prefix."""
    line = entry[key]
    if line is None:
        return True
    if not isinstance(line, int) or line <= lines:
        return False
    entry[key] = line - lines
    return True


def _shifted_proof(nodes: list[dict[str, Any]], lines: int) -> list[dict[str, Any]] | None:
    """The proof with every node's clause line (``l``) moved back, at any depth (``c``):
    a node with a line or children is copied, any other is shared; None when a line
    sits on the prefix."""
    shifted: list[dict[str, Any]] = []
    stack: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = [(nodes, shifted)]
    while stack:
        source, target = stack.pop()
        for node in source:
            children = node.get("c")
            if children or "l" in node:
                node = dict(node)
                if "l" in node and not _shift(node, "l", lines):
                    return None
                if children:
                    inner: list[dict[str, Any]] = []
                    node["c"] = inner
                    stack.append((children, inner))
            target.append(node)
    return shifted


def analyse_deriving(
    programs: Sequence[str],
    mode: AnalyserMode,
    solver: Solver,
    on_job: Callable[[dict[int, dict[str, Any]]], None] | None = None,
    printed: dict[int, str] | None = None,
    derived_from: dict[int, Derivation] | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """``engine.analyse_many`` (same arguments, reports in order), deriving what
    ``find_derivations`` and ``derive_report`` allow and analysing the rest, failed
    derivations included; and how many reports were derived.  A derived report is
    given to ``on_job`` with the job that analysed its longer program.  ``printed``
    receives the analysed reports' JSON lines (a derived report has none) and
    ``derived_from``, when given, each derived report's ``Derivation``, by index."""
    derivations = find_derivations(programs)
    at = {program: index for index, program in enumerate(programs)}
    todo = [index for index, program in enumerate(programs) if program not in derivations]
    shorter: dict[int, list[tuple[int, int]]] = {}
    for text, derivation in derivations.items():
        shorter.setdefault(at[derivation.longer], []).append((at[text], derivation.lines))
    lines_printed: dict[int, str] = {}  # by position in todo
    derived: dict[int, dict[str, Any]] = {}

    def derive(position: int, report: dict[str, Any]) -> dict[int, dict[str, Any]]:
        made: dict[int, dict[str, Any]] = {}
        for index, lines in shorter.get(todo[position], ()):
            if index not in derived:
                report_of = derive_report(report, lines, lines_printed.get(position))
                if report_of is not None:
                    derived[index] = made[index] = report_of
        return made

    def hook(found: dict[int, dict[str, Any]]) -> None:
        batch = {todo[position]: report for position, report in found.items()}
        for position, report in found.items():
            batch.update(derive(position, report))
        if on_job is not None:
            on_job(batch)

    reports = analyse_many([programs[i] for i in todo], mode, solver, on_job=hook,
                           printed=lines_printed)  # fmt: skip
    results = dict(zip(todo, reports, strict=True))
    for position, report in enumerate(reports):  # jobs retried alone: no hook
        results.update(derive(position, report))
    results.update(derived)
    own = {todo[position]: line for position, line in lines_printed.items()}
    _analyse_failed(programs, [i for i in range(len(programs)) if i not in results],
                    mode, solver, results, own, on_job)  # fmt: skip
    if printed is not None:
        printed.update(own)
    if derived_from is not None:
        derived_from.update({index: derivations[programs[index]] for index in derived})
    return [results[index] for index in range(len(programs))], len(derived)


def _analyse_failed(
    programs: Sequence[str],
    failed: list[int],
    mode: AnalyserMode,
    solver: Solver,
    results: dict[int, dict[str, Any]],
    printed: dict[int, str],
    on_job: Callable[[dict[int, dict[str, Any]]], None] | None,
) -> None:
    """Analyse the programs whose report could not be derived, as any other."""
    if not failed:
        return
    hook = None
    if on_job is not None:
        report_to = on_job

        def hook(found: dict[int, dict[str, Any]]) -> None:
            report_to({failed[position]: report for position, report in found.items()})

    lines: dict[int, str] = {}
    reports = analyse_many([programs[i] for i in failed], mode, solver, on_job=hook,
                           printed=lines)  # fmt: skip
    results.update(zip(failed, reports, strict=True))
    printed.update({failed[position]: line for position, line in lines.items()})
