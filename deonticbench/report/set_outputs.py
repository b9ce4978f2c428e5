"""What an eval set leaves in its folder when it ends: the set's comparison
(``scoring.set_table``), the set's ``results.json`` and one ``report.html`` of every run.

``finish_set`` scores the set's started runs once and hands the same scores to the
comparison, to results.json and to the report, so the three show the same numbers as
``score SETDIR`` and ``report SETDIR``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..scoring import upstream_bootstrap as upstream
from ..scoring.metrics import DEFAULT_BOOTSTRAP
from ..scoring.scores import RunScores, run_folders, score_runs
from ..scoring.set_table import SetComparison, set_comparison, write_set_results
from ..store import sets
from ._page import REPORT_FILE, write_report


@dataclass(frozen=True)
class SetOutputs:
    """The end of an eval set: the comparison's table as text and its JSON document, and
    the two files written into the set folder."""

    text: str
    """The one table (``SetComparison.render``, in the format asked for)."""
    json_doc: dict[str, Any]
    """``SetComparison.to_json``: what the set's ``results.json`` holds under ``comparison``."""
    results_path: Path
    report_path: Path
    notes: list[str]
    """What the table's numbers need said beside them (runs not started, protocols,
    splits, cases only one side scored), one sentence each."""
    comparison: SetComparison


def finish_set(
    folder: str | os.PathLike[str],
    *,
    replicates: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    fmt: str = "table",
    data_dir: Path | None = None,
    scored: Mapping[str, RunScores] | None = None,
) -> SetOutputs:
    """Score the eval set in ``folder`` (its started runs, in the set's order, with
    ``replicates`` bootstrap replicates drawn with ``seed``), write its
    the set's ``results.json`` and ``report.html`` there, and return the comparison (``fmt``:
    table, markdown, csv, latex or json) with both paths.  ``data_dir``: where the report
    rebuilds the prompts from (default: each run's data).  ``scored``: runs scored
    already (``prescore``, by run name, with the same replicates and seed), scored
    again only when missing."""
    manifest = sets.read_set_manifest(Path(folder))
    known = scored or {}
    scores = []
    for path in run_folders([manifest.folder]):  # a set with no run started: refused
        made = known.get(Path(path).name)
        if made is None:
            (made,) = score_runs([path], bootstrap=replicates, seed=seed)
        scores.append(made)
    comparison = set_comparison(manifest, bootstrap=replicates, seed=seed, scores=scores)
    doc = comparison.to_json()
    results = write_set_results(comparison, doc)
    report = write_report(
        scores, manifest.folder / REPORT_FILE, comparison.comparisons, data_dir=data_dir
    )
    return SetOutputs(
        text=comparison.render(fmt),
        json_doc=doc,
        results_path=results,
        report_path=report,
        notes=comparison.notes,
        comparison=comparison,
    )


def prescore(
    folder: str | os.PathLike[str], *, replicates: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> RunScores:
    """One finished run of a set scored as ``finish_set`` scores it, upstream's statistics
    drawn too (they stay with the run): a set scores each run as its lane finishes it, so
    that only the last run's scoring waits at the set's end."""
    (scores,) = score_runs([folder], bootstrap=replicates, seed=seed)
    upstream.upstream_bootstrap(scores.run)
    return scores


__all__ = ["SetOutputs", "finish_set", "prescore"]
