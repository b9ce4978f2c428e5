"""The caveats the terminal prints under a run are results.json's ``notes`` and the
report's first page, from one source (issue 18.4): housing smoke, whose gold labels are
all 'yes', so macro-F1 is capped at 50."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)


def test_terminal_notes_are_in_results_json_and_the_report(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "eval", "--model", "reference", "--split",
         "smoke", "--domains", "housing", "--modes", "zero-shot", "-k", "1", "--out", str(run),
         "--no-cache", "--score"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = [
        line.removeprefix("note: ")
        for line in (done.stdout + done.stderr).splitlines()
        if line.startswith("note: every")
    ]
    assert printed and "capped at 50" in printed[0]
    notes = json.loads((run / "results.json").read_text())["notes"]
    assert printed[0] in notes
    page = (run / "report.html").read_text()
    first = page.index('id="notes"')
    assert first < page.index('id="scores"')  # on the first page, before the tables
    assert "capped at 50" in page[first:]
