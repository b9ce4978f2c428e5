"""``deonticbench score`` and ``cascade`` as a user runs them (a subprocess on hand-made run
folders): no silent shrinking of a table, words that say what a number is, and lines a
terminal can show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reliability_runs import cli, write_run

GOLD: dict[str, int | str] = {"c1": 100, "c2": 200, "c3": 300, "c4": 400}
ANSWERS = {"c1": [100.0, 100.0], "c2": [200.0, 250.0], "c3": [None, 300.0], "c4": [450.0, 450.0]}
WIDTH = 100


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", "test:m", "airline", "direct", GOLD, ANSWERS)


@pytest.fixture
def costs(tmp_path: Path) -> Path:
    path = tmp_path / "costs.yaml"
    path.write_text("airline:\n  abstain: 5\n  wrong: 10\n")
    return path


def test_a_misspelt_signal_is_one_sentence_and_exit_2(run: Path, costs: Path) -> None:
    done = cli("score", str(run), "--costs", str(costs), "--signal", "bogus", "-B", "20")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: --signal takes one of consistency, cross_mode, execution, derivation, "
        "verbal, logprob, combined, not 'bogus'."
    ]
    assert done.stdout == ""


@pytest.mark.slow
def test_a_signal_the_run_lacks_says_why_the_cost_table_is_missing(run: Path, costs: Path) -> None:
    done = cli("score", str(run), "--costs", str(costs), "--signal", "verbal", "-B", "20")
    assert done.returncode == 0, done.stderr
    assert "Expected cost per case" not in done.stdout
    note = " ".join(done.stderr.split())
    assert "airline direct (first) has no expected cost: the verbal signal is n/a there" in note
    assert "--confidence verbal" in note


@pytest.mark.slow
def test_the_cost_table_says_its_unit(run: Path, costs: Path) -> None:
    done = cli("score", str(run), "--costs", str(costs), "-B", "20")
    assert done.returncode == 0, done.stderr
    assert "in the costs file's units (amounts owed in dollars)" in done.stdout


@pytest.mark.slow
def test_reliability_lines_fit_a_terminal(run: Path) -> None:
    done = cli("score", str(run), "--reliability", "-B", "20")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines() + done.stderr.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    # Every metric column is still shown, in parts that repeat the row's key columns.
    for header in ("AUROC", "Brier", "Kuiper p", "AURC", "E-AURC"):
        assert header in done.stdout
    assert "(1 of " in done.stdout


@pytest.mark.slow
def test_an_all_abstained_group_is_not_called_right(tmp_path: Path) -> None:
    abstained = {c: [None, None] for c in GOLD}
    run = write_run(tmp_path / "run", "test:m", "airline", "direct", GOLD, abstained)
    out = tmp_path / "out"
    done = cli("score", str(run), "--reliability", "-B", "20", "--out", str(out))
    assert done.returncode == 0, done.stderr
    text = (out / "results.json").read_text()
    assert "every one was right" not in text + done.stdout + done.stderr
    reasons = {
        m.get("na")
        for g in json.loads(text)["reliability"]["groups"]
        for m in g.get("metrics", {}).values()
        if isinstance(m, dict)
    }
    assert any(r and "0 when wrong or abstained" in r for r in reasons), reasons


def test_each_table_says_whether_it_shows_the_bootstrap_mean_or_the_point(
    tmp_path: Path,
) -> None:
    a = write_run(tmp_path / "a", "test:a", "airline", "direct", GOLD, ANSWERS)
    b = write_run(tmp_path / "b", "test:b", "airline", "direct", GOLD, ANSWERS)
    done = cli("score", str(a), str(b), "--compare", "-B", "20")
    assert done.returncode == 0, done.stderr
    assert "the bootstrap mean +upper -lower" in done.stdout  # Table 2
    assert "A and B are point values on those cases" in done.stdout  # the pairing
