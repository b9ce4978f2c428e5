"""``report`` refuses a run folder with nothing to score, in the sentence ``score`` uses
and writes no page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.slow
def test_report_on_empty_records_refuses_like_score(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text("")
    scored = _cli("score", str(run))
    reported = _cli("report", str(run))
    assert scored.returncode != 0 and reported.returncode == scored.returncode
    sentence = f"None of the given run folders holds a scorable record ({run})."
    assert sentence in scored.stderr and sentence in reported.stderr
    assert not (run / "report.html").exists()
