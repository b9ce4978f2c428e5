"""Each trial counts its turns by kind, refuses a write onto an input of
the case (a guard rail), records whether it ran a program it wrote, and, under the
constrained tool mode, takes its calls from the backend with the tools in every request.
Through the real runner, loop and sandbox, with scripted agents."""

from __future__ import annotations

import json
from pathlib import Path

from agent_runs import SANDBOXED, ScriptedAgent, observations, run_agents

from deonticbench.agents.guards import NO_PROGRAM, input_file_refusal
from deonticbench.data.domains import get_domain
from deonticbench.models.base import Completion, GenerationParams, Model, Request
from deonticbench.models.constrained import call_schema, schema_calls
from deonticbench.solver import Solver
from deonticbench.store.record import TURN_KINDS, Record
from deonticbench.store.spec import AgentOptions
from deonticbench.store.trajectory import read_trajectory

pytestmark = SANDBOXED
AIRLINE = get_domain("airline")
PROGRAM = "answer(yes).\n"


def _one(model: Model, solver: Solver, out: Path, **options: object) -> Record:
    _, records = run_agents(
        model, solver, out, domains=[AIRLINE], modes=("agent-zero-shot",), limit=1,
        agent=AgentOptions(**options),  # type: ignore[arg-type]
    )  # fmt: skip
    (record,) = records.values()
    assert record.agent is not None
    return record


def _kinds(record: Record, out: Path) -> list[str]:
    assert record.agent is not None and record.agent.trajectory is not None
    atif = read_trajectory(out, record.agent.trajectory, record.agent.trajectory_sha256)
    return [s["extra"]["kind"] for s in atif["steps"] if s.get("source") == "agent"]


def test_every_kind_of_turn_is_counted_once(solver: Solver, tmp_path: Path) -> None:
    script = [
        [("submit", {})],  # refused: nothing written yet
        [("write_file", {"path": "case.txt", "content": "x"})],  # refused: an input
        [("no_such_tool", {})],  # malformed
        [("read_file", {"path": 3})],  # malformed: path is not a string
        [("write_file", {"path": "./solution.pl", "content": PROGRAM})],
        [("run_prolog", {"path": "solution.pl"})],
        [("submit", {})],
    ]
    out = tmp_path / "run"
    record = _one(ScriptedAgent(script), solver, out)
    assert record.agent is not None
    assert _kinds(record, out) == [
        "refused", "refused", "malformed", "malformed", "well_formed", "well_formed",
        "well_formed",
    ]  # fmt: skip
    assert record.agent.turn_kinds == {
        "well_formed": 3, "malformed": 2, "no_call": 0, "truncated": 0, "refused": 2,
    }  # fmt: skip
    assert set(record.agent.turn_kinds) == set(TURN_KINDS)
    assert record.agent.ran_program is True and record.agent.tool_mode == "native"
    seen = observations(record, out)
    assert seen[0] == NO_PROGRAM and seen[1] == input_file_refusal("case.txt")
    line = json.loads((out / "records.jsonl").read_text().splitlines()[0])
    assert line["agent"]["turn_kinds"]["refused"] == 2


def test_running_a_file_it_did_not_write_is_not_running_a_program(
    solver: Solver, tmp_path: Path
) -> None:
    script = [[("run_prolog", {"path": "case.txt"})], []]
    out = tmp_path / "run"
    record = _one(ScriptedAgent(script), solver, out)
    assert record.agent is not None
    assert record.agent.ran_program is False
    assert record.agent.turn_kinds is not None
    assert record.agent.turn_kinds["well_formed"] == 1 and record.agent.turn_kinds["no_call"] == 1
    assert record.agent.stop_reason == "no_tool_call"


def test_an_input_of_the_case_cannot_be_overwritten(solver: Solver, tmp_path: Path) -> None:
    script = [
        [("write_file", {"path": "examples/a/case.txt", "content": "x"})],
        [("write_file", {"path": "/statute.txt", "content": "x"})],
        [("read_file", {"path": "statute.txt", "limit": 1})],
    ]
    out = tmp_path / "run"
    record = _one(ScriptedAgent(script), solver, out)
    seen = observations(record, out)
    assert seen[0] == input_file_refusal("examples/a/case.txt")
    assert seen[1] == input_file_refusal("statute.txt")
    assert (seen[2].strip() != "x" and "statute" in seen[2].lower()) or len(seen[2]) > 1


class ConstrainedAgent(Model):
    """A backend of the constrained tool mode without a server: it checks each request
    carries the tools (the schema a real engine decodes under) and a text-form
    conversation asking for one JSON object, and answers with the JSON of its script,
    read back by ``schema_calls`` as a real constrained backend does."""

    tool_mode = "constrained"
    native_tools = False
    _cacheable = False

    def __init__(self, script: list[dict[str, object]]) -> None:
        self.spec = self.provider = self.model_name = "constrained-script"
        self.params = GenerationParams()
        self.script = script
        self.seen: list[Request] = []

    def reply_shape(self, tools: tuple) -> dict[str, object]:  # type: ignore[type-arg]
        return {"tool_protocol": "constrained", "schema": call_schema(tools)}

    async def generate(self, request: Request) -> list[Completion]:
        self.seen.append(request)
        turn = request.turn
        body = json.dumps(self.script[turn]) if turn < len(self.script) else ""
        calls = schema_calls(body, turn=turn)
        return [Completion(text=body, tokens_in=10, tokens_out=5, tool_calls=calls)] * request.n


def test_constrained_trial_sends_its_tools_and_takes_the_backends_calls(
    solver: Solver, tmp_path: Path
) -> None:
    agent = ConstrainedAgent(
        [
            {"name": "write_file", "arguments": {"path": "solution.pl", "content": PROGRAM}},
            {"name": "run_prolog", "arguments": {"path": "solution.pl"}},
            {"name": "submit", "arguments": {}},
        ]
    )
    out = tmp_path / "run"
    record = _one(agent, solver, out)
    assert record.agent is not None
    assert record.agent.tool_mode == "constrained" and record.agent.stop_reason == "submit"
    assert record.agent.turn_kinds is not None and record.agent.turn_kinds["well_formed"] == 3
    assert record.agent.ran_program is True
    # Every tool but submit before solution.pl exists (guards.admitted), then all six.
    assert [len(r.tools) for r in agent.seen] == [5, 6, 6]
    instruction = agent.seen[0].messages[1].content
    assert "exactly one tool call, written as one JSON object" in instruction
    assert "```tool" not in instruction
    # Text-form conversation: no tool-role messages, the results come back as user turns.
    last = agent.seen[-1].messages
    assert not any(m.role == "tool" for m in last)
    assert last[-1].role == "user" and last[-1].content.startswith("Result of run_prolog")
    assert (record.attempts[-1].response or "").startswith("answer(yes)")
