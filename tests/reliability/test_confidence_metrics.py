"""The reliability metrics against independent computations: scikit-learn where it has
the metric, brute force over orders and hand-worked cases where it does not."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, roc_auc_score

from deonticbench.reliability import confidence_metrics as m


def _tied_sample(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 11, n) / 10.0  # eleven distinct values: many ties
    y = (rng.random(n) < s).astype(float)
    return s, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auroc_and_brier_equal_scikit_learn_with_ties(seed: int) -> None:
    s, y = _tied_sample(200, seed)
    assert m.auroc(s, y)[0] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert m.brier(s, y)[0] == pytest.approx(brier_score_loss(y, s), abs=1e-12)


def test_auroc_is_undefined_with_one_class() -> None:
    s = np.array([0.2, 0.9, 0.5])
    assert math.isnan(m.auroc(s, np.ones(3))[0])
    assert math.isnan(m.auroc(s, np.zeros(3))[0])


def test_rows_are_independent_replicates() -> None:
    rows = [_tied_sample(50, seed) for seed in range(4)]
    s = np.stack([r[0] for r in rows])
    y = np.stack([r[1] for r in rows])
    for fn in (m.auroc, m.brier, m.ece, lambda a, b: m.aurc(a, b)[0]):
        together = fn(s, y)
        alone = [fn(s[i], y[i])[0] for i in range(4)]
        assert together == pytest.approx(alone, abs=1e-12)


def test_ece_equal_mass_bins_by_hand() -> None:
    # 10 items, 3 bins of sizes 4, 3, 3 (array_split), sorted by confidence.
    s = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    y = np.array([0, 0, 1, 0, 1, 0, 1, 1, 1, 1], dtype=float)
    expected = 0.0
    for part_s, part_y in zip(np.array_split(s, 3), np.array_split(y, 3), strict=True):
        expected += len(part_s) / 10 * abs(part_y.mean() - part_s.mean())
    # bin 1: acc .25 conf .25 -> 0; bin 2: acc 2/3 conf .6; bin 3: acc 1 conf .9
    assert expected == pytest.approx(0.3 * (2 / 3 - 0.6) + 0.3 * 0.1)
    assert m.ece(s, y, bins=3)[0] == pytest.approx(expected)
    # Shuffled input gives the same bins.
    order = np.random.default_rng(0).permutation(10)
    assert m.ece(s[order], y[order], bins=3)[0] == pytest.approx(expected)


def test_kuiper_statistic_by_hand() -> None:
    # Sorted: s = .2 .4 .6 .8, y = 1 0 0 1 -> y - s = .8 -.4 -.6 .2
    # C = .2, .1, -.05, 0 (divided by n = 4); with C_0 = 0: max .2, min -.05.
    s = np.array([0.8, 0.2, 0.6, 0.4])
    y = np.array([1.0, 1.0, 0.0, 0.0])
    stat, sigma = m.kuiper(s, y)
    assert stat[0] == pytest.approx(0.25)
    assert sigma[0] == pytest.approx(math.sqrt(0.16 + 0.24 + 0.24 + 0.16) / 4)


def test_kuiper_reads_ties_only_at_their_ends() -> None:
    # Two items at .5, one right one wrong: inside the block C peaks at .5/2 but a
    # threshold cannot split a tie, so only the block's end (C = 0) counts.
    s = np.array([0.5, 0.5])
    stat, _ = m.kuiper(s, np.array([1.0, 0.0]))
    assert stat[0] == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("x", "p"),
    [(1.0, 0.936635), (2.0, 0.181494), (5.186, 8.6e-07), (6.780, 4.8e-11)],
)
def test_kuiper_pvalue_reproduces_published_values(x: float, p: float) -> None:
    # Kuiper(1), Kuiper(2): the range distribution; 5.186 and 6.780: figure captions of
    # Arrieta-Ibarra et al. (JMLR 2022).
    assert m.kuiper_pvalue(x) == pytest.approx(p, rel=0.02, abs=1e-7)


def test_kuiper_pvalue_is_continuous_and_matches_a_simulation() -> None:
    # The two series agree where they meet...
    assert m.kuiper_pvalue(2.0 - 1e-9) == pytest.approx(m.kuiper_pvalue(2.0), abs=1e-8)
    # ...and the tail is the range of a simulated Brownian motion's.
    rng = np.random.default_rng(7)
    steps = rng.standard_normal((3000, 1000)) / math.sqrt(1000)
    walk = np.cumsum(steps, axis=1)
    ranges = np.maximum(walk.max(axis=1), 0) - np.minimum(walk.min(axis=1), 0)
    # (A walk of 1000 steps under-reads the range by about 0.037, hence the tolerance.)
    for x in (1.0, 2.5):
        assert m.kuiper_pvalue(x) == pytest.approx(np.mean(ranges > x), abs=0.04)


def _aurc_by_enumeration(s: np.ndarray, y: np.ndarray) -> float:
    """The mean over every order consistent with the confidence ranking."""
    n = len(s)
    blocks = [np.flatnonzero(s == v) for v in sorted(set(s), reverse=True)]
    total, count = 0.0, 0
    for perms in itertools.product(*(itertools.permutations(b) for b in blocks)):
        order = [i for p in perms for i in p]
        errors = np.cumsum(1 - y[order])
        total += float(np.mean(errors / np.arange(1, n + 1)))
        count += 1
    return total / count


def test_aurc_with_ties_is_the_expectation_over_tie_orders() -> None:
    s = np.array([0.9, 0.9, 0.9, 0.5, 0.5, 0.2, 0.2, 0.2])
    y = np.array([1, 0, 1, 1, 0, 0, 1, 0], dtype=float)
    assert m.aurc(s, y)[0][0] == pytest.approx(_aurc_by_enumeration(s, y), abs=1e-12)


def test_e_aurc_is_zero_for_the_oracle_and_matches_the_worked_example() -> None:
    y = np.array([1.0] * 7 + [0.0] * 3)
    oracle = np.linspace(1, 0, 10)
    area, excess = m.aurc(oracle, y)
    assert area[0] == pytest.approx(0.06472, abs=1e-5)  # r = 0.3, n = 10
    assert excess[0] == pytest.approx(0.0, abs=1e-12)
    # A constant confidence: every order equally likely, risk 0.3 at every coverage.
    area, excess = m.aurc(np.full(10, 0.5), y)
    assert area[0] == pytest.approx(0.3)
    assert excess[0] == pytest.approx(0.3 - 0.06472, abs=1e-5)


def test_selective_accuracy_and_reachable_coverage_by_hand() -> None:
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05])
    y = np.array([1, 1, 1, 1, 0, 1, 1, 0, 0, 0], dtype=float)
    # Top 5 hold 4 right; top 8 hold 6 right; top 9 hold 6 right.
    assert m.accuracy_at_coverage(s, y, 0.5)[0] == pytest.approx(0.8)
    assert m.accuracy_at_coverage(s, y, 0.8)[0] == pytest.approx(6 / 8)
    assert m.accuracy_at_coverage(s, y, 0.9)[0] == pytest.approx(6 / 9)
    # Accuracy >= 90%: the top 4 (100%); top 7 give 6/7 < 90%.
    assert m.coverage_at_accuracy(s, y, 0.9)[0] == pytest.approx(0.4)
    assert m.coverage_at_accuracy(s, np.zeros(10), 0.9)[0] == 0.0
    # A tie cannot be split: a block of four at the top with three right is 75%,
    # though its first two, ranked apart, would reach 100%.
    y2 = np.array([1, 1, 0, 1, 1, 1, 1, 0, 0, 0], dtype=float)
    assert m.coverage_at_accuracy(s, y2, 0.9)[0] == pytest.approx(0.2)
    tied = np.array([0.9] * 4 + [0.1] * 6)
    assert m.coverage_at_accuracy(tied, y2, 0.9)[0] == 0.0


def test_the_calibrated_reference_ece_in_cases_worked_exactly() -> None:
    rng = np.random.default_rng(0)
    # Confidences of 0 and 1 decide every outcome: a calibrated model has ECE 0.
    assert m.calibrated_ece(np.array([0.0, 1.0] * 50), rng) == 0.0
    # Ten items at 0.5, one a bin: every bin is off by exactly one half.
    assert m.calibrated_ece(np.full(10, 0.5), rng) == pytest.approx(0.5)


def test_the_calibrated_reference_ece_is_the_binomial_expectation() -> None:
    # 200 items at p = 0.3 make ten bins of 20: each bin's |share right - p| has the
    # expectation sum_k C(20, k) p^k (1 - p)^(20 - k) |k/20 - p|, and so has their mean.
    p, per_bin = 0.3, 20
    exact = sum(
        math.comb(per_bin, k) * p**k * (1 - p) ** (per_bin - k) * abs(k / per_bin - p)
        for k in range(per_bin + 1)
    )
    draws = 4000
    got = m.calibrated_ece(np.full(10 * per_bin, p), np.random.default_rng(1), draws)
    # One draw's ECE (a mean of ten bins) varies by about 0.02: 3 standard errors.
    spread = math.sqrt(p * (1 - p) / per_bin) * 0.6 / math.sqrt(10)
    assert got == pytest.approx(exact, abs=3 * spread / math.sqrt(draws))
    assert 0.07 < exact < 0.09
