"""Shared by every test folder: the helpers in ``tests/support/`` (loopback fake providers
and hub, the browser driver, hostile programs, inspect's scripted model) import by name.

Two loops run these tests (README, "Development"): ``make check`` deselects the tests
marked ``slow`` and gives every other test a budget (``--fast-budget``): an unmarked test
that takes longer fails there, so that a slow test cannot creep into the fast loop
unmarked.  ``make test`` runs them all, the slow ones first.  Under pytest-xdist each
worker has a temporary folder of its own, so that tests which check what a run left in
the temporary folder see only their own worker's files."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

SUPPORT = Path(__file__).resolve().parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

_SPENT = pytest.StashKey[float]()
_WORKER_TMP = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="fail any test not marked slow whose set-up and call take longer than this",
    )


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        # Short: Ray's socket paths under the temporary folder must stay under 107 bytes.
        folder = tempfile.mkdtemp(prefix=f"{worker}-", dir="/tmp")
        # As /tmp is: an rlimits sandbox's jobs run under other uids and must reach the
        # folders their workers make here.
        os.chmod(folder, 0o1777)
        config.stash[_WORKER_TMP] = folder
        os.environ["TMPDIR"] = folder
        tempfile.tempdir = None  # gettempdir() reads TMPDIR again


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_WORKER_TMP, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tests first, each group in its collected order: spread over xdist's
    workers, the long ones then start early and the short ones fill the gaps at the end,
    instead of one long test running alone at the end of the suite."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    outcome = yield
    budget = item.config.getoption("--fast-budget")
    if budget is None or item.get_closest_marker("slow") is not None:
        return
    report = outcome.get_result()
    if report.when == "teardown":
        return
    spent = item.stash.get(_SPENT, 0.0) + report.duration
    item.stash[_SPENT] = spent
    if report.when == "call" and report.passed and spent > budget:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} took {spent:.1f} s to set up and run, over the fast loop's "
            f"budget of {budget:g} s: mark it @pytest.mark.slow (make test still runs it)."
        )
