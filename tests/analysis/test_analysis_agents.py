"""``analyze`` runs on an agentic run's final programs as on any other program mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data")
pytestmark = pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")


def _cli(*args: str) -> None:
    env = {**os.environ, "DEONTICBENCH_DATA": DATA}
    done = subprocess.run([sys.executable, "-m", "deonticbench", *args], env=env,
                          capture_output=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()


@pytest.mark.slow
def test_analyze_reads_the_final_programs_of_agentic_trials(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _cli("eval", "--model", "reference", "--modes", "agent-zero-shot,agent-direct",
         "--domains", "airline", "--split", "smoke", "--limit", "1", "-k", "1",
         "--out", str(run), "--no-cache")  # fmt: skip
    _cli("analyze", str(run))
    rows = [json.loads(line) for line in (run / "analysis.jsonl").read_text().splitlines()]
    assert {r["mode"] for r in rows} == {"agent-zero-shot"}  # direct answers have no program
    assert len({r["case_id"] for r in rows}) == 1
    assert all(r["outcome"] == "correct" for r in rows)
