"""The agent tests' shared sandbox: one solver pool per test module (two workers)."""

from collections.abc import Iterator

import pytest

from deonticbench.solver import Solver


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with Solver(workers=2) as pool:
        yield pool
