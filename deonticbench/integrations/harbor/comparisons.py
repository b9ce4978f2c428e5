"""The scorer comparison: the same final states scored two ways, the harness's judging
and the paper's metrics, and DAR's (their scorer, both behaviours), side by side per
domain × mode: for a run imported from Harbor (DAR's view in ``harbor.jsonl``) and for
a run made with ``eval --protocol dar`` (DAR's verifier on each trial's final /app, in
its record's ``agent.dar``).

``score --dar-rules`` prints this table, and ``score`` prints it for every dar-protocol
run; docs/harbor.md and docs/agents.md explain every difference.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...data.domains import DISPLAY_ORDER, DOMAINS
from ...scoring.scores import RunScores
from ...store.run import Run
from ...vocabulary.modes import mode_rank
from ...vocabulary.protocols import DAR_PROTOCOL
from . import dar
from .importer import read_dar_view


@dataclass(frozen=True)
class ScorerRow:
    domain: str
    mode: str
    metric: str
    """accuracy or macro_f1: the domain's metric (DAR's too, for its four datasets)."""
    n: int
    paper: float | None
    """The paper's point estimate from the harness's scoring (None: not scored)."""
    dar_default: dar.DarScore
    dar_strict: dar.DarScore
    """``--errors-as-incorrect``."""

    def value(self, score: dar.DarScore) -> float:
        return score.accuracy if self.metric == "accuracy" else score.macro_f1


def dar_view(run_dir: str | Path, run: Run) -> list[dict[str, Any]]:
    """What DAR's scorer reads of each trial of a run (rows of ``harbor.jsonl``'s shape):
    the import's file, or for a dar-protocol run its records' ``agent.dar``, where
    test.sh always ran (it may have printed nothing: ``("", "")``)."""
    if run.protocol != DAR_PROTOCOL:
        return read_dar_view(run_dir)
    rows = []
    for record in run.records:
        verdict = record.agent.dar if record.agent is not None else None
        if verdict is None:
            continue
        expected, got = dar.read_verifier_output(str(verdict.get("stdout") or ""))
        exception = verdict.get("exception")
        rows.append(
            {"key": list(record.key), "expected": expected, "got": got,
             "exception": exception, "missing_stdout": False}
        )  # fmt: skip
    return rows


def scorer_rows(run_dir: str | Path, scores: RunScores) -> list[ScorerRow]:
    groups: dict[tuple[str, str], list[dar.DarTrial]] = defaultdict(list)
    for row in dar_view(run_dir, scores.run):
        domain, _, mode, _ = row["key"]
        groups[(domain, mode)].append(
            dar.DarTrial(
                expected=row["expected"],
                got=row["got"],
                exception=row["exception"],
                missing_stdout=bool(row["missing_stdout"]),
            )
        )
    rows = []
    order = {name: i for i, name in enumerate(DISPLAY_ORDER)}
    for (domain, mode), trials in sorted(
        groups.items(), key=lambda kv: (order.get(kv[0][0], 99), mode_rank(kv[0][1]))
    ):
        group = scores.group(domain, mode, "first")
        rows.append(
            ScorerRow(
                domain=domain,
                mode=mode,
                metric=DOMAINS[domain].metric,
                n=len(trials),
                paper=group.estimate.point if group is not None else None,
                dar_default=dar.dar_score(trials),
                dar_strict=dar.dar_score(trials, errors_as_incorrect=True),
            )
        )
    return rows


def overall(rows: Sequence[ScorerRow], strict: bool) -> float:
    """DAR's "Overall Accuracy": exact matches over all trials of all domains."""
    n = sum(r.n for r in rows)
    correct = sum((r.dar_strict if strict else r.dar_default).correct for r in rows)
    return correct / n if n else 0.0


def render_scorer_table(rows: Sequence[ScorerRow], *, dar_run: bool = False) -> str:
    """The paper's and DAR's scores side by side: the table ``score --dar-rules`` prints
    (``dar_run``: a dar-protocol run's, whose first figure is the harness reader's of
    DAR's ``Answer:`` line)."""
    ours = "harness (point)" if dar_run else "paper (point)"
    header = ("domain", "mode", "metric", "n", ours, "DAR", "DAR strict", "DAR classes")
    lines = [header]
    for r in rows:
        paper = f"{100 * r.paper:.1f}" if r.paper is not None else "-"
        classes = (
            ", ".join(repr(c) for c in r.dar_default.classes) if r.metric != "accuracy" else ""
        )
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
