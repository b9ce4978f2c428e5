"""The one tool table: a tool is one entry, and everything else is made from
it; its arguments are checked by one JSON Schema validation (``jsonschema``), and the one
home of the agent budgets is ``AgentOptions``.  Real workspace, real files, the real
loop; only the model is scripted."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import pytest
from agent_runs import DATA, smoke
from click.core import Option

from deonticbench.agents.conversation import opening_messages
from deonticbench.agents.loop import TrialSetup, run_trial
from deonticbench.agents.stops import budget_stop
from deonticbench.agents.tool_base import Observation, ToolState
from deonticbench.agents.tool_table import TOOL_SETS, TOOLS, Tool, tool_specs
from deonticbench.agents.tools import ToolBox
from deonticbench.cli.eval_cmd import command as eval_command
from deonticbench.data.domains import get_domain
from deonticbench.errors import ConfigError
from deonticbench.models.base import Completion
from deonticbench.solver import Execution, Limits
from deonticbench.store.spec import AGENT_TOOL_SETS, AgentOptions
from deonticbench.vocabulary.chat import Message, ToolCall, ToolSpec

pytestmark = pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")
AIRLINE = get_domain("airline")


async def _no_program(program: str, limits: Limits | None = None) -> Execution:
    raise AssertionError("no program is run in these tests")


def _box(tmp_path: Path, tool_set: str = "prolog") -> ToolBox:
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "case.txt").write_text("one\ntwo\nthree\n", encoding="utf-8")
    return ToolBox(tool_set, root, AIRLINE, _no_program)


def _call(box: ToolBox, name: str, **arguments: Any) -> Observation:
    return asyncio.run(box.call(ToolCall("c0", name, arguments)))


async def _shout(state: ToolState, args: dict[str, Any]) -> Observation:
    files = sorted(p.name for p in state.root.iterdir())
    return Observation(f"{args['text'].upper()} x{args.get('times', 1)} in {files}")


SHOUT = Tool(
    "shout",
    "Repeat a text in capitals.",
    {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "What to shout.", "minLength": 1},
            "times": {"type": "integer", "description": "How often.", "minimum": 1},
        },
        "required": ["text"],
        "additionalProperties": False,
    },
    _shout,
)


@pytest.fixture
def shout_in_prolog_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # One entry in the table and its name in a set: nothing else is written anywhere.
    monkeypatch.setitem(TOOLS, SHOUT.name, SHOUT)
    monkeypatch.setitem(TOOL_SETS, "prolog", (*TOOL_SETS["prolog"], SHOUT.name))


def test_a_tool_added_to_the_table_is_offered_listed_and_dispatched_at_once(
    shout_in_prolog_set: None, tmp_path: Path
) -> None:
    (case,) = smoke(AIRLINE, 1)
    native = {s.name: s for s in tool_specs("prolog")}
    assert native["shout"] == ToolSpec(SHOUT.name, SHOUT.description, SHOUT.parameters)
    _, instruction = opening_messages(case, "agent-zero-shot", "prolog", native=False)
    assert "- shout(text: string, times: integer (optional)): Repeat a text" in (
        instruction.content
    )
    native_opening = opening_messages(case, "agent-zero-shot", "prolog", native=True)
    assert "shout(" not in native_opening[1].content  # natively it goes in Request.tools

    box = _box(tmp_path)
    assert _call(box, "shout", text="hi", times=2).text == "HI x2 in ['case.txt']"

    # And the loop offers it, runs it and lists it in the trajectory.
    offered: list[tuple[str, ...]] = []

    async def generate(
        messages: tuple[Message, ...], tools: tuple[ToolSpec, ...], turn: int
    ) -> tuple[Completion, bool]:
        offered.append(tuple(t.name for t in tools))
        calls = (ToolCall("s", "shout", {"text": "done"}),) if turn == 0 else ()
        return Completion(text="", tokens_in=5, tokens_out=1, tool_calls=calls), False

    setup = TrialSetup(AIRLINE, case, "agent-zero-shot", 0, "prolog", True,
                       tmp_path / "trial", "scripted")  # fmt: skip
    trial = asyncio.run(run_trial(setup, generate, _no_program))
    assert "shout" in offered[0]
    assert trial.info.tool_calls == {"shout": 1}
    assert trial.info.stop_reason == "no_tool_call" and trial.info.turns == 2
    definitions = [d["function"]["name"] for d in trial.trajectory["agent"]["tool_definitions"]]
    assert definitions[-1] == "shout"
    (first_turn,) = [s for s in trial.trajectory["steps"] if s.get("tool_calls")]
    assert first_turn["observation"]["results"][0]["content"].startswith("DONE x1 in [")


def test_arguments_are_checked_by_the_tools_json_schema(
    shout_in_prolog_set: None, tmp_path: Path
) -> None:
    box = _box(tmp_path)
    # Keywords of JSON Schema that no hand-written check knew: each is jsonschema's.
    too_few = _call(box, "shout", text="hi", times=0)
    empty = _call(box, "shout", text="")
    assert too_few.is_error and empty.is_error
    assert too_few.text == "error: shout: times: 0 is less than the minimum of 1"
    assert empty.text == "error: shout: text: '' should be non-empty"
    # The sentences the agent saw before stay the same, one per call, one line each.
    wrong = _call(box, "read_file", path=7)
    missing = _call(box, "write_file", path="solution.pl")
    unknown = _call(box, "read_file", path="case.txt", colour="red")
    assert wrong.text == "error: read_file: path must be a string, not int"
    assert missing.text == "error: write_file needs the argument(s) content"
    assert unknown.text == "error: read_file takes no argument(s) colour"
    # A count is a Python int: JSON Schema's integer 1.0 and a bool are refused.
    assert _call(box, "read_file", path="case.txt", offset=1.0).is_error
    assert _call(box, "read_file", path="case.txt", limit=True).is_error
    assert _call(box, "read_file", path="case.txt", offset=2, limit=1).text.endswith("\ntwo")
    for observation in (too_few, empty, wrong, missing, unknown):
        assert "\n" not in observation.text


def test_the_tool_sets_choose_from_the_table() -> None:
    assert tuple(s for s in TOOL_SETS if s != "terminal") == AGENT_TOOL_SETS
    assert TOOL_SETS["terminal"] == ()  # Harbor's agents bring their own terminal
    for names in TOOL_SETS.values():
        assert all(TOOLS[n].name == n for n in names)
    assert [s.name for s in tool_specs("shell")] == ["bash"]


def test_agent_options_is_the_one_home_of_the_budgets() -> None:
    from deonticbench.integrations.harbor.tasks import AGENT_TIMEOUT_S
    from deonticbench.integrations.inspect.agent import deonticbench_agent_solver
    from deonticbench.integrations.inspect.tasks import deonticbench as inspect_task

    defaults = AgentOptions()
    (case,) = smoke(AIRLINE, 1)
    setup = TrialSetup(AIRLINE, case, "agent-zero-shot", 0, "prolog", True, Path("."), "m")
    assert setup.budget == defaults  # the loop's budget is the run's options, not a copy
    assert defaults.timeout_s == AGENT_TIMEOUT_S
    options = {p.name: p.default for p in eval_command.params if isinstance(p, Option)}
    assert options["agent_max_turns"] == defaults.max_turns
    assert options["agent_timeout"] == defaults.timeout_s
    assert options["agent_max_tokens"] == defaults.max_tokens
    for function in (inspect_task, deonticbench_agent_solver):
        parameters = inspect.signature(function).parameters
        assert parameters["max_turns"].default == defaults.max_turns
        assert parameters["max_tokens"].default == defaults.max_tokens
        assert parameters["trial_timeout"].default == defaults.timeout_s
    # Its validation is the loop's: a bad budget is one sentence, before any trial.
    with pytest.raises(ConfigError, match="--agent-max-turns must be at least 1"):
        AgentOptions(max_turns=0)


def test_the_stop_rules_say_tokens_then_turns_then_the_clock() -> None:
    budget = AgentOptions(max_turns=3, max_tokens=100, timeout_s=10.0)
    assert budget_stop(budget, turns=2, tokens=99, elapsed_s=9.9) is None
    assert budget_stop(budget, turns=3, tokens=100, elapsed_s=10.0) == "max_tokens"
    assert budget_stop(budget, turns=3, tokens=99, elapsed_s=10.0) == "max_turns"
    assert budget_stop(budget, turns=2, tokens=99, elapsed_s=10.0) == "timeout"
