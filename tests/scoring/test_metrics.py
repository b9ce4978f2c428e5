"""Metrics of paper B.3 on arrays: tolerance, macro-F1, abstentions, the bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import f1_score

from deonticbench.reading.outcomes import within_tolerance
from deonticbench.scoring.metrics import (
    NEGATIVE,
    POSITIVE,
    Outcomes,
    bootstrap,
    bootstrap_replicates,
    effective_class,
    iter_draws,
    numeric_correct,
    paired_difference,
    point_metric,
    rates,
    replicate_metric,
)


def _outcomes(kind, gold, pred, abstain, present=None):
    gold = np.asarray(gold, dtype=float)
    pred = np.asarray(pred, dtype=float)
    if pred.ndim == 1:
        pred = pred[:, None]
    abstain = np.asarray(abstain, dtype=bool).reshape(pred.shape)
    if present is None:
        present = np.full(len(gold), pred.shape[1])
    return Outcomes(
        kind=kind,
        case_ids=tuple(f"c{i:05d}" for i in range(len(gold))),
        gold=gold,
        pred=pred,
        abstain=abstain,
        present=np.asarray(present, dtype=np.intp),
    )


# -- the ±1 tolerance ------------------------------------------------------------------

# (answer, gold, correct), worked out by hand with round half to even.
EDGES = [
    (100.0, 100, True),
    (101.0, 100, True),
    (99.0, 100, True),
    (101.49, 100, True),  # 101
    (101.5, 100, False),  # 102: half to even
    (102.5, 100, False),  # 102
    (100.5, 99, True),  # 100: half to even (half up would give 101, off by 2)
    (-1.5, -3, True),  # -2: half to even (half up would give -1, off by 2)
    (98.5, 100, False),  # 98: half to even, not 99
    (98.51, 100, True),  # 99
    (97.5, 100, False),  # 98
    (99.5, 100, True),  # 100
    (-6.5, -5, True),  # -6
    (-7.5, -5, False),  # -8
    (-3.5, -5, True),  # -4
    (-2.5, -5, False),  # -2
    (0.5, -1, True),  # 0
    (-0.5, 1, True),  # -0
    (-1.5, 0, False),  # -2
    (-1.0, 0, True),  # a real -1 is within $1 of 0; an abstention is not (below)
    (2.0, 1, True),
    (3.0, 1, False),
    (1e15 + 0.5, 10**15, True),  # exactly representable; rounds to the even 1e15
]


@pytest.mark.parametrize(("answer", "gold", "expected"), EDGES)
def test_tolerance_edges_agree_with_outcomes_judge(
    answer: float, gold: int, expected: bool
) -> None:
    verdict = numeric_correct(np.array([answer]), np.array([False]), np.array([float(gold)]))
    assert bool(verdict[0]) is expected
    assert within_tolerance(answer, gold) is expected


@pytest.mark.parametrize("gold", [0, -1, -2, 1])
def test_abstention_is_never_correct_even_when_minus_one_would_be(gold: int) -> None:
    verdict = numeric_correct(np.array([123.0]), np.array([True]), np.array([float(gold)]))
    assert not verdict[0]
    o = _outcomes("numeric", [gold], [[0.0]], [[True]])
    assert point_metric(o) == 0.0
    assert rates(o).abstain == 1.0


def test_numeric_point_metric_weights_each_case_once() -> None:
    # case 0: 2 of 4 correct (weight 1/2); case 1: 1 of 1 present correct (ragged).
    o = _outcomes(
        "numeric",
        [10, 20],
        [[10, 10, 50, 50], [20, 0, 0, 0]],
        [[False] * 4, [False] * 4],
        present=[4, 1],
    )
    assert point_metric(o) == pytest.approx(0.75)
    r = rates(o)
    assert (r.accuracy, r.wrong, r.abstain) == pytest.approx((0.75, 0.25, 0.0))


# -- macro-F1 against scikit-learn ---------------------------------------------------------


@pytest.mark.parametrize("abstain_share", [0.0, 0.3])
@pytest.mark.parametrize("seed", range(6))
def test_macro_f1_equals_scikit_learn(seed: int, abstain_share: float) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    gold = rng.integers(0, 2, n)
    pred = rng.integers(0, 2, n)
    abstain = rng.random(n) < abstain_share
    o = _outcomes("binary", gold, pred, abstain)
    # The paper maps an abstention to the class opposite the gold label.
    mapped = np.where(abstain, 1 - gold, pred)
    expected = f1_score(gold, mapped, average="macro", labels=[POSITIVE, NEGATIVE], zero_division=0)
    assert point_metric(o) == pytest.approx(expected, abs=1e-12)


def test_macro_f1_replicates_equal_scikit_learn_on_the_drawn_samples() -> None:
    rng = np.random.default_rng(7)
    n, k = 40, 3
    gold = rng.integers(0, 2, n)
    pred = rng.integers(0, 2, (n, k))
    abstain = rng.random((n, k)) < 0.25
    present = rng.integers(1, k + 1, n)
    o = _outcomes("binary", gold, pred, abstain, present)
    draws = next(iter_draws(n, 25, np.random.default_rng(3)))
    got = replicate_metric(o, draws)
    for b in range(25):
        cases = draws.case[b]
        cols = np.floor(draws.u[b] * present[cases]).astype(int)
        y_true = gold[cases]
        y_pred = np.where(abstain[cases, cols], 1 - y_true, pred[cases, cols])
        want = f1_score(y_true, y_pred, average="macro", labels=[0, 1], zero_division=0)
        assert got[b] == pytest.approx(want, abs=1e-12)


def test_macro_f1_of_an_empty_class_is_zero_not_skipped() -> None:
    # Only positives, all predicted right: F1(pos) = 1, F1(neg) has 2TN+FP+FN = 0 -> 0.
    o = _outcomes("binary", [POSITIVE] * 5, [POSITIVE] * 5, [False] * 5)
    assert point_metric(o) == 0.5
    # scikit-learn agrees once told both labels exist (its default would drop the class).
    assert f1_score([0] * 5, [0] * 5, average="macro", labels=[0, 1], zero_division=0) == 0.5


def test_abstention_maps_to_the_opposite_class() -> None:
    gold = np.array([POSITIVE, NEGATIVE], dtype=float)
    mapped = effective_class(np.zeros(2), np.array([True, True]), gold)
    assert mapped.tolist() == [False, True]  # True means "predicted positive"


# -- the bootstrap ---------------------------------------------------------------------


def _random_numeric(seed: int, n: int = 300, k: int = 3) -> Outcomes:
    rng = np.random.default_rng(seed)
    gold = rng.integers(-3, 3000, n)
    noise = rng.choice([0.0, 0.4, 1.0, 5.0], size=(n, k))
    return _outcomes("numeric", gold, gold[:, None] + noise, rng.random((n, k)) < 0.1)


def test_bootstrap_is_bit_reproducible_for_a_seed_and_differs_for_another() -> None:
    o = _random_numeric(1)
    a = bootstrap_replicates(o, 500, np.random.default_rng(42))
    b = bootstrap_replicates(o, 500, np.random.default_rng(42))
    c = bootstrap_replicates(o, 500, np.random.default_rng(43))
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() != c.tobytes()
    assert bootstrap(o, 500, np.random.default_rng(42)) == bootstrap(
        o, 500, np.random.default_rng(42)
    )


def test_bootstrap_in_several_blocks_is_reproducible() -> None:
    # 30,000 cases make each block hold fewer than B replicates, so draws span blocks.
    rng = np.random.default_rng(8)
    gold = rng.integers(0, 2, 30_000)
    o = _outcomes("binary", gold, rng.integers(0, 2, 30_000), rng.random(30_000) < 0.1)
    a = bootstrap_replicates(o, 300, np.random.default_rng(1))
    b = bootstrap_replicates(o, 300, np.random.default_rng(1))
    assert a.shape == (300,)
    assert a.tobytes() == b.tobytes()
    assert len(set(a.tolist())) > 100  # every block resampled afresh


def test_bootstrap_interval_covers_the_true_proportion_about_95_percent() -> None:
    # Each case is correct with probability p, so the metric's true value is p; a 95%
    # percentile interval should contain it in about 95% of repeated studies.  One sample
    # per case: with K > 1 the paper's interval describes a one-sample-per-case score and
    # is wider than the sampling error of the all-K average (see docs/scoring.md).
    p, n, k, studies, replicates = 0.3, 150, 1, 300, 400
    rng = np.random.default_rng(2024)
    hits = 0
    for _ in range(studies):
        correct = rng.random((n, k)) < p
        o = _outcomes("numeric", np.zeros(n), np.where(correct, 0.0, 50.0), np.zeros((n, k)))
        est = bootstrap(o, replicates, rng)
        hits += est.low <= p <= est.high
    coverage = hits / studies
    # Binomial sd at 300 studies is ~1.3 points; the percentile bootstrap runs slightly low.
    assert 0.90 <= coverage <= 0.99, coverage


def test_paired_difference_of_a_run_with_itself_is_exactly_zero() -> None:
    o = _random_numeric(3)
    diff = paired_difference(o, o, 300, np.random.default_rng(0))
    assert (diff.point, diff.mean, diff.low, diff.high) == (0.0, 0.0, 0.0, 0.0)


def test_paired_difference_uses_the_same_draws_for_both_runs() -> None:
    a = _random_numeric(4)
    b_pred = a.pred.copy()
    b_pred[0] = a.gold[0]  # run b answers case 0 right with every sample
    b_abstain = a.abstain.copy()
    b_abstain[0] = False
    b = Outcomes("numeric", a.case_ids, a.gold, b_pred, b_abstain, a.present)
    diff = paired_difference(a, b, 400, np.random.default_rng(9))
    ra = bootstrap_replicates(a, 400, np.random.default_rng(9))
    rb = bootstrap_replicates(b, 400, np.random.default_rng(9))
    assert diff.mean == pytest.approx(float(np.mean(rb - ra)), abs=1e-12)
    assert diff.low >= 0.0  # b is never worse than a on any resample
    assert diff.point == pytest.approx(point_metric(b) - point_metric(a))


def test_outcomes_reject_inconsistent_shapes() -> None:
    with pytest.raises(ValueError):
        _outcomes("numeric", [1, 2], [[1.0], [2.0]], [[False], [False]], present=[1, 2])
