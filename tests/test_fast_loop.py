"""The fast loop's rules, in a real pytest run of a small test file: an unmarked test over
the budget fails and names the marker, a test marked slow is not held to it, and the slow
tests run first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent / "support"

TESTS = """
import time
import pytest

def test_quick():
    pass

def test_sleepy():
    time.sleep(0.4)

@pytest.mark.slow
def test_sleepy_but_marked():
    time.sleep(0.4)
"""


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (folder / "test_loop.py").write_text(TESTS)
    # Only the plugin under test: no other plugin installed here is loaded.
    env = {**os.environ, "PYTHONPATH": str(SUPPORT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "fast_loop", "-p", "no:cacheprovider", "-v",
         "-W", "ignore::pytest.PytestUnknownMarkWarning", *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_an_unmarked_test_over_the_budget_fails_and_says_to_mark_it(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "--fast-budget", "0.2")
    assert done.returncode == 1, done.stdout
    assert "test_loop.py::test_sleepy FAILED" in done.stdout
    assert "test_loop.py::test_quick PASSED" in done.stdout
    assert "test_loop.py::test_sleepy_but_marked PASSED" in done.stdout
    assert "over the fast loop's budget of 0.2 s: mark it @pytest.mark.slow" in done.stdout


def test_without_a_budget_nothing_is_held_and_the_slow_tests_run_first(tmp_path: Path) -> None:
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout
    order = [line.split(" ")[0] for line in done.stdout.splitlines() if "::test_" in line]
    assert order[0].endswith("::test_sleepy_but_marked"), order
