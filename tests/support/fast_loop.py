"""The two test loops' rules, as a pytest plugin (loaded by tests/conftest.py).

``make check`` deselects the tests marked ``slow`` and gives every other test a budget
(``--fast-budget SECONDS``): an unmarked test whose set-up and call take longer fails, so
that a slow test cannot creep into the fast loop unmarked.  ``make test`` runs them all,
the slow ones first, so that over xdist's workers the long ones start early and the short
ones fill the gaps at the end instead of one long test running alone."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

_SPENT = pytest.StashKey[float]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="fail any test not marked slow whose set-up and call take longer than this",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
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
