"""Scores from outcome arrays: accuracy, macro-F1 and the bootstrap of paper B.3.

This module knows nothing about records or run folders: it takes one domain x mode x
stage already encoded as arrays (``Outcomes``) and returns numbers.  Keeping it pure
lets the same code score a run, a synthetic benchmark and a test's random draws.

Definitions (paper B.3):

* numeric domains: a sample is correct iff ``|round(y) - int(gold)| <= 1`` with
  round-half-even (``np.round`` = Python's ``round``, as ``outcomes.within_tolerance``);
  an abstention counts as the value -1 but is never correct, even when gold is 0 or -1;
* binary domains: an abstention is mapped to the class opposite the gold label, then
  macro-F1 is the mean of the two per-class F1 scores, both classes always counted; a
  class whose ``2TP + FP + FN`` is 0 gets F1 = 0 (scikit-learn's ``zero_division=0``).

Bootstrap: each replicate draws N cases with replacement and, for every drawn case, one
of its present samples uniformly at random; the metric is computed per replicate.  All
replicates of a block are computed at once with array operations.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ..data.domains import NUMERIC_TOLERANCE, LabelKind

MetricName = Literal["accuracy", "macro_f1"]

ABSTAIN_VALUE = -1.0
"""The value an abstention stands for in numeric domains (paper B.3)."""
POSITIVE, NEGATIVE = 0, 1
"""Class indices of binary domains: 0 is ``Domain.positive``, 1 its opposite."""

DEFAULT_BOOTSTRAP = 1000
# Replicates are drawn and scored in blocks of about this many (replicate, case) cells:
# small enough that a block's temporaries stay in the CPU cache and memory is bounded
# for any B or N (one B x N pass over fresh memory was 2-3x slower).  The block size
# depends on N only, so the random stream, hence every result, is machine-independent.
_BLOCK_CELLS = 1 << 18


@dataclass(frozen=True)
class Outcomes:
    """One domain x mode x stage as arrays, cases in a canonical order.

    ``pred[i, j]`` is sample ``j`` of case ``i`` (a number, or a class index for binary
    domains); samples are packed into columns ``0 .. present[i] - 1``, the rest is
    padding.  ``abstain`` marks abstentions (their ``pred`` is ignored).
    """

    kind: LabelKind
    case_ids: tuple[str, ...]
    gold: NDArray[np.float64]
    """Numeric: the gold integer; binary: the gold class index."""
    pred: NDArray[np.float64]
    abstain: NDArray[np.bool_]
    present: NDArray[np.intp]

    def __post_init__(self) -> None:
        n = len(self.case_ids)
        if self.gold.shape != (n,) or self.present.shape != (n,):
            raise ValueError("gold and present must have one entry per case")
        if self.pred.shape != self.abstain.shape or self.pred.shape[:1] != (n,):
            raise ValueError("pred and abstain must be (cases, samples) arrays")
        if n and (np.min(self.present) < 1 or np.max(self.present) > self.pred.shape[1]):
            raise ValueError("every case needs between 1 and K present samples")

    @property
    def n_cases(self) -> int:
        return len(self.case_ids)

    @property
    def k(self) -> int:
        """The largest number of samples any case has."""
        return int(np.max(self.present)) if self.n_cases else 0

    @property
    def metric(self) -> MetricName:
        return "accuracy" if self.kind == "numeric" else "macro_f1"

    @property
    def valid(self) -> NDArray[np.bool_]:
        """(N, K) mask of the cells that hold a sample."""
        return np.arange(self.pred.shape[1]) < self.present[:, None]

    def subset(self, case_ids: list[str]) -> Outcomes:
        """The same outcomes restricted to (and ordered as) ``case_ids``."""
        where = {c: i for i, c in enumerate(self.case_ids)}
        rows = np.array([where[c] for c in case_ids], dtype=np.intp)
        return Outcomes(
            kind=self.kind,
            case_ids=tuple(case_ids),
            gold=self.gold[rows],
            pred=self.pred[rows],
            abstain=self.abstain[rows],
            present=self.present[rows],
        )


def numeric_correct(
    pred: NDArray[np.float64], abstain: NDArray[np.bool_], gold: NDArray[np.float64]
) -> NDArray[np.bool_]:
    """Per-sample verdicts for numeric domains; ``gold`` broadcasts against ``pred``."""
    value = np.where(abstain, ABSTAIN_VALUE, pred)
    # np.round rounds half to even like Python's round, so verdicts match outcomes.judge_answer.
    close = np.abs(np.round(value) - np.trunc(gold)) <= NUMERIC_TOLERANCE
    return close & ~abstain


def effective_class(
    pred: NDArray[np.float64], abstain: NDArray[np.bool_], gold: NDArray[np.float64]
) -> NDArray[np.bool_]:
    """Binary domains: True where the (abstention-mapped) prediction is the positive class.

    An abstention is mapped to the class opposite the gold label, so it is always wrong
    and lands in the confusion matrix as a false negative or a false positive.
    """
    gold_pos = np.broadcast_to(gold == POSITIVE, pred.shape)
    return np.where(abstain, ~gold_pos, pred == POSITIVE)


def correct_matrix(o: Outcomes) -> NDArray[np.bool_]:
    """(N, K) per-sample verdicts (padding cells are False)."""
    gold = o.gold[:, None]
    if o.kind == "numeric":
        ok = numeric_correct(o.pred, o.abstain, gold)
    else:
        ok = (o.pred == gold) & ~o.abstain
    return ok & o.valid


def macro_f1_from_counts(
    tp: NDArray[np.float64],
    fp: NDArray[np.float64],
    fn: NDArray[np.float64],
    tn: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Mean of the positive- and negative-class F1; an empty class scores 0."""
    den_pos = 2 * tp + fp + fn
    den_neg = 2 * tn + fn + fp
    f1_pos = np.divide(2 * tp, den_pos, out=np.zeros_like(den_pos, dtype=float), where=den_pos > 0)
    f1_neg = np.divide(2 * tn, den_neg, out=np.zeros_like(den_neg, dtype=float), where=den_neg > 0)
    return np.asarray((f1_pos + f1_neg) / 2, dtype=np.float64)


def macro_f1(gold_pos: NDArray[np.bool_], pred_pos: NDArray[np.bool_]) -> float:
    """Macro-F1 of one list of (gold, predicted) classes, True meaning positive."""
    g = np.asarray(gold_pos, dtype=bool)
    p = np.asarray(pred_pos, dtype=bool)
    counts = [np.array(float(np.sum(m))) for m in (g & p, ~g & p, g & ~p, ~g & ~p)]
    return float(macro_f1_from_counts(*counts))


# -- point estimates -------------------------------------------------------------------


def _per_case(o: Outcomes, mask: NDArray[np.bool_]) -> NDArray[np.float64]:
    """The share of each case's present samples where ``mask`` holds: shape (N,)."""
    return np.asarray(np.count_nonzero(mask & o.valid, axis=1) / o.present, dtype=np.float64)


def point_metric(o: Outcomes) -> float:
    """The metric on the full data: all samples, every case weighing 1."""
    if o.n_cases == 0:
        return float("nan")
    if o.kind == "numeric":
        return float(np.mean(_per_case(o, correct_matrix(o))))
    # Each case spreads its unit weight over its samples: fractional confusion counts.
    gold_pos = o.gold == POSITIVE
    pred_pos = _per_case(o, effective_class(o.pred, o.abstain, o.gold[:, None]))
    tp = np.sum(np.where(gold_pos, pred_pos, 0.0))
    fn = np.sum(np.where(gold_pos, 1.0 - pred_pos, 0.0))
    fp = np.sum(np.where(gold_pos, 0.0, pred_pos))
    tn = np.sum(np.where(gold_pos, 0.0, 1.0 - pred_pos))
    return float(macro_f1_from_counts(*(np.array(x) for x in (tp, fp, fn, tn))))


@dataclass(frozen=True)
class Rates:
    """Shares of samples (each case weighing 1) that were correct, wrong, abstained."""

    accuracy: float
    wrong: float
    abstain: float


def rates(o: Outcomes) -> Rates:
    if o.n_cases == 0:
        nan = float("nan")
        return Rates(nan, nan, nan)
    correct = correct_matrix(o)
    return Rates(
        accuracy=float(np.mean(_per_case(o, correct))),
        wrong=float(np.mean(_per_case(o, ~correct & ~o.abstain))),
        abstain=float(np.mean(_per_case(o, o.abstain))),
    )


# -- bootstrap -------------------------------------------------------------------------


@dataclass(frozen=True)
class Draws:
    """One block of bootstrap draws: for replicate b and slot i, the case ``case[b, i]``
    and the uniform number ``u[b, i]`` that picks its sample ``floor(u * present)``."""

    case: NDArray[np.intp]
    u: NDArray[np.float64]


def iter_draws(n_cases: int, replicates: int, rng: np.random.Generator) -> Iterator[Draws]:
    """The bootstrap's random draws, in blocks of replicates.

    One uniform number per slot gives both choices: ``w = U * N``, the case is
    ``floor(w)`` and ``u = w - floor(w)`` (uniform in [0, 1), independent of the case up
    to the 2**-53 grain of ``U``) picks the sample.  Half the random numbers of drawing
    case and sample separately, and two runs with different numbers of samples for a
    case (a paired comparison) still share one draw per slot.
    """
    block = max(1, _BLOCK_CELLS // max(n_cases, 1))
    top = np.nextafter(float(n_cases), 0.0)  # U * N may round up to N itself
    done = 0
    while done < replicates:
        size = min(block, replicates - done)
        w = rng.random((size, n_cases))
        w *= n_cases
        np.minimum(w, top, out=w)
        case = w.astype(np.intp)
        w -= case  # exact: w and floor(w) are within a factor of two (or floor is 0)
        yield Draws(case=case, u=w)
        done += size


@dataclass(frozen=True)
class _Flat:
    """What a replicate reads, flattened once per bootstrap: per (case, sample) cell a
    code (numeric: 1 if correct; binary: 2 * gold positive + predicted positive)."""

    codes: NDArray[np.uint8]
    width: int
    present: NDArray[np.intp] | None
    """None when every case has ``width`` samples (then no per-case lookup is needed)."""


def _flatten(o: Outcomes) -> _Flat:
    if o.kind == "numeric":
        codes = correct_matrix(o).astype(np.uint8)
    else:
        gold_pos = (o.gold == POSITIVE)[:, None]
        pred_pos = effective_class(o.pred, o.abstain, o.gold[:, None])
        codes = (2 * gold_pos + pred_pos).astype(np.uint8)
    width = o.pred.shape[1]
    uniform = bool(np.all(o.present == width))
    return _Flat(np.ascontiguousarray(codes).ravel(), width, None if uniform else o.present)


def _replicates(o: Outcomes, flat: _Flat, draws: Draws) -> NDArray[np.float64]:
    case = draws.case
    # floor(u * present) is in [0, present): the drawn sample among those present.
    scaled = draws.u * (flat.width if flat.present is None else flat.present[case])
    cell = case * flat.width + scaled.astype(np.intp)
    codes = np.take(flat.codes, cell)
    if o.kind == "numeric":
        return np.count_nonzero(codes, axis=1) / o.n_cases
    tp = np.count_nonzero(codes == 3, axis=1).astype(np.float64)
    fn = np.count_nonzero(codes == 2, axis=1).astype(np.float64)
    fp = np.count_nonzero(codes == 1, axis=1).astype(np.float64)
    tn = o.n_cases - tp - fp - fn
    return macro_f1_from_counts(tp, fp, fn, tn)


def replicate_metric(o: Outcomes, draws: Draws) -> NDArray[np.float64]:
    """The metric of every replicate in ``draws`` at once: shape (B,)."""
    return _replicates(o, _flatten(o), draws)


def bootstrap_replicates(
    o: Outcomes, replicates: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    if o.n_cases == 0:
        return np.full(replicates, np.nan)
    flat = _flatten(o)
    parts = [_replicates(o, flat, d) for d in iter_draws(o.n_cases, replicates, rng)]
    return np.concatenate(parts)


@dataclass(frozen=True)
class BootstrapEstimate:
    """A bootstrapped score: ``mean`` of the replicates, the 2.5th/97.5th percentiles
    ``low``/``high`` and ``point``, the metric on the full data."""

    point: float
    mean: float
    low: float
    high: float

    @property
    def upper(self) -> float:
        """Distance from the mean to the 97.5th percentile (the paper's superscript)."""
        return self.high - self.mean

    @property
    def lower(self) -> float:
        """Distance from the mean down to the 2.5th percentile (the paper's subscript)."""
        return self.mean - self.low


def summarize(replicates: NDArray[np.float64], point: float) -> BootstrapEstimate:
    if replicates.size == 0 or np.isnan(replicates).all():
        nan = float("nan")
        return BootstrapEstimate(point=point, mean=nan, low=nan, high=nan)
    low, high = np.percentile(replicates, [2.5, 97.5])
    return BootstrapEstimate(
        point=point, mean=float(replicates.mean()), low=float(low), high=float(high)
    )


def bootstrap(o: Outcomes, replicates: int, rng: np.random.Generator) -> BootstrapEstimate:
    """Bootstrap the domain's metric (paper B.3)."""
    return summarize(bootstrap_replicates(o, replicates, rng), point_metric(o))


def paired_difference(
    a: Outcomes, b: Outcomes, replicates: int, rng: np.random.Generator
) -> BootstrapEstimate:
    """Bootstrap of ``metric(b) - metric(a)`` with the same draws for both.

    Both must hold the same cases in the same order (see ``Outcomes.subset``); each
    replicate resamples the same cases and uses the same uniform number to pick each
    case's sample in both, so case difficulty cancels out of the difference.
    """
    if a.case_ids != b.case_ids:
        raise ValueError("a paired difference needs the same cases in the same order")
    if a.kind != b.kind:
        raise ValueError("a paired difference needs two outcomes of the same kind")
    if a.n_cases == 0:
        return summarize(np.array([]), float("nan"))
    fa, fb = _flatten(a), _flatten(b)
    diffs = [
        _replicates(b, fb, d) - _replicates(a, fa, d)
        for d in iter_draws(a.n_cases, replicates, rng)
    ]
    return summarize(np.concatenate(diffs), point_metric(b) - point_metric(a))
