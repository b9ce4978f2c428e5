"""The two test loops on this machine: ``make check`` and the full suite, side by side.

Runs ``make check`` (the lint, the import contracts, mypy and the tests not marked
``slow``) and then ``make suite``, the whole suite's tests as ``make test`` runs them (its
lint and mypy are the same as check's, so only the tests are timed again), each with a
JUnit report and with make's own worker counts, and prints:

* each loop's wall time and how many tests it ran (the fast loop's share of all tests);
* the 15 slowest tests of the full suite, with each test's share of the suite's summed
  test time (set-up, call and tear-down), as Markdown rows for docs/performance.md.

Goals: ``make check`` at most 120 s with at least three quarters of the tests; the full
suite at most 720 s.  The wall times are measured, not asserted: a timed test would fail
on a busy machine for no fault of the code.

Usage: python benchmarks/suite.py [--check-workers N] [--workers N] [--skip-check] [--skip-full]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SLOWEST = 15
CHECK_GOAL_S = 120.0
FULL_GOAL_S = 720.0
FAST_SHARE_GOAL = 0.75


def _timed(command: list[str], junit: Path) -> tuple[float, int]:
    """Run ``command`` (whose pytest writes ``junit``); return its wall time and exit code."""
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=ROOT, env={**os.environ, "PYTEST_ADDOPTS": f"--junitxml={junit}"}
    )
    return time.monotonic() - started, done.returncode


def _cases(junit: Path) -> list[tuple[str, float, bool]]:
    """(test id, seconds, ran) of every test case in a JUnit report."""
    cases = []
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        skipped = case.find("skipped") is not None
        cases.append((name, float(case.get("time", "0")), not skipped))
    return cases


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check-workers", help="make check's pytest-xdist workers (CHECK_WORKERS; make's own)"
    )
    parser.add_argument(
        "--workers", help="the full suite's pytest-xdist workers (TEST_WORKERS; make's own)"
    )
    parser.add_argument("--skip-check", action="store_true")
    parser.add_argument("--skip-full", action="store_true")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="suite-bench-") as scratch:
        folder = Path(scratch)
        rows: list[str] = []
        check_cases: list[tuple[str, float, bool]] = []
        if not args.skip_check:
            junit = folder / "check.xml"
            workers = [f"CHECK_WORKERS={args.check_workers}"] if args.check_workers else []
            wall, code = _timed(["make", "check", *workers], junit)
            check_cases = _cases(junit)
            ran = sum(1 for _, _, r in check_cases if r)
            rows.append(
                f"make check: {wall:.0f} s wall (goal {CHECK_GOAL_S:.0f} s), "
                f"{ran} tests ran, exit {code}"
            )
        if not args.skip_full:
            junit = folder / "full.xml"
            workers = [f"TEST_WORKERS={args.workers}"] if args.workers else []
            wall, code = _timed(["make", "--no-print-directory", "suite", *workers], junit)
            cases = _cases(junit)
            ran = sum(1 for _, _, r in cases if r)
            rows.append(
                f"full suite (pytest): {wall:.0f} s wall (goal {FULL_GOAL_S:.0f} s), "
                f"{len(cases)} tests, {ran} ran, exit {code}"
            )
            if check_cases:
                share = len(check_cases) / len(cases)
                rows.append(
                    f"fast loop's share of the tests: {share:.1%} "
                    f"(goal at least {FAST_SHARE_GOAL:.0%})"
                )
            total = sum(t for _, t, _ in cases) or 1.0
            rows.append(f"summed test time {total:.0f} s; the {SLOWEST} slowest:")
            rows.append("| test | seconds | share of the summed time |")
            rows.append("| --- | ---: | ---: |")
            for name, seconds, _ in sorted(cases, key=lambda c: -c[1])[:SLOWEST]:
                rows.append(f"| `{name}` | {seconds:.1f} | {seconds / total:.1%} |")
        print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
