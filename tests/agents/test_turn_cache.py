"""An agent turn's cache key carries its case: the trials of two cases whose
conversations agree (an agent's opening names no case; it reads case.txt) each draw
their own replies, and a re-run of the same trials is served its own.  Through the real
runner, loop, sandbox and sqlite response cache."""

from __future__ import annotations

from pathlib import Path

from agent_runs import SANDBOXED, ScriptedAgent, run_agents

from deonticbench.data.domains import get_domain
from deonticbench.evaluation.cache import ResponseCache
from deonticbench.models.base import Completion, Request
from deonticbench.solver import Solver

pytestmark = SANDBOXED
SCRIPT = [[("list_files", {})], [("read_file", {"path": "statute.txt", "limit": 2})]]


class Counted(ScriptedAgent):
    """The script, with the response cache on, counting what reaches the model."""

    _cacheable = True

    def __init__(self) -> None:
        super().__init__(SCRIPT)
        self.asked = 0

    async def generate(self, request: Request) -> list[Completion]:
        self.asked += 1
        return await super().generate(request)


def test_two_cases_with_the_same_conversation_each_draw_their_own_turns(
    solver: Solver, tmp_path: Path
) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    first = Counted()
    result, records = run_agents(
        first, solver, tmp_path / "run", domains=[get_domain("airline")],
        modes=("agent-zero-shot",), limit=2, cache=cache,
    )  # fmt: skip
    assert len(records) == 2
    # Two turns with calls and a last one without, for each case: none served the other's.
    assert first.asked == 2 * 3 and result.cache_hits == 0
    again = Counted()
    result, _ = run_agents(
        again, solver, tmp_path / "again", domains=[get_domain("airline")],
        modes=("agent-zero-shot",), limit=2, cache=cache,
    )  # fmt: skip
    assert again.asked == 0 and result.cache_hits == 2 * 3
