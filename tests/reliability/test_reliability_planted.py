"""The metrics recover what was planted in real runs.

Three replay runs of the airline whole split (300 cases, K = 4 for the calibrated run
and 2 for the others: 1200 and 600 samples) in
the opt-in ``direct-verbal`` mode, made by ``deonticbench eval`` from responses whose
``Confidence: NN%`` line and correctness are drawn with a fixed seed:

* calibrated: right with probability equal to the stated confidence;
* miscalibrated: right 0.2 less often than the stated confidence;
* noise: right with probability 0.6 whatever the stated confidence.

Then ``deonticbench score --reliability --out`` and its results.json are checked.  The
calibrated run has more samples because ECE over 10 equal-mass bins is biased upwards
by about 0.8 * sqrt(p (1 - p) / per-bin count): 0.05 with 60 samples a bin, 0.036 with
120 (docs/reliability.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from deonticbench.data.cases import load_cases
from deonticbench.data.sources import resolve_source

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_DATA"] = DATA
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def _planted_run(root: Path, name: str, seed: int, k: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    cases = load_cases("airline", "whole", resolve_source(Path(DATA)))
    assert len(cases) * k >= 500
    lines = []
    for case in cases:
        for sample in range(k):
            if name == "miscalibrated":
                stated = int(rng.integers(30, 96))
                p_right = stated / 100 - 0.2
            elif name == "noise":
                stated = int(rng.integers(5, 96))
                p_right = 0.6
            else:
                stated = int(rng.integers(5, 96))
                p_right = stated / 100
            right = rng.random() < p_right
            value = int(case.gold) if right else int(case.gold) + 50
            response = f"The fees add up.\nAnswer: ${value}\nConfidence: {stated}%"
            lines.append(
                json.dumps(
                    {
                        "domain": "airline",
                        "case_id": case.id,
                        "mode": "direct-verbal",
                        "sample": sample,
                        "response": response,
                    }
                )
            )
    replay = root / f"{name}.jsonl"
    replay.write_text("\n".join(lines) + "\n")
    run, out = root / name, root / f"{name}-scored"
    done = _cli(
        "eval", "--model", f"replay:{replay}", "--split", "whole", "--domains", "airline",
        "--modes", "direct-verbal", "-k", str(k), "--out", str(run), "--no-cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    done = _cli("score", str(run), "--reliability", "-B", "300", "--out", str(out))
    assert done.returncode == 0, done.stderr
    results = json.loads((out / "results.json").read_text())
    (verbal,) = [g for g in results["reliability"]["groups"] if g["signal"] == "verbal"]
    assert verbal["n_samples"] == len(cases) * k
    return verbal


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("planted")
    return {
        name: _planted_run(root, name, seed, k)
        for name, seed, k in (("calibrated", 11, 4), ("miscalibrated", 12, 2), ("noise", 13, 2))
    }


def test_a_calibrated_confidence_is_found_calibrated(planted: dict[str, Any]) -> None:
    metrics = planted["calibrated"]["metrics"]
    assert metrics["ece"]["point"] <= 0.05
    assert metrics["kuiper_p"]["point"] > 0.05


def test_a_confidence_0_2_too_high_is_found_miscalibrated(planted: dict[str, Any]) -> None:
    metrics = planted["miscalibrated"]["metrics"]
    assert metrics["ece"]["point"] >= 0.15
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
