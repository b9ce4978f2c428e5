"""``deonticbench analyze`` and ``exec --explain`` end to end: the real commands, the real
swipl, the data mirror; and the planted-fault validation on a few cases."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from deonticbench.analysis import failure_tables

pytestmark = pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)
ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args], capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("ref") / "run"
    done = run_cli(
        "eval",
        "--model",
        "reference",
        "--split",
        "smoke",
        "--domains",
        "sara_numeric,uscis",
        "--modes",
        "zero-shot",
        "-k",
        "1",
        "--out",
        str(run),
        "--no-cache",
        # The harness prepares a reference answer exactly as the analyser prepares the
        # reference program, so each record adds one program to analyse; the paper
        # reader's preparation (upstream's) differs from it and would add a second.
        "--protocol",
        "harness",
    )
    assert done.returncode == 0, done.stderr
    return run


@pytest.mark.slow
def test_analyze_writes_rows_tables_and_reuses_its_cache(
    reference_run: Path, tmp_path: Path
) -> None:
    done = run_cli("analyze", str(reference_run), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "paper Table 4 layout" in done.stdout and "Impl. Bugs" in done.stdout
    assert "Outcome × derivation" in done.stdout and "correct, not grounded" in done.stdout
    assert "10 distinct programs (10 analysed now" in done.stdout
    first_rows = (reference_run / "analysis.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in first_rows]
    assert len(rows) == 20  # 10 records x (first, final)
    needed = {
        "domain", "case_id", "mode", "sample", "stage", "category", "derivation",
        "signature_jaccard", "undefined", "fact_coverage", "value_recall",
        "first_divergence", "hallucinated_constants", "proof_summary",
    }  # fmt: skip
    assert all(needed <= set(r) for r in rows)
    numeric = [r for r in rows if r["domain"] == "sara_numeric"]
    assert all(r["signature_jaccard"] == 1.0 and r["value_recall"] == 1.0 for r in numeric)
    assert all(r["value_recall"] is None for r in rows if r["domain"] == "uscis")
    assert all(r["category"] is None for r in rows if r["outcome"] == "correct")
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "analysis-tables.txt",
        "analysis-tables.md",
        "analysis.csv",
    }
    again = run_cli("analyze", str(reference_run), "--json")
    assert again.returncode == 0, again.stderr
    assert len(again.stdout.splitlines()) == 20
    assert "0 analysed now, 10 from the cache" in run_cli("analyze", str(reference_run)).stdout
    # The first run diagnosed records as analyser jobs finished, the cached one after
    # reading every report: the same rows, in the same order.
    assert (reference_run / "analysis.jsonl").read_text().splitlines() == first_rows


def test_analyze_rejects_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    done = run_cli("analyze", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "records.jsonl" in done.stderr


def test_exec_explain_with_a_case(tmp_path: Path) -> None:
    data = Path(os.environ["DEONTICBENCH_DATA"]) / "data" / "airline" / "smoke.json"
    case = json.loads(data.read_text())[0]
    program = tmp_path / "p.pl"
    # the third bag charged at the fee of the fourth and later bags: another row of the
    # fee schedule the statutes state (a fee changed to a number they do not state would
    # be a numerical slip)
    program.write_text(case["reference_prolog"].replace("bag_fee(3,150)", "bag_fee(3,200)"))
    done = run_cli("exec", str(program), "--domain", "airline", "--explain", "--case", case["id"])
    assert done.returncode == 0, done.stderr
    assert "[rule, line" in done.stdout and "[fact, line" in done.stdout
    assert "failure category:    wrong_rule" in done.stdout
    assert "first divergence:" in done.stdout


def test_point_biserial_matches_pearson() -> None:
    x = [0.1, 0.9, 0.8, 0.2, 0.7]
    y = [False, True, True, False, True]
    found = failure_tables.point_biserial(x, y)
    assert found is not None
    r, low, high = found
    # the textbook form: (M1 - M0) / s * sqrt(p q), s the population deviation
    pairs = list(zip(x, y, strict=True))
    m1 = sum(v for v, c in pairs if c) / 3
    m0 = sum(v for v, c in pairs if not c) / 2
    mean = sum(x) / 5
    s = (sum((v - mean) ** 2 for v in x) / 5) ** 0.5
    assert r == pytest.approx((m1 - m0) / s * (0.6 * 0.4) ** 0.5)
    assert low <= r <= high
    assert failure_tables.point_biserial([1.0, 1.0, 1.0], [True, False, True]) is None


def _planted() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "planted_faults", ROOT / "scripts" / "planted_faults.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_planted_faults_are_recovered(tmp_path: Path) -> None:
    planted = _planted()
    from deonticbench.solver import Solver

    domains = ["sara_numeric", "airline", "sara_binary"]
    with Solver() as solver:
        replay, labels = planted.build(domains, 2, tmp_path, solver)
    run = planted.run_pipeline(replay, labels, tmp_path, domains)
    result = planted.evaluate(run, labels)
    numeric = result["numeric"]["classes"]
    for cls in ("wrong_rule", "entity_fact", "numerical", "impl_bug", "hard_coded"):
        assert numeric[cls]["n"] >= 2, cls
        assert numeric[cls]["recall"] >= 0.85, (cls, result["numeric"]["confusion"])
    assert result["numeric"]["confusion"]["none"] == {"correct/grounded": 4}
