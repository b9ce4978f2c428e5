"""Tables fit the terminal: a wide table splits only when the terminal (``COLUMNS``) is
narrower than it, and then says so; ``score`` prints it whole in a wide terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic_runs import write_synthetic_run

from deonticbench.scoring.tables import Table, render_text

WIDE = Table(
    ["Run", "Domain", *(f"column {i}" for i in range(12))],
    [["run", "airline", *(f"{i}.0" for i in range(12))]],
    title="A wide table",
    key_columns=2,
)


def test_a_table_splits_only_below_its_own_width(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = render_text(WIDE, width=250)
    assert "(1 of" not in whole and "split" not in whole
    widest = max(len(line) for line in whole.splitlines())
    assert render_text(WIDE, width=widest) == whole
    narrow = render_text(WIDE, width=widest - 1)
    assert "(1 of 2)" in narrow
    assert f"the table is {widest} characters wide, the terminal {widest - 1}" in narrow
    assert all(len(line) <= widest - 1 for line in narrow.splitlines())
    # The default width is the terminal's, which COLUMNS states.
    monkeypatch.setenv("COLUMNS", "250")
    assert render_text(WIDE) == whole
    monkeypatch.setenv("COLUMNS", "60")
    assert "(1 of" in render_text(WIDE)


@pytest.mark.slow
def test_score_prints_the_whole_table_in_a_wide_terminal(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_synthetic_run(run, "openai:gpt-4.1")

    def score(columns: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "deonticbench", "score", str(run), "--reliability"],
            env={**os.environ, "COLUMNS": columns}, capture_output=True, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    wide, narrow = score("400"), score("60")
    assert "(1 of" not in wide and "split into" not in wide
    assert "(1 of" in narrow and "split into" in narrow
