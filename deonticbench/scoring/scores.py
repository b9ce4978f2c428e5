"""Scoring run folders: every domain x mode (x stage) of a loaded run, bootstrapped.

A run is opened by the store (``store.run.read_run``: forgiving, with its policy for
older folders); its records are encoded as arrays (``encoding``), each group is
bootstrapped with its domain's stream (``seeds``), and the caveats of its figures are
gathered (``notes``).  The long table's rows are in ``rows``, paired comparisons in
``comparisons``.

The public entry point is ``score_runs(runs, bootstrap=1000, seed=0)``, over runs or
their folders; an eval set's folder stands for its run folders, in the set's order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..data.domains import DISPLAY_ORDER, DOMAINS
from ..errors import DataError
from ..store import sets
from ..store.records_file import RECORDS_NAME
from ..store.run import Run, RunLike, read_run
from ..vocabulary.modes import ALL_MODES, Mode
from .encoding import STAGES, Encoded, Stage, encode
from .metrics import DEFAULT_BOOTSTRAP, BootstrapEstimate, Rates, bootstrap, rates
from .notes import bootstrap_gap_note, departure_notes, group_notes, leak_notes, run_notes
from .seeds import domain_rng


@dataclass(frozen=True)
class GroupScore:
    """The score of one domain x mode x stage of a run."""

    run: str
    model: str
    domain: str
    mode: Mode
    stage: Stage
    metric: str
    n_cases: int
    k: int
    n_samples: int
    estimate: BootstrapEstimate
    rates: Rates
    encoded: Encoded


@dataclass
class RunScores:
    run: Run
    groups: list[GroupScore]
    stages: tuple[Stage, ...]
    bootstrap: int
    seed: int
    notes: list[str] = field(default_factory=list)

    def group(self, domain: str, mode: str, stage: str) -> GroupScore | None:
        for g in self.groups:
            if (g.domain, g.mode, g.stage) == (domain, mode, stage):
                return g
        return None

    @property
    def modes(self) -> list[Mode]:
        present = {g.mode for g in self.groups}
        return [m for m in ALL_MODES if m in present]


def score_run(run: Run, bootstrap_b: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> RunScores:
    """Score every domain x mode (x stage when retries happened) of a run."""
    if bootstrap_b < 1:
        raise ValueError("the bootstrap needs at least one replicate")
    # Every group and note below passes over the records again: read them once.
    run.records.load()
    stages: tuple[Stage, ...] = STAGES if run.has_retries else ("first",)
    groups: list[GroupScore] = []
    notes = _run_notes(run)
    for domain in (DOMAINS[name] for name in DISPLAY_ORDER):  # one order in every output
        for mode in ALL_MODES:
            chosen = [r for r in run.records if r.domain == domain.name and r.mode == mode]
            if not chosen:
                continue
            for stage in stages:
                encoded = encode(domain, chosen, stage)
                o = encoded.outcomes
                notes.extend(group_notes(run, domain.name, mode, stage, chosen, encoded))
                if stage == stages[-1] and encoded.disagreements:
                    notes.append(
                        f"{domain.name} {mode} ({stage}): {encoded.disagreements} sample(s) "
                        "whose stored outcome differs from re-judging; re-judged verdicts used"
                    )
                if o.n_cases == 0:
                    continue
                rng = domain_rng(seed, domain.name)
                estimate = bootstrap(o, bootstrap_b, rng)
                gap = bootstrap_gap_note(
                    domain.name,
                    mode,
                    stage,
                    point=estimate.point,
                    mean=estimate.mean,
                    gold=[int(g) for g in o.gold] if o.kind == "binary" else None,
                )
                if gap:
                    notes.append(gap)
                groups.append(_group_score(run, domain.name, mode, stage, encoded, estimate))
    notes.extend(leak_notes(run, [(g.domain, g.mode) for g in groups]))
    notes.extend(departure_notes(run, [g.mode for g in groups]))
    return RunScores(
        run=run, groups=groups, stages=stages, bootstrap=bootstrap_b, seed=seed, notes=notes
    )


def _run_notes(run: Run) -> list[str]:
    """The notes of the whole run, before any group's: what reading its records
    said (the summary first), then the caveats the terminal printed under the run's
    summary, from the same source."""
    notes = [n for n in run.report.notes]
    summary = run.report.summary()
    if summary:
        notes.insert(0, f"{RECORDS_NAME}: {summary}")
    notes.extend(run_notes(run.records, reference=run.model.split(":")[0] == "reference"))
    return notes


def _group_score(
    run: Run, domain: str, mode: Mode, stage: Stage, encoded: Encoded, estimate: BootstrapEstimate
) -> GroupScore:
    """One group's score: its encoded outcomes' sizes and rates beside its estimate."""
    o = encoded.outcomes
    return GroupScore(
        run=run.name,
        model=run.model,
        domain=domain,
        mode=mode,
        stage=stage,
        metric=o.metric,
        n_cases=o.n_cases,
        k=o.k,
        n_samples=int(o.present.sum()),
        estimate=estimate,
        rates=rates(o),
        encoded=encoded,
    )


def scores_of(
    run: RunScores | RunLike, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> RunScores:
    """A run's scores: as given when they are scores, else the run (or the folder given by
    path) scored now, as ``score`` scores it."""
    return run if isinstance(run, RunScores) else score_run(read_run(run), bootstrap, seed)


_RunItem = TypeVar("_RunItem", bound=RunLike)


def run_folders(runs: Sequence[_RunItem]) -> list[_RunItem | Path]:
    """``runs`` with each eval set's folder replaced by its run folders, in the set's order
    (``store.sets.expand_run_folders``); a set with no run started yet is refused, named."""
    for item in runs:
        empty = isinstance(item, str | os.PathLike) and not sets.expand_run_folders([item])
        if empty:  # a run folder expands to itself: only a set can expand to nothing
            raise DataError(f"{item} is an eval set with no run started yet: nothing to score.")
    return sets.expand_run_folders(runs)


def score_runs(
    runs: Sequence[RunLike], bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> list[RunScores]:
    """Score runs, or the run folders given by path (an eval set's folder: its runs, in
    the set's order); the library form of ``deonticbench score``."""
    # every path is checked before any is scored
    read = [read_run(r) for r in run_folders(runs)]
    return [score_run(run, bootstrap, seed) for run in read]
