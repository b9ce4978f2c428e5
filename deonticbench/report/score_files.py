"""What ``deonticbench score --out`` writes: every table as markdown, LaTeX and CSV, the
per-case CSV, the figures, each run's results.json and report.html, in one folder."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..scoring.agent_format import FormatRow, format_rows, format_table
from ..scoring.comparisons import Comparison
from ..scoring.rereading import sensitivity_table
from ..scoring.results import RESULTS_FILE, write_results
from ..scoring.scores import RunScores
from ..scoring.tables import (
    COMPARISON_COLUMNS,
    against_paper,
    cases_csv,
    comparison_rows,
    comparison_table,
    long_csv,
    render,
    render_csv,
    render_markdown,
    table2,
    to_json,
)
from ..scoring.usage import UsageRow, usage_rows, usage_table
from ._page import REPORT_FILE, ReportWriteError, write_report

if TYPE_CHECKING:
    from ..reliability.api import ScoreExtras
    from ..scoring.rereading import SensitivityRow


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "run"


def _table_files(
    scores: Sequence[RunScores],
    comparisons: Sequence[Comparison],
    paper: bool,
    extras: ScoreExtras | None,
    sensitivity: Sequence[tuple[str, SensitivityRow]],
) -> dict[str, str]:
    """Every table's file, by name."""
    files: dict[str, str] = {
        "table.md": render_markdown(table2(scores)),
        "table.tex": render(table2(scores), "latex"),
        "long.csv": long_csv(scores),
        "cases.csv": cases_csv(scores),
        "scores.json": json.dumps(to_json(scores, comparisons), indent=2) + "\n",
    }
    usage = usage_rows(scores)
    files["usage.csv"] = render_csv(UsageRow.columns(), [r.to_dict() for r in usage])
    files["usage.md"] = render_markdown(usage_table(usage))
    formats = format_rows(scores)
    if formats:
        files["format.csv"] = render_csv(FormatRow.columns(), [r.to_dict() for r in formats])
        files["format.md"] = render_markdown(format_table(formats))
    if comparisons:
        files["comparison.csv"] = render_csv(COMPARISON_COLUMNS, comparison_rows(comparisons))
        files["comparison.md"] = render_markdown(comparison_table(comparisons))
    if paper:
        files["paper.md"] = render_markdown(against_paper(scores))
    if sensitivity:
        files["reader-sensitivity.md"] = render_markdown(sensitivity_table(sensitivity))
    if extras is not None and extras.tables:
        files["reliability.md"] = "\n".join(render_markdown(t) for t in extras.tables)
    return files


def _figures(out: Path, scores: Sequence[RunScores]) -> list[Path]:
    """One figure per run and stage, and one of all scored runs when there are several."""
    from ..scoring.figures import draw_figure  # matplotlib only when figures are drawn

    written = []
    used: set[str] = set()
    for index, s in enumerate(scores):
        if not s.groups:
            continue
        stem = f"figure-{_safe(s.run.name)}"
        if stem in used:
            stem = f"{stem}-{index}"
        used.add(stem)
        for stage in s.stages:
            suffix = "" if stage == "first" else f"-{stage}"
            written.append(draw_figure([s], out / f"{stem}{suffix}.png", stage))
    scored = [s for s in scores if s.groups]
    if len(scored) > 1:
        for stage in dict.fromkeys(st for s in scored for st in s.stages):
            suffix = "" if stage == "first" else f"-{stage}"
            written.append(draw_figure(scored, out / f"figure-all{suffix}.png", stage))
    return written


def write_score_files(
    out: Path,
    scores: Sequence[RunScores],
    comparisons: Sequence[Comparison],
    paper: bool,
    extras: ScoreExtras | None = None,
    sensitivity: Sequence[tuple[str, SensitivityRow]] = (),
) -> list[Path]:
    """Every table, the per-case CSV, the figures, each run's results.json and
    report.html, written to ``out`` (``score --out``); the paths written."""
    files = _table_files(scores, comparisons, paper, extras, sensitivity)
    try:
        out.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in files.items():
            (out / name).write_text(text, encoding="utf-8")
            written.append(out / name)
        written += _figures(out, scores)
        for s in scores:
            name = RESULTS_FILE if len(scores) == 1 else f"results-{_safe(s.run.name)}.json"
            sections = extras.sections.get(s.run.name) if extras else None
            written.append(write_results(s, out / name, sections=sections))
        reports = extras.reports if extras else []
        report = write_report(
            scores, out / REPORT_FILE, comparisons, reliability=reports, sensitivity=sensitivity
        )
        return [*written, report]
    except OSError as exc:
        raise ReportWriteError(
            f"Cannot write the report to {out}: {exc.strerror or exc}."
        ) from None


__all__ = ["write_score_files"]
