"""What a turn decoded under a schema may call: the constrained tool mode's
union leaves out a ``submit`` the early-submit rail would refuse, and bounds every
free-text argument so that a call fits in its turn; an argument that reached the bound
is told so.  Through the real runner, loop and sandbox; the agent is scripted and
checks the tools each request offers, as a schema-decoding engine receives them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from agent_runs import SANDBOXED, ScriptedAgent, observations, run_agents

from deonticbench.data.domains import get_domain
from deonticbench.models.base import Completion, Request
from deonticbench.models.constrained import CALL_FRAME_TOKENS, PATH_CHARS, call_schema
from deonticbench.solver import Solver
from deonticbench.store.record import Record
from deonticbench.store.trajectory import read_trajectory
from deonticbench.vocabulary.chat import ToolSpec
from deonticbench.vocabulary.modes import Mode

pytestmark = SANDBOXED
TURN_TOKENS = 600
BOUND = TURN_TOKENS - CALL_FRAME_TOKENS
"""The characters the string arguments of one call may have between them."""
PATH_BOUND = min(PATH_CHARS, BOUND // 4)
CONTENT_BOUND = BOUND - PATH_CHARS  # write_file's path is a pattern of at most PATH_CHARS
PROGRAM = ":- initialization((write(yes), nl)).\n"


class SchemaDecoded(ScriptedAgent):
    """The script as a backend that decodes each turn under the call schema (as
    ``local:``), keeping the tools of every request."""

    native_tools = False

    def __init__(self, script: Any, *, forced_native: bool = False) -> None:
        super().__init__(script)
        self.tool_mode = "constrained"
        self.native_tools = forced_native
        self._turn_max_tokens = TURN_TOKENS
        self.offered: list[tuple[ToolSpec, ...]] = []

    async def generate(self, request: Request) -> list[Completion]:
        self.offered.append(request.tools)
        return await super().generate(request)


def _run(model: SchemaDecoded, solver: Solver, out: Path, mode: Mode) -> Record:
    _, records = run_agents(
        model, solver, out, domains=[get_domain("airline")], modes=(mode,), limit=1
    )
    (record,) = records.values()
    assert record.agent is not None and record.agent.tool_mode == "constrained"
    return record


def _extras(record: Record, run_dir: Path) -> list[dict[str, Any]]:
    assert record.agent is not None and record.agent.trajectory is not None
    atif = read_trajectory(run_dir, record.agent.trajectory, record.agent.trajectory_sha256)
    return [s.get("extra", {}) for s in atif["steps"] if s.get("source") == "agent"]


def _names(tools: tuple[ToolSpec, ...]) -> list[str]:
    return [t.name for t in tools]


def test_submit_is_offered_only_once_a_program_exists(solver: Solver, tmp_path: Path) -> None:
    script = [
        [("list_files", {})],
        [("write_file", {"path": "solution.pl", "content": PROGRAM})],
        [("submit", {})],
    ]
    model = SchemaDecoded(script)
    record = _run(model, solver, tmp_path / "run", "agent-zero-shot")
    assert record.agent is not None and record.agent.stop_reason == "submit"
    names = [_names(tools) for tools in model.offered]
    assert "submit" not in names[0] and "submit" not in names[1] and "submit" in names[2]
    assert [e.get("withheld") for e in _extras(record, tmp_path / "run")] == [
        ["submit"], ["submit"], None,
    ]  # fmt: skip
    # What the engine decodes under: the union has no submit branch before the program.
    branches = call_schema(model.offered[0])["anyOf"]
    assert all(b["properties"]["name"]["const"] != "submit" for b in branches)


def test_in_direct_mode_submit_needs_its_answer_until_an_answer_file_exists(
    solver: Solver, tmp_path: Path
) -> None:
    script = [[("submit", {"answer": "0"})]]
    model = SchemaDecoded(script)
    record = _run(model, solver, tmp_path / "run", "agent-direct")
    assert record.agent is not None and record.agent.stop_reason == "submit"
    (submit,) = [t for t in model.offered[0] if t.name == "submit"]
    assert submit.parameters["required"] == ["answer"]
    assert submit.parameters["properties"]["answer"]["minLength"] == 1


def test_the_arguments_of_a_call_are_bounded_to_fit_its_turn_and_told_when_reached(
    solver: Solver, tmp_path: Path
) -> None:
    long = "% " + "1, " * BOUND
    script = [
        [("write_file", {"path": "solution.pl", "content": long[:CONTENT_BOUND]})],
        [("write_file", {"path": "solution.pl", "content": PROGRAM})],
    ]
    model = SchemaDecoded(script)
    record = _run(model, solver, tmp_path / "run", "agent-zero-shot")
    for tools in model.offered:
        for tool in tools:
            properties = tool.parameters.get("properties", {})
            bounds = [v["maxLength"] for v in properties.values() if v.get("type") == "string"]
            assert sum(bounds) <= BOUND  # a call at every bound still fits in its turn
            if "path" in properties and tool.name != "write_file":
                assert properties["path"]["maxLength"] == PATH_BOUND
    (write,) = [t for t in model.offered[0] if t.name == "write_file"]
    assert write.parameters["properties"]["content"]["maxLength"] == CONTENT_BOUND
    seen = observations(record, tmp_path / "run")
    assert f"content reached its limit of {CONTENT_BOUND} characters" in seen[0]
    assert "limit" not in seen[1]
    extras = _extras(record, tmp_path / "run")
    assert [g["rule"] for g in extras[0]["guard"]] == ["argument_bound"]
    assert extras[0]["kind"] == "well_formed"  # the call is the model's, closed under the bound


def test_a_forced_native_call_keeps_one_tool_list(solver: Solver, tmp_path: Path) -> None:
    """A provider forcing a call natively (openai:, anthropic:) keeps the whole list
    unbounded: its prompt cache starts with the tools, and the early-submit rail answers."""
    script = [
        [("submit", {})],
        [("write_file", {"path": "solution.pl", "content": PROGRAM})],
        [("submit", {})],
    ]
    model = SchemaDecoded(script, forced_native=True)
    record = _run(model, solver, tmp_path / "run", "agent-zero-shot")
    assert record.agent is not None and record.agent.stop_reason == "submit"
    assert all(tools == model.offered[0] for tools in model.offered)
    assert "submit" in _names(model.offered[0])
    assert "maxLength" not in str(model.offered[0])
    assert record.agent.turn_kinds is not None and record.agent.turn_kinds["refused"] == 1


@pytest.mark.parametrize("mode", ["agent-zero-shot", "agent-direct"])
def test_write_file_takes_a_canonical_path_that_is_not_an_input(
    solver: Solver, tmp_path: Path, mode: Mode
) -> None:
    script = [[("write_file", {"path": "solution.pl", "content": PROGRAM})]]
    model = SchemaDecoded(script)
    _run(model, solver, tmp_path / "run", mode)
    (write,) = [t for t in model.offered[0] if t.name == "write_file"]
    path = write.parameters["properties"]["path"]
    admits = re.compile(path["pattern"]).fullmatch
    for fine in ("solution.pl", "output/answer.txt", "lib/rules.pl", "statute.pl", "cases.txt"):
        assert admits(fine), fine
    for refused in ("statute.txt", "case.txt", "examples", "examples/1/program.pl"):
        assert not admits(refused), refused  # the input_file rail would refuse these
    for odd in ("./statute.txt", "/case.txt", "a//b", "a/../statute.txt", ".x", ""):
        assert not admits(odd), odd  # one spelling per file, so none slips past the rail
    assert path["maxLength"] == PATH_CHARS and len("a" * 31) <= PATH_CHARS
