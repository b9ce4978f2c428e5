"""The scorer comparison as text: the same final states scored two ways, the harness's
judging and the paper's metrics, and DAR's (their scorer, both behaviours), side by side
per domain × mode: for a run imported from Harbor (DAR's view in ``harbor.jsonl``) and
for a run made with ``eval --protocol dar`` (DAR's verifier on each trial's final /app,
in its record's ``agent.dar``).

The rows are scoring's (``scoring.dar_readings``), which results.json, ``score --json``
and the report carry too; ``score --dar-rules`` prints this table, and ``score`` prints
it for every dar-protocol run; docs/harbor.md and docs/agents.md explain every
difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...scoring import dar_readings
from ...scoring.scores import RunScores
from ...store.run import Run
from .importer import not_imported

ScorerRow = dar_readings.ScorerRow
overall = dar_readings.overall


def dar_view(run_dir: str | Path, run: Run) -> list[dict[str, Any]]:
    """What DAR's scorer reads of each trial of a run (rows of ``harbor.jsonl``'s shape);
    a run that holds no DAR view is an error saying which runs do."""
    viewed = dar_readings.viewed_trials(run)
    if viewed is None:
        raise not_imported(run_dir)
    return [
        {"key": list(v.key), "expected": v.trial.expected, "got": v.trial.got,
         "exception": v.trial.exception, "missing_stdout": v.trial.missing_stdout}
        for v in viewed
    ]  # fmt: skip


def scorer_rows(run_dir: str | Path, scores: RunScores) -> list[ScorerRow]:
    """The run's DAR readings per domain × mode (``scoring.dar_readings``); a run that
    holds no DAR view is an error."""
    rows = dar_readings.scorer_rows(scores)
    if rows is None:
        raise not_imported(run_dir)
    return rows


def render_scorer_table(rows: Sequence[ScorerRow], *, dar_run: bool = False) -> str:
    """The paper's and DAR's scores side by side: the table ``score --dar-rules`` prints
    (``dar_run``: a dar-protocol run's, whose first figure is the harness reader's of
    DAR's ``Answer:`` line)."""
    ours = "harness (point)" if dar_run else "paper (point)"
    header = ("domain", "mode", "metric", "n", ours, "DAR", "DAR strict", "DAR classes")
    lines = [header]
    for r in rows:
        paper = f"{100 * r.paper:.1f}" if r.paper is not None else "-"
        classes = ", ".join(repr(c) for c in r.dar_classes) if r.dar_classes is not None else ""
        lines.append(
            (
                r.domain,
                r.mode,
                r.metric,
                str(r.n),
                paper,
                f"{100 * r.value(r.dar_default):.1f}",
                f"{100 * r.value(r.dar_strict):.1f}",
                classes,
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    ]
    text.insert(1, "  ".join("-" * w for w in widths))
    text.append(
        f"DAR overall accuracy (exact matches / trials): {100 * overall(rows, False):.1f} "
        f"(strict {100 * overall(rows, True):.1f})"
    )
    read = "harness: the harness reader of the Answer: line" if dar_run else "paper"
    text.append(
        f"{read}: the harness's judging (±$1 after rounding; no answer = abstention, never "
        "correct); DAR: their scorer (truncation, exact strings; no answer = '' vs '' = "
        "correct); DAR strict: their --errors-as-incorrect."
    )
    return "\n".join(text) + "\n"


__all__ = ["ScorerRow", "dar_view", "overall", "render_scorer_table", "scorer_rows"]
