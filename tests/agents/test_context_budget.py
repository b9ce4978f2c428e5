"""The context budget: a window that four statute reads overflow has
its oldest observations replaced by stubs, never the instruction or the latest turn,
each elision recorded; a window too small even for the instruction stops the trial with
``context``.  Real runner, loop and sandbox; a scripted agent reads a SARA statute."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_runs import SANDBOXED, ScriptedAgent, run_agents

from deonticbench.agents.context import context_length
from deonticbench.agents.workspace import STATUTE_FILE
from deonticbench.data.domains import get_domain
from deonticbench.models.base import Completion, Request
from deonticbench.models.registry import resolve_settings
from deonticbench.solver import Solver
from deonticbench.store.record import STOP_REASONS, Record
from deonticbench.store.trajectory import read_trajectory
from deonticbench.vocabulary.chat import Message

pytestmark = SANDBOXED
SARA = get_domain("sara_binary")
READS = [[("read_file", {"path": STATUTE_FILE, "offset": start})] for start in (1, 131, 261, 391)]


class _SmallWindow(ScriptedAgent):
    """A scripted agent whose model has a context window of ``n_ctx`` tokens (as a
    ``local:`` model has), keeping each conversation it was sent."""

    def __init__(self, script: Any, n_ctx: int) -> None:
        super().__init__(script)
        self.n_ctx = n_ctx
        self.sent: list[tuple[Message, ...]] = []

    async def generate(self, request: Request) -> list[Completion]:
        self.sent.append(request.messages)
        return await super().generate(request)


def _run(model: ScriptedAgent, solver: Solver, out: Path) -> tuple[Record, list[dict[str, Any]]]:
    _, records = run_agents(model, solver, out, domains=[SARA], modes=("agent-zero-shot",), limit=1)
    (record,) = records.values()
    assert record.agent is not None and record.agent.trajectory is not None
    atif = read_trajectory(out, record.agent.trajectory, record.agent.trajectory_sha256)
    return record, [s for s in atif["steps"] if s.get("source") == "agent"]


def test_four_statute_reads_overflow_a_small_window_and_old_reads_are_elided(
    solver: Solver, tmp_path: Path
) -> None:
    model = _SmallWindow([*READS, [("list_files", {})]], n_ctx=8192)
    record, steps = _run(model, solver, tmp_path / "run")
    assert record.agent is not None
    assert record.agent.stop_reason == "no_tool_call" and record.agent.turns == 6
    full = model.sent[4]  # the conversation before the fifth turn, elided
    untouched = model.sent[3]
    assert full[:2] == untouched[:2]  # the system prompt and the instruction
    tool_messages = [m for m in full if m.role == "tool"]
    assert len(tool_messages) == 4
    stubs = [m.content for m in tool_messages[:-1]]
    assert stubs == [
        f"[elided to fit the context window: the result of read_file {STATUTE_FILE} "
        f"offset={start}; call read_file again to see it]"
        for start in (1, 131, 261)
    ]
    # The latest turn's read is whole, as the tool gave it.
    assert tool_messages[-1].content.startswith(f"{STATUTE_FILE}: lines 391-")
    assert len(tool_messages[-1].content) > 4000
    # Each elision is in the trajectory, on the turn it was made before; none before.
    assert all("elided" not in s["extra"] for s in steps[:4])
    elided = steps[4]["extra"]["elided"]
    assert [e["stub"] for e in elided] == stubs and [e["turn"] for e in elided] == [0, 1, 2]
    assert all(e["chars"] > 4000 for e in elided)
    # The stubs stay: the next turn is sent the same (elided) history, no new elision.
    assert model.sent[5][: len(full)] == full and "elided" not in steps[5]["extra"]


def test_a_window_too_small_for_the_instruction_stops_with_context(
    solver: Solver, tmp_path: Path
) -> None:
    assert "context" in STOP_REASONS
    model = _SmallWindow(READS, n_ctx=300)
    record, steps = _run(model, solver, tmp_path / "run")
    assert record.agent is not None
    assert record.agent.stop_reason == "context" and record.agent.turns == 0
    assert model.sent == [] and steps == []


def test_the_context_length_comes_from_the_settings() -> None:
    settings = resolve_settings("openai", "gpt-x", {"context_tokens": 16384}, registry={})
    holder = type("M", (), {"settings": settings})()
    assert context_length(holder) == 16384
    bare = type("M", (), {"settings": resolve_settings("openai", "gpt-x", {}, registry={})})()
    assert context_length(bare) is None
