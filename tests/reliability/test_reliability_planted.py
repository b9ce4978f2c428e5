"""The metrics recover what was planted in real runs, and their intervals are intervals
of the estimators they stand beside.

Three replay runs of the airline whole split (300 cases, K = 4 for the calibrated run
and 2 for the others: 1200 and 600 samples) in the opt-in ``direct-verbal`` mode, made by
``deonticbench eval`` from responses whose ``Confidence: NN%`` line and correctness are
drawn with a fixed seed (``reliability_runs.planted_run``):

* calibrated: right with probability equal to the stated confidence;
* miscalibrated: right 0.2 less often than the stated confidence;
* noise: right with probability 0.6 whatever the stated confidence.

Then ``deonticbench score --reliability --out`` and its results.json are checked.  The
calibrated run has more samples because ECE over 10 equal-mass bins is biased upwards
by about 0.8 * sqrt(p (1 - p) / per-bin count): 0.05 with 60 samples a bin, 0.036 with
120 (docs/reliability.md).  A fourth, smaller calibrated run (airline hard, 80 cases,
K = 4) is where that bias showed in the intervals: a bootstrap replicate of one sample
per case (80 items) read a larger ECE and Kuiper statistic than the point on all 320.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from reliability_runs import Planted, cli, planted_run
from shared_work import shared_folder
from sklearn.metrics import brier_score_loss, roc_auc_score

from deonticbench.reliability import confidence_metrics as m
from deonticbench.reliability.evaluate import evaluate_signal
from deonticbench.reliability.signals import run_signals
from deonticbench.scoring.metrics import iter_draws
from deonticbench.scoring.seeds import domain_rng
from deonticbench.store.run import read_run

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
    ),
]


def _scored(root: Path, name: Planted, seed: int, k: int, split: str) -> dict[str, Any]:
    """The verbal signal's group of results.json's reliability section."""
    run = planted_run(root, DATA, name, seed=seed, k=k, split=split)
    out = root / f"{name}-scored"
    done = cli("score", str(run), "--reliability", "-B", "300", "--out", str(out), data=DATA)
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    (verbal,) = [g for g in results["reliability"]["groups"] if g["signal"] == "verbal"]
    n_cases = len(read_run(run).records) // k
    assert verbal["n_samples"] == n_cases * k and n_cases * k >= 300
    return verbal


PLANTS: tuple[tuple[Planted, int, int], ...] = (
    ("calibrated", 11, 4),
    ("miscalibrated", 12, 2),
    ("noise", 13, 2),
)
"""(name, seed, K) of the three whole-split runs the first three tests read."""


def _plant(root: Path) -> None:
    """The three runs, made and scored at once (each an ``eval`` then a ``score``), their
    verbal groups written as planted.json."""
    with ThreadPoolExecutor(len(PLANTS)) as pool:
        groups = pool.map(lambda p: (p[0], _scored(root, p[0], p[1], p[2], "whole")), PLANTS)
        found = dict(groups)
    (root / "planted.json").write_text(json.dumps(found), encoding="utf-8")


@pytest.fixture(scope="session")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Made once per session, for every xdist worker (``shared_work``)."""
    folder = shared_folder(tmp_path_factory, "reliability-planted", _plant)
    found: dict[str, dict[str, Any]] = json.loads((folder / "planted.json").read_text())
    return found


@pytest.mark.slow
def test_a_calibrated_confidence_is_found_calibrated(planted: dict[str, Any]) -> None:
    metrics = planted["calibrated"]["metrics"]
    assert metrics["ece"]["point"] <= 0.05
    assert metrics["kuiper_p"]["point"] > 0.05
    # A calibrated model's ECE is what chance gives at this item count, not zero.
    assert abs(metrics["ece"]["point"] - planted["calibrated"]["ece_if_calibrated"]) < 0.02


@pytest.mark.slow
def test_a_confidence_0_2_too_high_is_found_miscalibrated(planted: dict[str, Any]) -> None:
    metrics = planted["miscalibrated"]["metrics"]
    assert metrics["ece"]["point"] >= 0.15
    assert metrics["ece"]["point"] > 3 * planted["miscalibrated"]["ece_if_calibrated"]
    assert metrics["kuiper_p"]["point"] < 0.01
    # The reliability diagram sits about 0.2 below the diagonal in every bin.
    diagram = planted["miscalibrated"]["reliability_diagram"]
    gaps = np.subtract(diagram["confidence"], diagram["accuracy"])
    assert 0.1 < float(np.mean(gaps)) < 0.3


def test_a_noise_confidence_ranks_no_better_than_chance(planted: dict[str, Any]) -> None:
    auroc = planted["noise"]["metrics"]["auroc"]
    assert auroc["ci_low"] <= 0.5 <= auroc["ci_high"]
    # The informative confidences do rank: their intervals exclude 0.5.
    assert planted["calibrated"]["metrics"]["auroc"]["ci_low"] > 0.5


@pytest.mark.slow
def test_the_intervals_of_a_small_calibrated_run_stand_at_their_points(tmp_path: Path) -> None:
    """Airline hard, K = 4: ECE and the Kuiper statistic are biased upward at small item
    counts, so a replicate must have the point's item count for its interval to reach
    down to the point (in a simulation of 60 such runs it started at most 0.012 above);
    every other metric's point lies inside its interval."""
    group = _scored(tmp_path, "calibrated", 11, 4, "hard")
    for name in ("ece", "kuiper"):
        v = group["metrics"][name]
        assert v["ci_low"] <= v["point"] + 0.01, (name, v)
    for name, v in group["metrics"].items():
        if name not in ("ece", "kuiper", "kuiper_p"):
            assert v["ci_low"] <= v["point"] <= v["ci_high"], (name, v)
    assert 0.0 < group["ece_if_calibrated"] < 0.15


def test_a_replicate_is_the_point_estimator_on_every_sample_of_its_cases(
    tmp_path: Path,
) -> None:
    """One replicate (B = 1): its values are the metrics of all K samples of each case
    the bootstrap drew (the main table's draws), recomputed here independently."""
    run = planted_run(tmp_path, DATA, "calibrated", seed=5, k=4, split="hard")
    (g,) = [g for g in run_signals(read_run(run), combined=False) if g.mode == "direct-verbal"]
    report = evaluate_signal(g, "verbal", replicates=1, seed=3)
    (draw,) = iter_draws(g.outcomes.n_cases, 1, domain_rng(3, "airline"))
    cases = draw.case[0]
    s = np.asarray(g.signals["verbal"])[cases].ravel()
    y = g.correct[cases].ravel().astype(float)
    assert s.size == report.n_samples == g.outcomes.n_cases * 4
    expected = {
        "brier": brier_score_loss(y, s),
        "auroc": roc_auc_score(y, s),
        # Kuiper at the ends of tie blocks does not depend on the order within a tie.
        "kuiper": float(m.kuiper(s, y)[0][0]),
    }
    for name, want in expected.items():
        got = report.metrics[name]
        assert got.low == got.high == pytest.approx(want, abs=1e-12), name
    assert report.metrics["brier"].point == pytest.approx(
        brier_score_loss(g.correct[g.valid].astype(float), np.asarray(g.signals["verbal"])[g.valid])
    )
