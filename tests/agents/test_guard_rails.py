"""Guard rails that any agent meets: an early ``submit``, a repeating
agent, a truncated reply, a write onto an input of the workspace under either protocol.
Each through the real runner, loop and sandbox, with a scripted agent; each rail is
recorded in the step's ``extra`` with its observation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from agent_runs import DATA, SANDBOXED, ScriptedAgent, observations, run_agents, smoke

from deonticbench.agents.guards import (
    NO_ANSWER,
    NO_PROGRAM,
    TRUNCATED,
    dar_inputs,
    protected_input,
)
from deonticbench.agents.loop import TrialSetup, offered_tools
from deonticbench.agents.tool_table import tool_specs
from deonticbench.data.cases import resolve_source
from deonticbench.data.dar_files import DAR_DIR_ENV
from deonticbench.data.domains import get_domain
from deonticbench.models.base import Completion, Request
from deonticbench.prompting.dar_task import dar_task
from deonticbench.solver import Solver
from deonticbench.store.record import STOP_REASONS, Record
from deonticbench.store.spec import AgentOptions
from deonticbench.store.trajectory import read_trajectory
from deonticbench.vocabulary.chat import ToolCall
from deonticbench.vocabulary.modes import Mode
from deonticbench.vocabulary.protocols import ProtocolName

pytestmark = SANDBOXED
DAR = Path(__file__).resolve().parents[3] / "shared" / "harbor-deonticbench"
NEEDS_DAR = pytest.mark.skipif(not (DAR / "adapters").is_dir(), reason="no DAR mirror")
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


WRITES = ("case.txt", "examples/1/case.txt", "examples.txt", "/app/examples.txt", "statute.txt")
"""Paths an agent may try to write over: inputs under one protocol or the other."""


def _writes(protocol: ProtocolName, solver: Solver, out: Path) -> dict[str, str]:
    """What a few-shot trial under ``protocol`` is told for a write to each of ``WRITES``."""
    script = [[("write_file", {"path": path, "content": "x"})] for path in WRITES]
    _, records = run_agents(
        ScriptedAgent(script), solver, out, domains=[AIRLINE], modes=("agent-few-shot",),
        limit=1, protocol=protocol,
    )  # fmt: skip
    (record,) = records.values()
    return dict(zip(WRITES, observations(record, out), strict=True))


@NEEDS_DAR
def test_the_input_file_rail_names_what_the_protocols_workspace_holds(
    solver: Solver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness's workspace holds case.txt and examples/; DAR's /app holds statute.txt
    and examples.txt.  Each protocol's rail refuses a write onto its own inputs, naming
    them where its agent was told they are, and lets any other path be written."""
    monkeypatch.setenv(DAR_DIR_ENV, str(DAR))
    harness = _writes("harness", solver, tmp_path / "harness")
    refused = "is an input of the case and stays as it is; write your program to solution.pl"
    for path in ("case.txt", "examples/1/case.txt", "statute.txt"):
        assert harness[path] == f"error: refused: {path} {refused}"
    assert harness["examples.txt"].startswith("wrote ")
    assert "absolute" in harness["/app/examples.txt"]  # no /app in the harness's workspace

    dar = _writes("dar", solver, tmp_path / "dar")
    refused = "is an input of the task and stays as it is; write your program to /app/solution.pl"
    for path, shown in (("examples.txt", "/app/examples.txt"), ("statute.txt", "/app/statute.txt")):
        assert dar[path] == f"error: refused: {shown} {refused}"
    assert dar["/app/examples.txt"] == dar["examples.txt"]
    for path in ("case.txt", "examples/1/case.txt"):  # nothing of DAR's: the agent's own
        assert dar[path].startswith("wrote "), dar[path]


@NEEDS_DAR
def test_a_schema_admits_no_write_onto_the_protocols_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a schema the rail is the ``write_file`` path pattern, drawn from the same
    inputs: the harness's leaves out case.txt and examples/, DAR's examples.txt."""
    monkeypatch.setenv(DAR_DIR_ENV, str(DAR))
    case = smoke(AIRLINE, 1)[0]
    task = dar_task(case, "few-shot", source=resolve_source(DATA))
    shared: dict[str, Any] = {"native": False, "workdir": tmp_path, "model_name": "m"}
    setups = {
        protocol: TrialSetup(AIRLINE, case, "agent-few-shot", 0, "prolog", **shared,
                             constrained=True, dar=task if protocol == "dar" else None)
        for protocol in ("harness", "dar")
    }  # fmt: skip

    def admits(protocol: str, path: str) -> bool:
        offered = offered_tools(setups[protocol], tool_specs("prolog"), tmp_path)
        (write,) = [spec for spec in offered if spec.name == "write_file"]
        pattern = write.parameters["properties"]["path"]["pattern"]
        return re.fullmatch(pattern, path) is not None

    for path in ("case.txt", "examples/1/case.txt", "statute.txt"):
        assert not admits("harness", path), path
    assert admits("harness", "examples.txt") and admits("harness", "solution.pl")
    for path in ("examples.txt", "statute.txt"):
        assert not admits("dar", path), path
    for path in ("case.txt", "examples/1/case.txt", "solution.pl"):
        assert admits("dar", path), path


@NEEDS_DAR
def test_a_direct_dar_trial_is_pointed_to_its_answer_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DAR_DIR_ENV, str(DAR))
    task = dar_task(smoke(AIRLINE, 1)[0], "direct", source=resolve_source(DATA))
    call = ToolCall("c0", "write_file", {"path": "/app/statute.txt", "content": "x"})
    assert protected_input(call, dar_inputs(task)) == (
        "error: refused: /app/statute.txt is an input of the task and stays as it is; "
        "write your answer to /app/output/answer.txt"
    )
