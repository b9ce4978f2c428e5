"""An eval set's comparison: its runs scored as ``score`` scores them, in one table.

The table is Table 2's layout (``tables.table2``: Model, Protocol, Setting, the five
domains) with a Source column in front and one block of rows per model, the runs in the
set's order.  Under each run's setting come

* the published cells of that setting: the paper's (``tables.against_paper``, what
  ``score --against paper`` prints) beside a run of the paper or harness protocol, DAR's
  readings of the run and DAR's Appendix Table 1 (``dar_published.against_dar``, what
  ``score --against dar`` prints) beside a run of the dar protocol;
* its paired difference from the set's first run of the same protocol over the cases
  both scored (``comparisons.compare``, what ``score --compare`` computes), with the
  bootstrap interval (``tables.comparison_table``'s cell).

Every cell is one of those functions' own, moved into place, never computed again: a run's
cells equal ``score`` of that run folder alone.  the set's ``results.json`` (``write_set_results``)
holds every run's results.json document beside the comparison's JSON.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.domains import DOMAINS
from ..store import sets
from ..vocabulary.protocols import DAR_PROTOCOL
from .comparisons import Comparison, compare, comparisons_note
from .dar_published import against_dar
from .metrics import DEFAULT_BOOTSTRAP
from .notes import against_paper_notes
from .paper import match_model
from .results import RESULTS_FILE, _previous_wall_time, build_results, estimated_cost, run_totals
from .scores import RunScores, score_runs
from .tables import (
    MISSING,
    TABLE_DOMAINS,
    Table,
    against_paper,
    comparison_table,
    render,
    run_labels,
    table2,
    to_json,
)

SET_COMPARISON_KIND = "deonticbench-set-comparison"
SET_RESULTS_KIND = "deonticbench-set-results"
SET_RESULTS_SCHEMA = 1
_DIFF_COLUMN = "B - A [95% CI]"
"""``comparison_table``'s column holding a difference with its interval."""


@dataclass(frozen=True)
class SetComparison:
    """An eval set's runs scored, their paired differences and the one table."""

    manifest: sets.SetManifest
    scores: list[RunScores]
    """The started runs, in the set's order."""
    comparisons: list[Comparison]
    """Each run minus the set's first run of its protocol (``compare``)."""
    table: Table
    notes: list[str]
    bootstrap: int
    seed: int

    def render(self, fmt: str = "table") -> str:
        """The table as ``score --format`` writes a table (table, markdown, csv, latex),
        or ``json``: the whole document (``to_json``)."""
        if fmt == "json":
            return json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n"
        return render(self.table, fmt)

    def to_json(self) -> dict[str, Any]:
        """The set, the table (a row is a dict by header), each run's scores and the
        paired differences as ``score --json`` writes them, the published rows and the
        notes."""
        started = {s.run.name for s in self.scores}
        doc: dict[str, Any] = {
            "kind": SET_COMPARISON_KIND,
            "set": _set_json(self.manifest, started),
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "table": {
                "title": self.table.title,
                "headers": self.table.headers,
                "rows": _dicts(self.table),
            },
            **to_json(self.scores, self.comparisons),
        }
        paper, dar = _by_table(self.scores)
        if paper:
            doc["against_paper"] = _dicts(against_paper(paper))
        if dar:
            doc["against_dar"] = _dicts(against_dar(dar))
        doc["notes"] = list(self.notes)
        return doc


def _dicts(table: Table) -> list[dict[str, str]]:
    return [dict(zip(table.headers, row, strict=True)) for row in table.rows]


def _set_json(manifest: sets.SetManifest, started: set[str]) -> dict[str, Any]:
    return {
        "folder": str(manifest.folder),
        "source": manifest.source,
        "runs": [{**r.to_json(), "started": r.name in started} for r in manifest.runs],
    }


def _by_table(scores: Sequence[RunScores]) -> tuple[list[RunScores], list[RunScores]]:
    """(the runs set beside the paper's table, the runs of the dar protocol)."""
    dar = [s for s in scores if s.run.protocol == DAR_PROTOCOL]
    return [s for s in scores if s.run.protocol != DAR_PROTOCOL], dar


def set_comparisons(
    scores: Sequence[RunScores], bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> tuple[list[Comparison], list[str]]:
    """Each run against the first run of its protocol in ``scores`` (a set's runs, in its
    order): ``compare(first, run)``, as ``score --compare FIRST RUN`` computes it; and a
    note for each run that shares no case with its first."""
    first: dict[str, RunScores] = {}
    out: list[Comparison] = []
    notes: list[str] = []
    for s in scores:
        base = first.setdefault(s.run.protocol, s)
        if base is s:
            continue
        found = compare(base, s, bootstrap, seed)
        if not any(c.n_common for c in found):
            notes.append(
                f"{s.run.name} shares no case with {base.run.name}, the set's first run of "
                f"the {s.run.protocol} protocol: no paired difference between them."
            )
        out += found
    return out, notes


def set_comparison(
    folder: str | os.PathLike[str] | sets.SetManifest,
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    scores: Sequence[RunScores] | None = None,
) -> SetComparison:
    """The comparison of the eval set in ``folder`` (or of its manifest): its started runs
    scored with ``bootstrap`` replicates and ``seed`` (or ``scores``, the same runs scored
    already, in the set's order), their paired differences and the one table."""
    manifest = (
        folder if isinstance(folder, sets.SetManifest) else sets.read_set_manifest(Path(folder))
    )
    if scores is None:
        scores = score_runs([manifest.folder], bootstrap=bootstrap, seed=seed)
    scores = list(scores)
    started = {s.run.name for s in scores}
    notes = [
        f"{r.name} ({r.model}) has not started: it is not in the table."
        for r in manifest.runs
        if r.name not in started
    ]
    notes += [f"{s.run.name}: {note}" for s in scores for note in s.notes]
    paper, _ = _by_table(scores)
    # Said only of runs that have published rows beside them (models of the paper).
    protocols, splits = against_paper_notes([s.run for s in paper if match_model(s.run.model)])
    comparisons, shared = set_comparisons(scores, bootstrap, seed)
    across = comparisons_note(comparisons)
    notes += protocols + splits + shared + ([f"note: {across}"] if across else [])
    notes += _dropped_cases(comparisons)
    untested = [s.run.name for s in paper if match_model(s.run.model) is None]
    if untested:
        notes.append(
            f"{', '.join(untested)}: not a model of the paper, so no published row stands "
            "beside it (score --against paper shows them all)."
        )
    table = _table(scores, comparisons)
    return SetComparison(manifest, scores, comparisons, table, notes, bootstrap, seed)


def _dropped_cases(comparisons: Sequence[Comparison]) -> list[str]:
    """A note for each difference over fewer cases than a side scored
    (``comparison_table``'s Cases column)."""
    table = comparison_table(comparisons)
    return [
        f"{row[0]} {row[2]} {row[3]} ({row[4]}): over {row[-1]}"
        for c, row in zip(comparisons, table.rows, strict=True)
        if c.n_common and c.only_a + c.only_b
    ]


# -- the one table -----------------------------------------------------------------------


def _table(scores: Sequence[RunScores], comparisons: Sequence[Comparison]) -> Table:
    """Table 2 of every run (``table2``), a block per model, each run's setting followed by
    its DAR readings, its difference from its protocol's first run and the published rows;
    DAR's Appendix Table 1 rows after a dar run's settings.  A published row already shown
    in the model's block (beside another run of the model) is not repeated."""
    own = table2(scores)
    with_stage = "Stage" in own.headers
    lead = 4 if with_stage else 3  # Model, Protocol, Setting (, Stage)
    headers = ["Source", *own.headers]
    labels = run_labels(scores)
    rows: list[list[str]] = []
    shown: set[tuple[str, ...]] = set()  # the published rows of the model's block

    def published(row: list[str]) -> None:
        if tuple(row) not in shown:
            shown.add(tuple(row))
            rows.append(row)

    models = list(dict.fromkeys(s.run.model for s in scores))
    for model in models:
        shown.clear()
        for label, s in zip(labels, scores, strict=True):
            if s.run.model != model:
                continue
            settings: dict[str, list[list[str]]] = {}
            for row in own.rows:
                if row[0] == label:
                    settings.setdefault(row[2], []).append(row)
            extra = _published(s, with_stage)
            diffs = _differences(s, label, comparisons, with_stage)
            for setting, mine in settings.items():
                rows += [[s.run.name, *row] for row in mine]
                rows += [[s.run.name, label, *row] for row in extra.readings.get(setting, [])]
                rows += diffs.get(setting, [])
                for row in extra.by_setting.get(setting, []):
                    published(row)
            for row in extra.after:
                published(row)
    assert all(len(r) == len(headers) for r in rows), "a row out of Table 2's columns"
    return Table(
        headers,
        rows,
        title="The set's runs in Table 2's layout, one block per model, %: each run's "
        "bootstrap mean +upper -lower; under it the published cells (the paper's, or DAR's "
        "for runs of the dar protocol) and, as 'run - first', its paired difference from "
        "the set's first run of its protocol on the cases both scored (bootstrap mean [95% "
        "interval], points)",
        key_columns=lead + 1,
    )


@dataclass
class _Published:
    by_setting: dict[str, list[list[str]]]
    """Published rows of a setting (the paper's), in the table's columns."""
    readings: dict[str, list[list[str]]]
    """DAR's readings of the run's own trials, by setting: (Protocol, Setting(, Stage),
    domains...) as ``against_dar`` prints them, behind the run's name and label."""
    after: list[list[str]]
    """Rows after the run's settings: DAR's Appendix Table 1."""


def _in_columns(cells: dict[str, str], with_stage: bool) -> list[str]:
    """A published row's domain cells in Table 2's columns (with a blank stage)."""
    return ([MISSING] if with_stage else []) + [cells.get(d, MISSING) for d in TABLE_DOMAINS]


def _published(s: RunScores, with_stage: bool) -> _Published:
    """``against_paper`` or ``against_dar`` of this run alone, its rows moved into the set
    table's columns: the rows under each of the run's settings, and those after it."""
    out = _Published({}, {}, [])
    if s.run.protocol == DAR_PROTOCOL:
        table = against_dar([s])
        for row in table.rows:
            cells = dict(zip(table.headers[3:], row[3:], strict=True))
            if row[0] != "this run":
                out.after.append(
                    [row[0], row[1], DAR_PROTOCOL, row[2], *_in_columns(cells, with_stage)]
                )
                continue
            title, _, reading = row[2].rpartition(" (")
            if reading in ("DAR)", "DAR strict)"):  # the harness reader's figure is Table 2's
                who = f"{DAR_PROTOCOL}, {reading[:-1]} scorer"
                out.readings.setdefault(title, []).append(
                    [who, row[2], *_in_columns(cells, with_stage)]
                )
        return out
    if match_model(s.run.model) is None:
        # A model the paper did not test: every published row would stand beside it, 16
        # rows a run that say nothing of it; the set names such runs once (``notes``).
        return out
    table = against_paper([s])
    names = {DOMAINS[d].display_name: d for d in TABLE_DOMAINS}
    setting = ""
    for row in table.rows:
        if row[0] == "this run":
            setting = row[3]
            continue
        cells = {names[h]: c for h, c in zip(table.headers[4:], row[4:], strict=True)}
        out.by_setting.setdefault(setting, []).append(
            [row[0], row[1], row[2], row[3], *_in_columns(cells, with_stage)]
        )
    return out


def _differences(
    s: RunScores, label: str, comparisons: Sequence[Comparison], with_stage: bool
) -> dict[str, list[list[str]]]:
    """This run's paired differences from its first run, by setting: one row per stage,
    each domain's cell ``comparison_table``'s ``B - A [95% CI]``."""
    mine = [c for c in comparisons if c.run_b == s.run.name]
    if not mine:
        return {}
    table = comparison_table(mine)
    at = table.headers.index(_DIFF_COLUMN)
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for c, row in zip(mine, table.rows, strict=True):
        key = (row[3], c.stage)  # the setting's title, the stage
        entry = grouped.setdefault(key, {"source": row[0], "protocols": row[1], "cells": {}})
        entry["cells"][c.domain] = row[at]
    out: dict[str, list[list[str]]] = {}
    for (setting, stage), entry in grouped.items():
        cells = [entry["cells"].get(d, MISSING) for d in TABLE_DOMAINS]
        row = [entry["source"], label, entry["protocols"], setting]
        out.setdefault(setting, []).append(row + ([stage] if with_stage else []) + cells)
    return out


# -- results.json --------------------------------------------------------------------


def set_results(
    comparison: SetComparison, comparison_json: dict[str, Any] | None = None
) -> dict[str, Any]:
    """the set's ``results.json``: each started run's results.json document (``build_results``,
    its wall time carried from the run's own results.json), the set's totals, what the
    set's spend ledger holds, and the comparison's JSON (``comparison_json`` when it is
    made already)."""
    manifest = comparison.manifest
    lanes = {r.name: r for r in manifest.runs}
    spent = sets.SpendLedger(manifest.folder).by_run()
    runs = []
    usd = 0.0
    unpriced: list[str] = []
    totals = {"samples": 0, "requests": 0, "tokens_in": 0, "tokens_out": 0}
    for s in comparison.scores:
        wall = _previous_wall_time(s.run.path / RESULTS_FILE)
        doc = build_results(s, wall_time_s=wall)
        entry = lanes.get(s.run.name)
        runs.append(
            {
                "name": s.run.name,
                "model": s.run.model,
                "protocol": s.run.protocol,
                "lane": entry.lane if entry else None,
                "spent_usd": round(spent.get(s.run.name, 0.0), 6),
                "results": doc,
            }
        )
        run_sum = run_totals(s.run)
        for key, value in (
            ("samples", run_sum.samples),
            ("requests", run_sum.requests),
            ("tokens_in", run_sum.tokens_in_paid),
            ("tokens_out", run_sum.tokens_out_paid),
        ):
            totals[key] += value
        cost = estimated_cost(s.run.model, run_sum)
        if cost is None or cost.get("usd") is None:
            unpriced.append(s.run.name)
        else:
            usd += float(cost["usd"])
    return {
        "kind": SET_RESULTS_KIND,
        "schema": SET_RESULTS_SCHEMA,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "set": _set_json(manifest, {s.run.name for s in comparison.scores}),
        "bootstrap": comparison.bootstrap,
        "bootstrap_seed": comparison.seed,
        "totals": {
            **totals,
            "estimated_usd": round(usd, 4),
            "unpriced_runs": unpriced,
            "spent_usd": round(float(sum(spent.values())), 6),
        },
        "runs": runs,
        "comparison": comparison.to_json() if comparison_json is None else comparison_json,
    }


def write_set_results(
    comparison: SetComparison, comparison_json: dict[str, Any] | None = None
) -> Path:
    """Write ``set_results`` to the set folder's the set's ``results.json`` (atomically)."""
    target = comparison.manifest.folder / sets.SET_RESULTS
    tmp = target.with_name(target.name + ".tmp")
    doc = set_results(comparison, comparison_json)
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return target


__all__ = ["SetComparison", "set_comparison", "set_comparisons", "write_set_results"]
