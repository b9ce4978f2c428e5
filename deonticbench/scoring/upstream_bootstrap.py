"""Upstream's bootstrap, beside the paper's: ``results.json``'s ``upstream_bootstrap``.

The paper's figures (B.3: accuracy or macro-F1, ``metrics.bootstrap``) are the headline.
Upstream's released ``scripts/bootstrap_outputs.py`` prints other figures for the same
outputs: mean accuracy, abstention and wrong rates with percentile intervals.  This
module computes those as that script computes them, written here from its description
(never imported), so that a run's ``upstream_bootstrap`` equals what the script prints
for the same replies, to its 4 decimals:

* 1,000 replicates from ``numpy.random.default_rng(42)``;
* per replicate, ``rng.integers(0, n, size=n)`` draws the cases, then, for each drawn
  case in turn, ``rng.integers(0, len(samples))`` picks one of its samples.  The script
  makes those picks one call at a time; here they are one call per replicate with an
  array of bounds, which numpy draws element by element exactly as the scalar calls
  (the same bounded draw per element, none for a bound of 1), so the generator is
  consumed identically and the figures are the same, in a tenth of the time (every
  ``score`` of a run pays this: 1,000 replicates per domain and mode);
* the cases in the split's file order (upstream enumerates its output files, which
  follow the split), a case's samples in sample order (0..K-1);
* a case with no sample takes no draw but stays in the denominator;
* accuracy, abstention and wrong rates over n; mean and the 2.5 / 97.5 percentiles
  (numpy's default, linear), each rounded to 4 decimals.

Upstream's bootstrap only asks of a sample whether it abstained and whether it is
correct, so a sample here is its first attempt's stored outcome: the paper's figure is
the first attempt's.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Iterable, Sequence

import numpy as np

from ..reading.outcomes import Outcome
from ..store.record import Record
from ..store.run import Run
from ..vocabulary.modes import MODES

UPSTREAM_REPLICATES = 1000
UPSTREAM_SEED = 42
UPSTREAM_DECIMALS = 4

UNRECORDED_ORDER_NOTE = (
    "upstream_bootstrap: config.json records no case order for {domains}; their cases "
    "are drawn in case-id order, so these figures need not equal upstream's script's"
)


_OUTCOME_CODES = {"correct": 1, "abstain": 2}
"""A sample's outcome as a small integer (anything else: 0, wrong), for drawing in numpy."""


def upstream_bootstrap_stats(
    cases: Sequence[Sequence[Outcome]],
    *,
    replicates: int = UPSTREAM_REPLICATES,
    seed: int = UPSTREAM_SEED,
) -> dict[str, float | int]:
    """``bootstrap_accuracy``'s figures for ``cases`` (each case's sample outcomes, in
    upstream's case and sample order)."""
    n = len(cases)
    if n == 0:
        return {}
    rng = np.random.default_rng(seed)
    sizes = np.array([len(samples) for samples in cases], dtype=np.int64)
    table = np.zeros((n, max(1, *map(len, cases))), dtype=np.int8)
    for i, samples in enumerate(cases):
        table[i, : len(samples)] = [_OUTCOME_CODES.get(o, 0) for o in samples]
    n_correct = np.empty(replicates, dtype=np.int64)
    n_abstain = np.empty(replicates, dtype=np.int64)
    for r in range(replicates):
        drawn = rng.integers(0, n, size=n)
        drawn = drawn[sizes[drawn] > 0]  # a case with no sample: no draw, yet counted in n
        picked = table[drawn, rng.integers(0, sizes[drawn])] if drawn.size else drawn
        n_correct[r] = np.count_nonzero(picked == 1)
        n_abstain[r] = np.count_nonzero(picked == 2)
    out: dict[str, float | int] = {"n_items": n}
    for prefix, mean_name, values in (
        ("acc", "mean_accuracy", n_correct / n),
        ("abstain", "mean_abstain_rate", n_abstain / n),
        ("wrong", "mean_wrong_rate", (n - n_correct - n_abstain) / n),
    ):
        low = float(np.percentile(values, 2.5))
        high = float(np.percentile(values, 97.5))
        out[mean_name] = round(float(np.mean(values)), UPSTREAM_DECIMALS)
        out[f"{prefix}_ci_low_95"] = round(low, UPSTREAM_DECIMALS)
        out[f"{prefix}_ci_high_95"] = round(high, UPSTREAM_DECIMALS)
        out[f"{prefix}_ci_half_width"] = round((high - low) / 2, UPSTREAM_DECIMALS)
    return out


def ordered_cases(records: Iterable[Record], order: Sequence[str] | None) -> list[list[Outcome]]:
    """One mode's records as upstream's cases: the split's order (cases it does not name,
    e.g. counterfactual variants, after it by id), each case's first-attempt outcomes
    in sample order."""
    by_case: dict[str, list[Record]] = {}
    for record in records:
        by_case.setdefault(record.case_id, []).append(record)
    position = {case_id: i for i, case_id in enumerate(order or ())}
    ids = sorted(by_case, key=lambda c: (position.get(c, len(position)), c))
    return [[r.first.outcome for r in sorted(by_case[c], key=lambda r: r.sample)] for c in ids]


UpstreamBlock = tuple[dict[str, dict[str, dict[str, float | int]]], list[str]]
_MADE: weakref.WeakKeyDictionary[Run, tuple[list[Record], int, UpstreamBlock]] = (
    weakref.WeakKeyDictionary()
)
"""Each run's figures while it lives, with the record list (and its length) they were
drawn from: results.json, ``score --json`` and the report of one scored run (an eval
set's end writes all three) draw its 1,000 replicates per group once."""


def upstream_bootstrap(run: Run) -> UpstreamBlock:
    """``upstream_bootstrap[domain][mode]`` over a loaded run's prompted modes' records,
    and the notes to show with it (a domain whose case order config.json does not record:
    its cases are drawn in id order, ``Run.case_order``)."""
    records = run.records.load()
    made = _MADE.get(run)
    if made is None or made[0] is not records or made[1] != len(records):
        made = (records, len(records), _upstream_bootstrap(run))
        _MADE[run] = made
    return copy.deepcopy(made[2])  # each caller's own, to change as it likes


def _upstream_bootstrap(run: Run) -> UpstreamBlock:
    order = run.case_order
    grouped: dict[str, dict[str, list[Record]]] = {}
    for record in run.records:
        if record.mode in MODES:
            grouped.setdefault(record.domain, {}).setdefault(record.mode, []).append(record)
    block: dict[str, dict[str, dict[str, float | int]]] = {}
    for domain in sorted(grouped):
        block[domain] = {
            mode: upstream_bootstrap_stats(ordered_cases(grouped[domain][mode], order.get(domain)))
            for mode in MODES
            if mode in grouped[domain]
        }
    unordered = [d for d in block if d not in order]
    notes = [UNRECORDED_ORDER_NOTE.format(domains=", ".join(unordered))] if unordered else []
    return block, notes
