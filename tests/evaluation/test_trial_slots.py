"""A trial's wall-clock budget is its own: trials never wait between turns
for a request slot held by another trial, and an engine that serves one request at a
time (``Model.parallel_requests``, the local and vLLM backends) runs one trial at a time.

The model here is scripted, with the one thing that matters made real: each turn takes
its time, and the engine serves one turn at a time (a lock, as llama.cpp's one worker
thread).  Before, four trials interleaved their turns on it and each one's budget paid
for the other three's turns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_runs import SANDBOXED, ScriptedAgent, run_agents

from deonticbench.data.domains import get_domain
from deonticbench.models.base import Completion, Request
from deonticbench.solver import Solver
from deonticbench.store.spec import AgentOptions

pytestmark = SANDBOXED
TURN_S = 0.5
SCRIPT = [
    [("list_files", {})],
    [("write_file", {"path": "solution.pl", "content": ":- initialization(main).\n"})],
    [("submit", {})],
]
"""Three turns: 1.5 s of the engine's time per trial."""
BUDGET = AgentOptions(timeout_s=3.0)
"""Twice a trial's own time; four trials sharing the engine turn by turn take 6 s."""


class OneAtATime(ScriptedAgent):
    """The script, each turn taking ``TURN_S`` on an engine that serves one at a time."""

    def __init__(self, parallel_requests: int | None) -> None:
        super().__init__(SCRIPT)
        self.parallel_requests = parallel_requests
        self.engine = asyncio.Lock()
        self.busy = 0
        self.most_busy = 0

    async def generate(self, request: Request) -> list[Completion]:
        self.busy += 1
        self.most_busy = max(self.most_busy, self.busy)
        try:
            async with self.engine:
                await asyncio.sleep(TURN_S)
                return await super().generate(request)
        finally:
            self.busy -= 1


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with Solver(workers=2) as pool:
        yield pool


@pytest.mark.slow
@pytest.mark.parametrize(
    ("parallel_requests", "concurrency"),
    [(None, 1), (1, 4)],
    ids=["concurrency-1", "one-engine-thread"],
)
def test_no_trial_spends_its_budget_waiting_for_another(
    solver: Solver, tmp_path: Path, parallel_requests: int | None, concurrency: int
) -> None:
    model = OneAtATime(parallel_requests)
    _, records = run_agents(
        model, solver, tmp_path / "run", domains=[get_domain("airline")],
        modes=("agent-zero-shot",), limit=4, agent=BUDGET, concurrency=concurrency,
    )  # fmt: skip
    assert len(records) == 4
    stops = sorted(r.agent.stop_reason for r in records.values() if r.agent is not None)
    assert stops == ["submit"] * 4, stops
    assert model.most_busy == 1  # one trial's turn at a time reached the engine
