"""Every metric of every signal, with a cluster bootstrap over cases.

Point values use all samples of the group (with the full K every case weighs the same).
Each bootstrap replicate draws N cases with replacement, the very case draws of the main
table (``scoring.metrics.iter_draws`` seeded by ``scoring.seeds.domain_rng``), and keeps
*all* samples of every drawn case: a replicate is the point's own estimator on a resample
of the same item count (N x K with the full K).  The main table keeps one sample per
drawn case, which suits accuracy (a mean reads the same at any item count) but not ECE or
the Kuiper statistic, which grow as the item count falls: replicates of N items sat above
a point of N x K.  The Kuiper test's p-value assumes independent items, which the K
samples of a case are not: it is computed on one sample per case (each case's first),
and is asymptotic.  Beside ECE stands the ECE a perfectly calibrated confidence would
read at the same item count (``metrics.calibrated_ece``), so a small ECE can be read.  A
value that is undefined is n/a with its reason, never a number.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..scoring.metrics import DEFAULT_BOOTSTRAP, iter_draws
from ..scoring.seeds import domain_rng
from . import confidence_metrics as m
from .signals import SIGNALS, GroupSignals

METRICS = (
    "auroc",
    "brier",
    "ece",
    "kuiper",
    "kuiper_p",
    "aurc",
    "e_aurc",
    *(f"acc_at_{round(c * 100)}" for c in m.COVERAGES),
    *(f"cov_at_{round(a * 100)}" for a in m.TARGET_ACCURACIES),
)
"""The metric names, in the order of the tables' columns."""

Replicates = tuple[NDArray[np.intp], NDArray[np.float64], NDArray[np.float64]]
"""Some bootstrap replicates of equal item count: their numbers, and per replicate (row)
the confidences and the correctness of its items."""


def _metric_functions() -> dict[str, Callable[[Any, Any], Any]]:
    fns: dict[str, Callable[[Any, Any], Any]] = {
        "auroc": m.auroc,
        "brier": m.brier,
        "ece": m.ece,
        "kuiper": lambda s, y: m.kuiper(s, y)[0],
        "aurc": lambda s, y: m.aurc(s, y)[0],
        "e_aurc": lambda s, y: m.aurc(s, y)[1],
    }
    for c in m.COVERAGES:
        fns[f"acc_at_{round(c * 100)}"] = partial(_at_coverage, coverage=c)
    for a in m.TARGET_ACCURACIES:
        fns[f"cov_at_{round(a * 100)}"] = partial(_at_accuracy, target=a)
    return fns


def _at_coverage(s: Any, y: Any, *, coverage: float) -> Any:
    return m.accuracy_at_coverage(s, y, coverage)


def _at_accuracy(s: Any, y: Any, *, target: float) -> Any:
    return m.coverage_at_accuracy(s, y, target)


@dataclass(frozen=True)
class MetricValue:
    point: float | None
    mean: float | None
    low: float | None
    high: float | None
    na: str | None = None
    """Why the point value is undefined (then ``point`` is None)."""
    undefined_replicates: int = 0


@dataclass
class SignalReport:
    """The metrics of one signal of one domain x mode x stage."""

    run: str
    model: str
    domain: str
    mode: str
    stage: str
    signal: str
    n_cases: int
    n_samples: int
    metrics: dict[str, MetricValue] = field(default_factory=dict)
    na: str | None = None
    """Set when the signal itself is n/a for the group (then ``metrics`` is empty)."""
    diagram: dict[str, list[float | None]] | None = None
    """Reliability diagram: per equal-mass bin, mean confidence and share correct
    (point) with the share's 2.5/97.5 percentiles over the replicates."""
    curve: dict[str, list[float | None]] | None = None
    """Risk-coverage: selective accuracy on a coverage grid with its band."""
    kuiper_x: float | None = None
    """The normalised Kuiper statistic (on one sample per case) the p-value is of."""
    ece_if_calibrated: float | None = None
    """The mean ECE of a perfectly calibrated confidence with the same values (outcomes
    drawn from them): what ECE reads from chance alone at this item count."""


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def summarise(point: float, reps: NDArray[np.float64], na: str | None) -> MetricValue:
    finite = reps[np.isfinite(reps)]
    undefined = int(reps.size - finite.size)
    if not math.isfinite(point):
        return MetricValue(None, None, None, None, na or "undefined", undefined)
    if finite.size == 0:
        return MetricValue(point, None, None, None, None, undefined)
    low, high = np.percentile(finite, [2.5, 97.5])
    return MetricValue(point, float(finite.mean()), float(low), float(high), None, undefined)


def _cluster_replicates(
    g: GroupSignals, s: NDArray[np.float64], replicates: int, seed: int
) -> Iterator[Replicates]:
    """The replicates of the cluster bootstrap, in blocks of equal item count: each holds
    every sample of each case it drew.  With the full K every replicate has the point's
    N x K items (one block per block of draws); a case with fewer samples makes the
    count vary, and each count is scored as its own block."""
    o = g.outcomes
    width = o.pred.shape[1]
    conf = s.ravel()
    ok = g.correct.ravel().astype(np.float64)
    slot = np.arange(width)
    done = 0
    for d in iter_draws(o.n_cases, replicates, domain_rng(seed, g.domain)):
        numbers = np.arange(done, done + d.case.shape[0])
        done += d.case.shape[0]
        cells = d.case[:, :, None] * width + slot
        keep = slot < o.present[d.case][:, :, None]
        sizes = keep.sum(axis=(1, 2))
        for size in np.unique(sizes):
            rows = sizes == size
            # Row-major boolean selection keeps each replicate's items together, in the
            # order its cases were drawn.
            picked = cells[rows][keep[rows]].reshape(-1, int(size))
            yield numbers[rows], conf[picked], ok[picked]


def _kuiper_test(report: SignalReport, g: GroupSignals, s_all: np.ndarray) -> None:
    """The test of calibration: one (independent) sample per case, each case's first."""
    k_stat, sigma = m.kuiper(s_all[:, :1].T, g.correct[:, :1].T.astype(np.float64))
    if sigma[0] > 0:
        report.kuiper_x = float(k_stat[0] / sigma[0])
        p = m.kuiper_pvalue(report.kuiper_x)
        report.metrics["kuiper_p"] = MetricValue(p, None, None, None)
    elif np.any(s_all[:, 0] != g.correct[:, 0]):
        # Certain (0 or 1) and wrong at least once: calibration is refuted outright.
        report.metrics["kuiper_p"] = MetricValue(0.0, None, None, None)
    else:
        report.metrics["kuiper_p"] = MetricValue(None, None, None, None, m.UNDEFINED["kuiper_p"])


def evaluate_signal(
    g: GroupSignals, name: str, *, replicates: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> SignalReport:
    o = g.outcomes
    report = SignalReport(
        g.run, g.model, g.domain, g.mode, g.stage, name, o.n_cases, int(o.present.sum())
    )
    value = g.signals.get(name)
    if value is None or isinstance(value, str):
        report.na = value or "not computed"
        return report
    s_all = np.asarray(value)
    valid = g.valid
    s = s_all[valid][None, :]
    y = g.correct[valid].astype(np.float64)[None, :]
    functions = _metric_functions()
    reps = {metric: np.full(replicates, np.nan) for metric in functions}
    conf, acc, counts = m.binned(s, y)
    bins = conf.shape[1]
    bin_reps = np.full((replicates, bins), np.nan)
    grid, curve = m.risk_coverage_curve(s, y)
    curve_reps = np.full((replicates, grid.size), np.nan)
    for numbers, rs, ry in _cluster_replicates(g, s_all, replicates, seed):
        for metric, fn in functions.items():
            reps[metric][numbers] = fn(rs, ry)
        _, bin_acc, _ = m.binned(rs, ry, bins)
        bin_reps[numbers, : bin_acc.shape[1]] = bin_acc
        curve_reps[numbers] = m.risk_coverage_curve(rs, ry, grid.size)[1]
    for metric, fn in functions.items():
        point = float(fn(s, y)[0])
        report.metrics[metric] = summarise(point, reps[metric], m.UNDEFINED.get(metric))
    # Its own stream (the bootstrap's are keyed by domain), the same for every group, so
    # two signals with equal confidences get the same reference.
    report.ece_if_calibrated = m.calibrated_ece(s[0], np.random.default_rng(seed))
    _kuiper_test(report, g, s_all)
    report.metrics = {k: report.metrics[k] for k in METRICS}
    _shapes(report, (conf, acc, counts, bin_reps), (grid, curve, curve_reps))
    return report


def _shapes(report: SignalReport, diagram: tuple[Any, ...], curve_parts: tuple[Any, ...]) -> None:
    """The reliability diagram and the risk-coverage curve, each with its band."""
    conf, acc, counts, bin_reps = diagram
    grid, curve, curve_reps = curve_parts
    report.diagram = {
        "confidence": [_finite(v) for v in conf[0]],
        "accuracy": [_finite(v) for v in acc[0]],
        "count": [float(c) for c in counts[0]],
        **dict(zip(("accuracy_low", "accuracy_high"), _band(bin_reps), strict=True)),
    }
    # The replicates have the point's item count, so the band lies on the point's grid
    # (with fewer samples for some case, nearly: the same grid index, its own count).
    report.curve = {
        "coverage": [float(v) for v in grid],
        "accuracy": [_finite(v) for v in curve[0]],
        "band_coverage": [float(v) for v in grid],
        **dict(zip(("accuracy_low", "accuracy_high"), _band(curve_reps), strict=True)),
    }


def _band(values: NDArray[np.float64]) -> tuple[list[float | None], list[float | None]]:
    with warnings.catch_warnings():
        # A bin no replicate reached (only when a replicate has fewer items than bins) is
        # all NaN: its band is n/a (None), which numpy would also warn about.
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanpercentile(values, [2.5, 97.5], axis=0)
    return [_finite(v) for v in low], [_finite(v) for v in high]


def evaluate_groups(
    groups: Sequence[GroupSignals],
    *,
    replicates: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    signals: Sequence[str] = SIGNALS,
) -> list[SignalReport]:
    """Reports for every group x signal (n/a signals included, with their reason)."""
    return [
        evaluate_signal(g, name, replicates=replicates, seed=seed)
        for g in groups
        for name in signals
    ]
