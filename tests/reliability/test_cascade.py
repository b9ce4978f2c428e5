"""``deonticbench cascade`` on a two-run example worked by hand.

Airline, four cases, K = 2.  The small model: c1 right twice (consistency 1), c2 right
once and wrong once (0.5 each), c3 abstains twice (0), c4 the same wrong answer twice
(1).  The large model is always right.  Tokens: 10 + 10 per small sample, 100 + 100 per
large one; prices $1 and $10 per million tokens, so a sample costs $0.00002 (small) and
$0.002 (large).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from reliability_runs import cli as _cli
from reliability_runs import write_run

GOLD: dict[str, int | str] = {"c1": 100, "c2": 200, "c3": 300, "c4": 400}
SMALL = {"c1": [100.0, 100.0], "c2": [200.0, 250.0], "c3": [None, None], "c4": [450.0, 450.0]}
LARGE = {c: [float(v), float(v)] for c, v in GOLD.items()}  # type: ignore[arg-type]
S, L = 2e-5, 2e-3


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    small = write_run(tmp_path / "small", "test:small", "airline", "direct", GOLD, SMALL,
                      tokens=(10, 10))  # fmt: skip
    large = write_run(tmp_path / "large", "test:large", "airline", "direct", GOLD, LARGE,
                      tokens=(100, 100))  # fmt: skip
    prices = tmp_path / "prices.yaml"
    prices.write_text(
        "test:small: {usd_per_mtok_in: 1.0, usd_per_mtok_out: 1.0}\n"
        "test:l*: {usd_per_mtok_in: 10.0, usd_per_mtok_out: 10.0}\n"
    )
    return small, large, prices


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.slow
def test_every_tau_the_frontier_and_the_cross_fitted_tau(runs: tuple[Path, Path, Path]) -> None:
    small, large, prices = runs
    done = _cli("cascade", str(small), str(large), "--prices", str(prices), "--format", "csv",
                "-B", "50")  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {(r["policy"], r["tau"]): r for r in _rows(done.stdout)}
    expected = {
        # (policy, tau): (accuracy, deferred, cost per case, on the frontier)
        ("tau", "0.0"): (0.375, 0.0, S, True),
        ("tau", "0.5"): (0.625, 0.25, S + 0.25 * L, True),
        ("tau", "1.0"): (0.75, 0.5, S + 0.5 * L, True),
        ("tau", "inf"): (1.0, 1.0, S + L, False),  # the large model alone is cheaper
        ("small alone", ""): (0.375, 0.0, S, True),
        ("large alone", ""): (1.0, 1.0, L, True),
    }
    for key, (acc, deferred, cost, pareto) in expected.items():
        row = rows[key]
        assert float(row["point"]) == pytest.approx(acc)
        assert float(row["deferred"]) == pytest.approx(deferred)
        assert float(row["cost_per_case"]) == pytest.approx(cost)
        assert row["cost_unit"] == "USD"
        assert row["pareto"] == str(pareto)
    # Cross-fitting, one case per fold: left out, c1-c3 learn that only deferring
    # everything matches the large model (c4 is confidently wrong), while c4, learning
    # from c1-c3, picks tau = 1 and is answered (wrongly) by the small model.
    crossfit = rows[("cross-fitted", "")]
    assert float(crossfit["point"]) == pytest.approx(0.75)
    assert float(crossfit["deferred"]) == pytest.approx(0.75)
    assert float(crossfit["cost_per_case"]) == pytest.approx(S + 0.75 * L)


@pytest.mark.slow
def test_deferring_to_a_person(runs: tuple[Path, Path, Path]) -> None:
    small, _, prices = runs
    done = _cli(
        "cascade", str(small), "--defer-to", "human", "--human-accuracy", "0.8",
        "--human-cost", "5", "--prices", str(prices), "--format", "csv", "-B", "50",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "right 80% of the time" in done.stdout
    rows = {(r["policy"], r["tau"]): r for r in _rows(done.stdout.split("\n", 1)[1])}
    row = rows[("tau", "1.0")]  # c2 and c3 go to the person
    assert float(row["point"]) == pytest.approx((1 + 0.8 + 0.8 + 0) / 4)
    assert float(row["cost_per_case"]) == pytest.approx(S + 0.5 * 5)
    # The person is no model: its row is named as such, never "large alone".
    assert float(rows[("person alone", "")]["point"]) == pytest.approx(0.8)
    assert ("large alone", "") not in rows


@pytest.mark.slow
def test_without_prices_the_cost_is_in_tokens_and_a_figure_is_written(
    runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    small, large, _ = runs
    out = tmp_path / "out"
    done = _cli("cascade", str(small), str(large), "-B", "20", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "tokens" in done.stdout
    rows = _rows((out / "cascade.csv").read_text())
    tau1 = next(r for r in rows if r["tau"] == "1.0")
    assert float(tau1["cost_per_case"]) == pytest.approx(20 + 0.5 * 200)
    png = (out / "cascade-airline-direct.png").read_bytes()
    assert png.startswith(b"\x89PNG")


@pytest.mark.slow
def test_user_errors_are_one_sentence(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    small, large, _ = runs
    done = _cli("cascade", str(small), "--defer-to", "human")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: --defer-to human needs --human-cost (per case deferred)."
    bad = tmp_path / "bad.yaml"
    bad.write_text("test:small: {usd_per_mtok_in: cheap}\n")
    done = _cli("cascade", str(small), str(large), "--prices", str(bad))
    assert done.returncode == 2
    assert "needs numbers usd_per_mtok_in and usd_per_mtok_out" in done.stderr


@pytest.mark.slow
def test_a_cascade_prices_cache_reads_as_the_bill_does(tmp_path: Path) -> None:
    # Without a --prices file each side is priced as results.json prices it
    # (scoring.results.attempts_cost): Claude's cache reads at their own rate, not at
    # the input price.  A small sample: 10,000 input tokens, 8,000 of them read from the
    # cache, and 1,000 output: 2,000 x $3 + 8,000 x $0.30 + 1,000 x $15 per million.
    small = write_run(tmp_path / "small", "anthropic:claude-sonnet-4-5", "airline", "direct",
                      GOLD, SMALL, tokens=(10_000, 1_000), cache_read=8_000)  # fmt: skip
    large = write_run(tmp_path / "large", "openai:gpt-4.1", "airline", "direct", GOLD, LARGE,
                      tokens=(10_000, 1_000))  # fmt: skip
    done = _cli("cascade", str(small), str(large), "-B", "20", "--format", "csv")
    assert done.returncode == 0, done.stderr
    rows = {r["policy"]: r for r in _rows(done.stdout)}
    assert rows["small alone"]["cost_unit"] == "USD"
    assert float(rows["small alone"]["cost_per_case"]) == pytest.approx(0.006 + 0.0024 + 0.015)
    # gpt-4.1: $2 in, $8 out per million.
    assert float(rows["large alone"]["cost_per_case"]) == pytest.approx(0.02 + 0.008)
