"""What a finished (or stopped) run leaves in its folder besides its records:
``results.json`` always, and ``report.html`` when asked (``eval --score``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .scoring import RunScores, score_runs


@dataclass
class RunOutputs:
    scores: RunScores
    written: list[Path] = field(default_factory=list)


def write_run_outputs(
    run_dir: Path,
    *,
    wall_time_s: float | None,
    command: Sequence[str] | None = None,
    html: bool = False,
) -> RunOutputs | None:
    """Score the run folder and write its results.json (and report.html); None when the
    folder holds no record yet."""
    from .results import write_results
    from .scoring import RECORDS_FILE

    if not (run_dir / RECORDS_FILE).is_file():
        return None
    (scores,) = score_runs([run_dir])
    if not scores.run.records:
        return None
    out = RunOutputs(scores)
    out.written.append(write_results(scores, command=command, wall_time_s=wall_time_s))
    if html and scores.groups:
        from .html_report import REPORT_FILE, write_report

        out.written.append(write_report([scores], run_dir / REPORT_FILE))
    return out
