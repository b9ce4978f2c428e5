"""The caveats the terminal prints under a run are results.json's ``notes`` and the
report's first page, from one source: housing smoke, whose gold labels are
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_cell_whose_bootstrap_mean_is_far_from_its_point_has_a_note(tmp_path: Path) -> None:
    """SARA Bin. smoke by the reference: every sample correct, point 100, yet the bootstrap
    mean is near 96, since some replicates draw one gold class only.  The note says so, by
    the same rule for every domain (airline, all correct at 100 +0 -0, gets none)."""
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "eval", "--model", "reference", "--split",
         "smoke", "--domains", "sara_binary,airline", "--modes", "zero-shot", "-k", "1",
         "--out", str(run), "--no-cache"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    from deonticbench.scoring.scores import score_runs

    (scores,) = score_runs([run], bootstrap=1000)
    g = scores.group("sara_binary", "zero-shot", "first")
    assert g is not None and g.estimate.point == 1.0 and g.estimate.mean < 0.98
    gaps = [n for n in scores.notes if "bootstrap mean" in n]
    assert len(gaps) == 1 and gaps[0].startswith("sara_binary zero-shot (first)")
    assert "of one gold class only" in gaps[0]


def test_the_gap_rule_is_one_for_every_domain() -> None:
    from deonticbench.scoring.notes import bootstrap_gap_note

    assert (
        bootstrap_gap_note("airline", "zero-shot", "first", point=1, mean=0.99, gold=None) is None
    )
    numeric = bootstrap_gap_note("airline", "zero-shot", "first", point=0.5, mean=0.4, gold=None)
    assert numeric is not None and "too small" in numeric
    binary = bootstrap_gap_note("housing", "direct", "first", point=1, mean=0.9, gold=[0, 0, 1])
    assert binary is not None and "about 33% of the replicates" in binary
