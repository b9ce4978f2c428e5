"""Guard rails that any agent meets (issue 28, point 2): an early ``submit``, a repeating
agent, a truncated reply.  Each through the real runner, loop and sandbox, with a
scripted agent; each rail is recorded in the step's ``extra`` with its observation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_runs import SANDBOXED, ScriptedAgent, observations, run_agents

from deonticbench.agents.guards import NO_ANSWER, NO_PROGRAM, TRUNCATED
from deonticbench.data.domains import get_domain
from deonticbench.models.base import Completion, Request
from deonticbench.solver import Solver
from deonticbench.store.record import STOP_REASONS, Record
from deonticbench.store.spec import AgentOptions
from deonticbench.store.trajectory import read_trajectory
from deonticbench.vocabulary.modes import Mode

pytestmark = SANDBOXED
AIRLINE = get_domain("airline")
PROGRAM = "answer(yes).\n"


def _run(
    model: ScriptedAgent, solver: Solver, out: Path, mode: Mode = "agent-zero-shot", **options: Any
) -> Record:
    _, records = run_agents(
        model, solver, out, domains=[AIRLINE], modes=(mode,), limit=1,
        agent=AgentOptions(**options),
    )  # fmt: skip
    (record,) = records.values()
    assert record.agent is not None
    return record


def _steps(record: Record, run_dir: Path) -> list[dict[str, Any]]:
    assert record.agent is not None and record.agent.trajectory is not None
    atif = read_trajectory(run_dir, record.agent.trajectory, record.agent.trajectory_sha256)
    return [s for s in atif["steps"] if s.get("source") == "agent"]


def test_submit_before_a_program_is_refused_and_costs_a_turn(
    solver: Solver, tmp_path: Path
) -> None:
    script = [
        [("submit", {})],
        [("write_file", {"path": "solution.pl", "content": PROGRAM})],
        [("submit", {})],
    ]
    record = _run(ScriptedAgent(script), solver, tmp_path / "run")
    assert record.agent is not None
    assert record.agent.stop_reason == "submit" and record.agent.turns == 3
    seen = observations(record, tmp_path / "run")
    assert seen[0] == NO_PROGRAM and "write solution.pl first" in seen[0]
    first = _steps(record, tmp_path / "run")[0]
    assert first["extra"]["guard"] == [
        {"rule": "early_submit", "call": 0, "observation": NO_PROGRAM}
    ]


def test_submit_in_direct_mode_needs_an_answer(solver: Solver, tmp_path: Path) -> None:
    script = [[("submit", {})], [("submit", {"answer": "0"})]]
    record = _run(ScriptedAgent(script), solver, tmp_path / "run", mode="agent-direct")
    assert record.agent is not None
    assert record.agent.stop_reason == "submit" and record.agent.turns == 2
    seen = observations(record, tmp_path / "run")
    assert seen == [NO_ANSWER, "submitted"]


def test_a_call_repeated_five_times_is_told_once_then_stopped(
    solver: Solver, tmp_path: Path
) -> None:
    assert "repeat" in STOP_REASONS
    script: list[list[tuple[str, dict[str, object]]]] = [[("list_files", {})]] * 5
    record = _run(ScriptedAgent(script), solver, tmp_path / "run")
    assert record.agent is not None
    assert record.agent.stop_reason == "repeat" and record.agent.turns == 4
    seen = observations(record, tmp_path / "run")
    told = [i for i, text in enumerate(seen) if "turns in a row" in text]
    assert told == [2]  # the third identical turn (the default limit, 3) is told once
    steps = _steps(record, tmp_path / "run")
    rules = [[g["rule"] for g in s.get("extra", {}).get("guard", [])] for s in steps]
    assert rules == [[], [], ["repeat"], ["repeat"]]
    assert seen[3] == seen[1]  # the stopping turn's own observation is left as it was


def test_the_repeat_limit_is_an_agent_option(solver: Solver, tmp_path: Path) -> None:
    script: list[list[tuple[str, dict[str, object]]]] = [[("list_files", {})]] * 5
    record = _run(ScriptedAgent(script), solver, tmp_path / "run", repeat_limit=None)
    assert record.agent is not None and record.agent.stop_reason == "no_tool_call"
    assert AgentOptions(repeat_limit=5).to_json()["repeat_limit"] == 5
    assert "repeat_limit" not in AgentOptions().to_json()


class _CutOff(ScriptedAgent):
    """Turn 0 is cut off by the output-token limit mid-call, turn 1 by it with no call."""

    async def generate(self, request: Request) -> list[Completion]:
        (completion,) = await super().generate(request)
        turn = sum(1 for m in request.messages if m.role == "assistant")
        if turn < 2:
            completion = Completion(
                text=completion.text,
                tokens_in=10,
                tokens_out=5,
                finish_reason="length",
                tool_calls=completion.tool_calls,
            )
        return [completion] * request.n


def test_a_truncated_turn_is_its_own_kind_and_its_calls_are_not_run(
    solver: Solver, tmp_path: Path
) -> None:
    script = [
        [("write_file", {"path": "solution.pl", "content": PROGRAM})],
        [],
        [("list_files", {})],
    ]
    record = _run(_CutOff(script), solver, tmp_path / "run")
    assert record.agent is not None
    # A reply cut off with no call goes on to the next turn; the trial ends at turn 3.
    assert record.agent.stop_reason == "no_tool_call" and record.agent.turns == 4
    seen = observations(record, tmp_path / "run")
    assert seen[0] == TRUNCATED and "solution.pl" not in seen[1]  # never written
    steps = _steps(record, tmp_path / "run")
    assert [g["rule"] for g in steps[0]["extra"]["guard"]] == ["truncated"]
    assert steps[1]["extra"]["guard"] == [{"rule": "truncated", "observation": TRUNCATED}]
    assert "guard" not in steps[2]["extra"]
