"""Calibration, ranking and selective-answering metrics of a confidence, vectorised.

Every function takes ``s`` (confidence in [0, 1]) and ``y`` (1 = correct) as 2-D arrays
of shape (replicates, items) and returns one value per row, so a whole bootstrap is
scored at once; a single sample is a one-row array.  Pure numpy; scikit-learn is only
the tests' independent check.  Formulas and references are in docs/reliability.md.

Ties are handled deterministically: AUROC uses mid-ranks; the risk-coverage curve is the
expectation over uniformly random orders within a block of equal confidences; the
Kuiper statistic is read at the ends of tie blocks (a threshold cannot split a tie), which
can only lower it, so its p-value is conservative.  A value that is undefined for a row
(AUROC with one class, Kuiper when every confidence is 0 or 1) is NaN; the caller turns
it into "n/a" with the reason (``UNDEFINED``).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

ECE_BINS = 10
"""Equal-mass bins of the expected calibration error (and the reliability diagram)."""
COVERAGES = (0.5, 0.8, 0.9)
"""Coverages at which selective accuracy is reported."""
TARGET_ACCURACIES = (0.9, 0.95)
"""Accuracies for which the largest reachable coverage is reported."""
CALIBRATED_DRAWS = 1000
"""Outcome draws behind the calibrated-reference ECE (``calibrated_ece``): its Monte Carlo
standard error is about 1 % of its value (one draw's ECE has a standard deviation of about
a quarter of its mean: 0.016 of 0.059 with 320 items)."""
_CALIBRATED_BLOCK_CELLS = 1 << 18
"""Draws are scored in blocks of about this many items, so memory stays bounded."""
_EPS = 1e-12

UNDEFINED = {
    "auroc": "one outcome class only (every sample right, or every sample wrong)",
    "kuiper_p": "every confidence is 0 or 1 and matches its outcome (1 when right, 0 when "
    "wrong or abstained): no scale to test",
}
"""Why a metric can be undefined: the n/a reason shown instead of a number."""


def _rows(a: NDArray[np.generic]) -> Array:
    out = np.asarray(a, dtype=np.float64)
    return out[None, :] if out.ndim == 1 else out


def _sort(s: Array, y: Array, *, descending: bool) -> tuple[Array, Array]:
    key = -s if descending else s
    order = np.argsort(key, axis=1, kind="stable")
    return np.take_along_axis(s, order, axis=1), np.take_along_axis(y, order, axis=1)


def tie_blocks(sorted_s: Array) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """For every position of each sorted row, the first and last position of its block
    of equal values."""
    rows, n = sorted_s.shape
    idx = np.broadcast_to(np.arange(n), (rows, n))
    new = np.ones((rows, n), dtype=bool)
    new[:, 1:] = sorted_s[:, 1:] != sorted_s[:, :-1]
    start = np.maximum.accumulate(np.where(new, idx, 0), axis=1)
    last = np.ones((rows, n), dtype=bool)
    last[:, :-1] = new[:, 1:]
    back = np.where(last, (n - 1) - idx, 0)[:, ::-1]
    end = (n - 1) - np.maximum.accumulate(back, axis=1)[:, ::-1]
    return start, end


# -- proper scores and ranking --------------------------------------------------------


def brier(s: Array, y: Array) -> Array:
    """Mean squared difference between confidence and outcome."""
    s, y = _rows(s), _rows(y)
    return np.asarray(np.mean((s - y) ** 2, axis=1), dtype=np.float64)


def auroc(s: Array, y: Array) -> Array:
    """Probability that a correct sample has higher confidence than a wrong one (ties
    count one half), by mid-ranks; NaN where a row has one class only."""
    s, y = _rows(s), _rows(y)
    ss, yy = _sort(s, y, descending=False)
    start, end = tie_blocks(ss)
    midrank = (start + end) / 2.0 + 1.0
    n_pos = yy.sum(axis=1)
    n_neg = yy.shape[1] - n_pos
    rank_sum = np.sum(midrank * yy, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    return np.asarray(np.where((n_pos > 0) & (n_neg > 0), auc, np.nan), dtype=np.float64)


# -- calibration ----------------------------------------------------------------------


def bin_starts(n: int, bins: int = ECE_BINS) -> NDArray[np.intp]:
    """First position of each equal-mass bin: ``min(bins, n)`` contiguous bins whose
    sizes differ by at most one, the larger ones first (numpy's ``array_split``)."""
    b = max(1, min(bins, n))
    q, r = divmod(n, b)
    sizes = np.full(b, q)
    sizes[:r] += 1
    return np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.intp)


def binned(s: Array, y: Array, bins: int = ECE_BINS) -> tuple[Array, Array, Array]:
    """Equal-mass bins of each row sorted by confidence (stable: ties keep item order):
    (mean confidence, share correct, items) per bin, each of shape (rows, bins)."""
    s, y = _rows(s), _rows(y)
    ss, yy = _sort(s, y, descending=False)
    starts = bin_starts(ss.shape[1], bins)
    counts = np.diff(np.append(starts, ss.shape[1])).astype(np.float64)
    conf = np.add.reduceat(ss, starts, axis=1) / counts
    acc = np.add.reduceat(yy, starts, axis=1) / counts
    return conf, acc, np.broadcast_to(counts, conf.shape)


def ece(s: Array, y: Array, bins: int = ECE_BINS) -> Array:
    """Expected calibration error with equal-mass bins: sum over bins of
    ``n_b / n * |share correct - mean confidence|``."""
    conf, acc, counts = binned(s, y, bins)
    n = counts.sum(axis=1)
    return np.asarray(np.sum(counts * np.abs(acc - conf), axis=1) / n, dtype=np.float64)


def calibrated_ece(
    s: NDArray[np.float64], rng: np.random.Generator, draws: int = CALIBRATED_DRAWS
) -> float:
    """The ECE a perfectly calibrated confidence shows at this item count: the mean over
    ``draws`` draws of outcomes ``y_i ~ Bernoulli(s_i)`` of ``ece(s, y)``, the same items
    and bins as the point ("consistency resampling", Broecker and Smith 2007, with the
    confidences kept as they are).  ECE is biased upward at small item counts; a point
    near this value is what chance alone gives a calibrated model."""
    conf = np.asarray(s, dtype=np.float64).ravel()
    block = max(1, _CALIBRATED_BLOCK_CELLS // max(conf.size, 1))
    total, done = 0.0, 0
    while done < draws:
        size = min(block, draws - done)
        y = (rng.random((size, conf.size)) < conf).astype(np.float64)
        total += float(ece(np.broadcast_to(conf, y.shape), y).sum())
        done += size
    return total / draws


def kuiper(s: Array, y: Array) -> tuple[Array, Array]:
    """Tygert's Kuiper statistic of the cumulative differences and its scale.

    Items sorted by confidence, ``C_k = (1/n) sum_{j<=k} (y_j - s_j)`` with ``C_0 = 0``;
    the statistic is ``max C - min C`` over the ends of tie blocks, the scale
    ``sigma = sqrt(sum s (1 - s)) / n`` (the standard deviation of ``C_n`` when the
    confidences are calibrated).  Returns (statistic, sigma) per row.
    """
    s, y = _rows(s), _rows(y)
    ss, yy = _sort(s, y, descending=False)
    n = ss.shape[1]
    c = np.cumsum(yy - ss, axis=1) / n
    _, end = tie_blocks(ss)
    at_end = end == np.arange(n)
    top = np.max(np.where(at_end, c, 0.0), axis=1)
    bottom = np.min(np.where(at_end, c, 0.0), axis=1)
    sigma = np.sqrt(np.sum(ss * (1.0 - ss), axis=1)) / n
    return np.asarray(np.maximum(top, 0.0) - np.minimum(bottom, 0.0)), np.asarray(sigma)


def kuiper_pvalue(x: float) -> float:
    """P(range of a standard Brownian motion on [0, 1] > x): the asymptotic p-value of
    the normalised Kuiper statistic ``x = kuiper / sigma`` when calibrated.

    Below 2 the complement of the distribution function's series (fast for small x);
    from 2 on the tail series ``8 sum_k (-1)^(k-1) k Q(k x)`` (fast for large x); see
    docs/reliability.md for the sources.
    """
    if not math.isfinite(x):
        return float("nan")
    if x <= 0.0:
        return 1.0
    if x < 2.0:
        total = 0.0
        for k in range(200):
            odd = (2 * k + 1) * math.pi
            term = (8.0 / x**2 + 8.0 / odd**2) * math.exp(-(odd**2) / (2.0 * x**2))
            total += term
            if term < 1e-18:
                break
        return min(1.0, max(0.0, 1.0 - total))
    tail = 0.0
    for k in range(1, 40):
        term = k * 0.5 * math.erfc(k * x / math.sqrt(2.0))
        tail += term if k % 2 else -term
        if term < 1e-300:
            break
    return min(1.0, max(0.0, 8.0 * tail))


# -- risk and coverage ----------------------------------------------------------------


def selective_risk(s: Array, y: Array) -> tuple[Array, NDArray[np.bool_]]:
    """The risk-coverage curve of each row: ``risk[:, j - 1]`` is the expected error rate
    of the ``j`` most confident items (random order within ties), and whether position
    ``j`` ends a tie block (a threshold ``s >= tau`` can stop there)."""
    s, y = _rows(s), _rows(y)
    ss, yy = _sort(s, y, descending=True)
    e = 1.0 - yy
    n = ss.shape[1]
    start, end = tie_blocks(ss)
    cum = np.cumsum(e, axis=1)
    before = np.take_along_axis(cum, start, axis=1) - np.take_along_axis(e, start, axis=1)
    after = np.take_along_axis(cum, end, axis=1)
    pos = np.arange(n)
    expected = before + (pos - start + 1) * (after - before) / (end - start + 1)
    return expected / (pos + 1.0), end == pos


def aurc(s: Array, y: Array) -> tuple[Array, Array]:
    """(AURC, E-AURC): the mean selective risk over the n coverages, and its excess over
    the best ranking of the same outcomes (the discrete optimum, so an oracle scores 0)."""
    risk, _ = selective_risk(s, y)
    n = risk.shape[1]
    area = risk.mean(axis=1)
    errors = np.rint(n - _rows(y).sum(axis=1)).astype(np.intp)
    harmonic = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, n + 1))))
    best = (errors - (n - errors) * (harmonic[n] - harmonic[n - errors])) / n
    return np.asarray(area), np.asarray(area - best)


def accuracy_at_coverage(s: Array, y: Array, coverage: float) -> Array:
    """Expected accuracy of the ``ceil(coverage * n)`` most confident items."""
    risk, _ = selective_risk(s, y)
    n = risk.shape[1]
    j = min(n, max(1, math.ceil(coverage * n - _EPS)))
    return np.asarray(1.0 - risk[:, j - 1])


def coverage_at_accuracy(s: Array, y: Array, target: float) -> Array:
    """The largest share of items a threshold on the confidence can answer with accuracy
    at least ``target`` (only cuts between tie blocks; 0 when none reaches it)."""
    risk, ends = selective_risk(s, y)
    n = risk.shape[1]
    ok = ends & (1.0 - risk >= target - _EPS)
    coverage = np.where(ok, (np.arange(n) + 1.0) / n, 0.0)
    return np.asarray(coverage.max(axis=1))


def risk_coverage_curve(s: Array, y: Array, points: int = 101) -> tuple[Array, Array]:
    """Selective accuracy on a fixed grid of coverages (for bands across replicates):
    (coverages, accuracy of shape (rows, points))."""
    risk, _ = selective_risk(s, y)
    n = risk.shape[1]
    grid = np.linspace(1.0 / n, 1.0, points)
    j = np.clip(np.ceil(grid * n - _EPS).astype(np.intp), 1, n)
    return grid, 1.0 - risk[:, j - 1]
