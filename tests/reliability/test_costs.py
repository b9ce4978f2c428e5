"""``score --costs``: the expected cost per case of a SARA Numeric run worked by hand.

Gold tax 10,000 in five cases, one sample each: 10,000 (right, $0); 4,000 (underpaid
6,000 > max($5,000, 10% of 10,000): 20% penalty, $1,200); 8,000 (underpaid 2,000, below
the threshold, $0); 12,000 (overpaid 2,000, all lost: $2,000); an abstention ($270).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reliability_runs import cli as _cli
from reliability_runs import write_run

from deonticbench._paths import EVAL

GOLD: dict[str, int | str] = {f"c{i}": 10000 for i in range(1, 6)}
ANSWERS = {"c1": [10000.0], "c2": [4000.0], "c3": [8000.0], "c4": [12000.0], "c5": [None]}
COSTS = """\
sara_numeric:
  abstain: 270
  overpayment_weight: 1.0
  underpayment: {rate: 0.2, threshold_abs: 5000, threshold_rel: 0.1}
"""


@pytest.mark.slow
def test_expected_cost_per_case_of_the_three_policies(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", "test:m", "sara_numeric", "direct", GOLD, ANSWERS)
    costs = tmp_path / "costs.yaml"
    costs.write_text(COSTS)
    out = tmp_path / "out"
    done = _cli("score", str(run), "--costs", str(costs), "-B", "50", "--out", str(out))
    assert done.returncode == 0, done.stderr
    section = json.loads((out / "results.json").read_text())["costs"]
    assert section["signal"] == "consistency"
    rows = {r["policy"]: r for r in section["rows"]}
    assert rows["always_answer"]["point"] == pytest.approx((0 + 1200 + 0 + 2000 + 270) / 5)
    assert rows["always_abstain"]["point"] == pytest.approx(270)
    # Left out in turn, every case sees the other four cost more answered than abstained
    # (e.g. without c4: (0 + 1200 + 0 + 270) / 4 = 367.5 > 270), so each abstains.
    assert rows["best_selective"]["point"] == pytest.approx(270)
    assert rows["best_selective"]["thresholds"] == [None] * 5  # never answer
    assert rows["always_answer"]["accuracy"] == pytest.approx(0.2)
    assert "Expected cost per case" in (out / "reliability.md").read_text()


@pytest.mark.slow
def test_the_shipped_file_states_no_abstention_cost(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", "test:m", "sara_numeric", "direct", GOLD, ANSWERS)
    done = _cli("score", str(run), "--costs", str(EVAL / "costs.yaml"), "-B", "20")
    assert done.returncode == 2
    assert "gives no 'abstain' cost for sara_numeric" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_flat_cost_for_a_binary_domain_and_bad_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("sara_binary: {abstain: 1, underpayment: {rate: 0.2}}\n")
    run = write_run(tmp_path / "run", "test:m", "sara_numeric", "direct", GOLD, ANSWERS)
    done = _cli("score", str(run), "--costs", str(bad))
    assert done.returncode == 2
    assert "is not numeric; give it a flat 'wrong' cost" in done.stderr
