"""The page itself: the sections in their order, the notes, the sample browser's data packed
into the template from ``deonticbench/resources/report/``, and the file written
atomically."""

from __future__ import annotations

import base64
import gzip
import html
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .._paths import RESOURCES
from ..data.domains import DOMAINS
from ..errors import DeonticBenchError
from ..scoring.comparisons import Comparison
from ..scoring.scores import RunScores, scores_of
from ..scoring.tables import table2
from ..store.run import RunLike
from ._json import dumps, json_in_script
from ._samples import INDEX_COLUMNS, samples
from ._sections import (
    agents_html,
    comparison_section,
    dar_section,
    figure_html,
    paper_sections,
    runs_html,
    sensitivity_section,
    table_html,
)

if TYPE_CHECKING:
    from ..reliability.evaluate import SignalReport
    from ..scoring.rereading import SensitivityRow

REPORT_FILE = "report.html"
_RESOURCES = RESOURCES / "report"


class ReportWriteError(DeonticBenchError):
    pass


def _resource(name: str) -> str:
    return (_RESOURCES / name).read_text(encoding="utf-8")


def build_report(
    runs: Sequence[RunScores | RunLike],
    comparisons: Sequence[Comparison] = (),
    *,
    data_dir: Path | None = None,
    reliability: Sequence[SignalReport] = (),
    sensitivity: Sequence[tuple[str, SensitivityRow]] = (),
) -> str:
    """The HTML text of the report for one or more runs (scored, or runs or run folders
    scored here as ``score`` scores them); with ``reliability``
    (``deonticbench.reliability`` reports), a Reliability page too."""
    scores = [scores_of(run) for run in runs]
    sections = _sections(scores, comparisons, reliability, sensitivity)
    index, details, sample_notes = samples(scores, data_dir)
    notes = [f"{s.run.name}: {n}" for s in scores for n in s.notes] + sample_notes
    if notes:
        items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        sections.insert(1, f'<section id="notes"><h2>Notes</h2><ul>{items}</ul></section>')
    meta = {
        "runs": [{"name": s.run.name, "model": s.run.model} for s in scores],
        "columns": list(INDEX_COLUMNS),
        "domains": {name: d.display_name for name, d in DOMAINS.items()},
    }
    text = dumps(details)
    packed = base64.b64encode(gzip.compress(text.encode("utf-8"), 6, mtime=0)).decode("ascii")
    title = "DeonticBench report: " + ", ".join(s.run.model for s in scores)
    return _fill(
        _resource("report.html"),
        {
            "{{TITLE}}": html.escape(title),
            "{{CSS}}": _resource("report.css"),
            "{{BODY}}": "\n".join(sections),
            "{{META}}": json_in_script(meta),
            "{{INDEX}}": json_in_script(index),
            "{{DETAILS}}": packed,
            "{{JS}}": _resource("report.js"),
        },
    )


def _sections(
    scores: Sequence[RunScores],
    comparisons: Sequence[Comparison],
    reliability: Sequence[SignalReport],
    sensitivity: Sequence[tuple[str, SensitivityRow]],
) -> list[str]:
    """The sections above the sample browser, in the page's order (notes go in later)."""
    sections: list[str] = []
    sections.append(f'<section id="overview"><h2>Runs</h2>{runs_html(scores)}</section>')
    sections.append(
        '<section id="scores"><h2>Scores (Table 2 layout)</h2>'
        + table_html(table2(scores), "table2")
        + "</section>"
    )
    sections += paper_sections(scores)
    dar = dar_section(scores)
    if dar is not None:
        sections.append(dar)
    agents = agents_html(scores)
    if agents is not None:
        sections.append(agents)
    if comparisons:
        sections.append(comparison_section(comparisons))
    if sensitivity:
        sections.append(sensitivity_section(sensitivity))
    if any(s.groups for s in scores):
        sections.append(f'<section id="figures"><h2>Figures</h2>{figure_html(scores)}</section>')
    if reliability:
        from ..reliability.page import reliability_html  # start-up: only for a Reliability page

        sections.append(reliability_html(reliability, lambda t, i: table_html(t, i)))
    return sections


def _fill(page: str, replacements: dict[str, str]) -> str:
    """The template with each ``{{KEY}}`` replaced in one pass, so a placeholder-like text
    inside the data is never replaced."""
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
    runs: Sequence[RunScores | RunLike],
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
        runs, comparisons, data_dir=data_dir, reliability=reliability, sensitivity=sensitivity
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
