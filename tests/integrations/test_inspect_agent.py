"""The agentic inspect task (``-T mode=agent-zero-shot``): inspect's react() agent with
the harness's prolog tools, run on the sample's workspace in the harness's sandbox, and
judged by the harness.  The same responses (inspect's own mockllm, carrying tool calls
and usage) give the same records and the same numbers here and through the runner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_runs import DATA, run_agents, smoke
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ChatMessage, ModelOutput, ModelUsage, get_model
from inspect_script import forbid_network

from deonticbench.data.cases import Case
from deonticbench.data.domains import get_domain
from deonticbench.integrations.inspect import deonticbench as deonticbench_task
from deonticbench.integrations.inspect.paper_metric import records_of
from deonticbench.models.base import Completion, GenerationParams, Model, Request
from deonticbench.reading.programs import unwrap_fenced
from deonticbench.scoring.scores import score_run
from deonticbench.solver import Solver
from deonticbench.store.record import Record
from deonticbench.store.run import LoadReport, Run
from deonticbench.vocabulary.chat import ToolCall

pytestmark = pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")
AIRLINE = get_domain("airline")
TOKENS = (120, 30)


def next_call(turn: int, seen: str, cases: list[Case]) -> tuple[str, dict[str, Any]] | None:
    """One script for both front doors: read the case, write its program (a wrong one for
    the second case), run it, submit."""
    if turn == 0:
        return "read_file", {"path": "case.txt"}
    (case,) = [c for c in cases if c.text.strip()[:200] in seen]
    program = unwrap_fenced(case.reference_prolog)
    if case.id == cases[1].id:
        program = ":- format('Total cost: 1~n')."
    script = [
        ("write_file", {"path": "solution.pl", "content": program}),
        ("run_prolog", {"path": "solution.pl"}),
        ("submit", {}),
    ]
    return script[turn - 1] if turn - 1 < len(script) else None


class Mirror(Model):
    """The script as a harness backend (native tool calls, the same usage)."""

    native_tools = True
    _cacheable = False

    def __init__(self, cases: list[Case]) -> None:
        self.spec = self.provider = self.model_name = "mirror"
        self.params = GenerationParams()
        self.cases = cases

    async def generate(self, request: Request) -> list[Completion]:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        seen = "\n".join(m.content for m in request.messages if m.role == "tool")
        call = next_call(turn, seen, self.cases)
        calls = (ToolCall(f"c{turn}", call[0], call[1]),) if call else ()
        return [Completion(text="", tokens_in=TOKENS[0], tokens_out=TOKENS[1], tool_calls=calls)]


def _mock(cases: list[Case]) -> Any:
    def respond(messages: list[ChatMessage], tools: Any, choice: Any, config: Any) -> ModelOutput:
        turn = sum(1 for m in messages if m.role == "assistant")
        seen = "\n".join(m.text for m in messages if m.role == "tool")
        call = next_call(turn, seen, cases)
        if call is None:
            output = ModelOutput.from_content("mockllm/model", "done")
        else:
            output = ModelOutput.for_tool_call("mockllm/model", call[0], call[1])
        output.usage = ModelUsage(
            input_tokens=TOKENS[0], output_tokens=TOKENS[1], total_tokens=sum(TOKENS)
        )
        return output

    return respond


def _facts(records: list[Record]) -> dict[str, tuple[Any, ...]]:
    return {
        r.case_id: (
            r.final.outcome, r.final.answer, r.final.tokens_in, r.final.tokens_out,
            r.agent.turns if r.agent else None, r.agent.tool_calls if r.agent else None,
            r.agent.stop_reason if r.agent else None, r.final.prompt_hash,
        )
        for r in records
    }  # fmt: skip


@pytest.mark.slow
def test_inspect_react_and_the_runner_give_the_same_records_and_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forbid_network(monkeypatch.setattr)
    cases = smoke(AIRLINE, 3)
    task = deonticbench_task("airline", split="smoke", mode="agent-zero-shot", epochs=1,
                             bootstrap=200, data_dir=DATA)  # fmt: skip
    (log,) = inspect_eval(
        task, model=get_model("mockllm/model", custom_outputs=_mock(cases)), limit=3,
        log_dir=str(tmp_path / "logs"), display="none",
    )  # fmt: skip
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 3
    scores = [s for sample in log.samples for s in (sample.scores or {}).values()]
    from inspect_ai.scorer import SampleScore

    inspected = records_of([SampleScore(score=s) for s in scores])
    with Solver(workers=2) as solver:
        _, ran = run_agents(Mirror(cases), solver, tmp_path / "run", domains=[AIRLINE],
                            modes=("agent-zero-shot",), limit=3)  # fmt: skip
    assert _facts(inspected) == _facts(list(ran.values()))
    outcomes = sorted(f[0] for f in _facts(inspected).values())
    assert outcomes == ["correct", "correct", "wrong"]
    # The paper's metric: the task's and `deonticbench score`'s, from the same records.
    metrics = log.results.scores[0].metrics if log.results else {}
    direct = score_run(Run(tmp_path, {}, list(ran.values()), LoadReport()), 200).groups[0]
    assert metrics["accuracy"].value == pytest.approx(direct.estimate.point)
    assert metrics["accuracy_mean"].value == pytest.approx(direct.estimate.mean)
    # import-inspect brings the run back with each trial's trajectory as a sidecar.
    from deonticbench.integrations.inspect.importer import import_log
    from deonticbench.store.trajectory import read_trajectory, trajectory_problems

    imported = import_log(log.location, tmp_path / "imported").run
    assert len(imported.records) == 3 and imported.config["modes"] == ["agent-zero-shot"]
    (back,) = [r for r in inspected if r.case_id == cases[0].id]
    (loaded,) = [r for r in imported.records if r.key == back.key]
    atif = imported.trajectory(loaded)
    assert atif is not None and trajectory_problems(atif) == []
    assert loaded.agent is not None and loaded.agent.trajectory is not None
    assert atif == read_trajectory(tmp_path / "imported", loaded.agent.trajectory)
    calls = [c["function_name"] for s in atif["steps"] for c in s.get("tool_calls", [])]
    assert calls == ["read_file", "write_file", "run_prolog", "submit"]


def wander(turn: int) -> tuple[str, dict[str, Any]]:
    """A script that reads and lists, never writes, never submits."""
    return ("read_file", {"path": "case.txt", "limit": 3}) if turn == 0 else ("list_files", {})


class Wanderer(Mirror):
    async def generate(self, request: Request) -> list[Completion]:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        name, arguments = wander(turn)
        calls = (ToolCall(f"c{turn}", name, arguments),)
        return [Completion(text="", tokens_in=TOKENS[0], tokens_out=TOKENS[1], tool_calls=calls)]


def _wander_mock(messages: list[ChatMessage], tools: Any, choice: Any, config: Any) -> ModelOutput:
    name, arguments = wander(sum(1 for m in messages if m.role == "assistant"))
    output = ModelOutput.for_tool_call("mockllm/model", name, arguments)
    output.usage = ModelUsage(
        input_tokens=TOKENS[0], output_tokens=TOKENS[1], total_tokens=sum(TOKENS)
    )
    return output


def _shape(atif: dict[str, Any]) -> dict[str, Any]:
    """What a trajectory says of a trial, without the texts only one side words its own
    way (inspect phrases its tool errors and its submit result itself) or timestamps."""
    return {
        "session_id": atif["session_id"],
        "agent": {k: v for k, v in atif["agent"].items() if k != "model_name"},
        "steps": [
            (
                s["source"],
                [(c["function_name"], c["arguments"]) for c in s.get("tool_calls", [])],
                len((s.get("observation") or {}).get("results", [])),
                s.get("metrics"),
                (s.get("extra") or {}).get("errors"),
            )
            for s in atif["steps"]
        ],
        "final_metrics": atif["final_metrics"],
        "extra": atif["extra"],
    }


# 4.5 s on a quiet machine (inspect's react agent and our loop, each to its stop), 5.2 s in
# a loaded make check: over the fast loop's budget.
@pytest.mark.slow
def test_inspect_react_and_the_loop_stop_and_record_a_trial_by_the_same_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One scripted conversation that hits the turn budget: both front doors give the
    same stop reason, AgentInfo, abstention reason and trajectory (agents.stops and
    agents.trial_record are the one statement of each)."""
    forbid_network(monkeypatch.setattr)
    task = deonticbench_task("airline", split="smoke", mode="agent-zero-shot", epochs=1,
                             bootstrap=20, data_dir=DATA, max_turns=2)  # fmt: skip
    (log,) = inspect_eval(
        task, model=get_model("mockllm/model", custom_outputs=_wander_mock), limit=1,
        log_dir=str(tmp_path / "logs"), display="none",
    )  # fmt: skip
    assert log.status == "success", log.error
    assert log.samples is not None
    (score,) = [s for sample in log.samples for s in (sample.scores or {}).values()]
    from inspect_ai.scorer import SampleScore

    from deonticbench.integrations.inspect.agent import TRAJECTORY_KEY
    from deonticbench.store.spec import AgentOptions
    from deonticbench.store.trajectory import read_trajectory

    (inspected,) = records_of([SampleScore(score=score)])
    with Solver(workers=1) as solver:
        _, ran = run_agents(Wanderer(smoke(AIRLINE, 1)), solver, tmp_path / "run",
                            domains=[AIRLINE], modes=("agent-zero-shot",), limit=1,
                            agent=AgentOptions(max_turns=2))  # fmt: skip
    (looped,) = ran.values()
    assert inspected.agent is not None and looped.agent is not None
    assert inspected.agent.stop_reason == looped.agent.stop_reason == "max_turns"
    assert (inspected.agent.turns, inspected.agent.tool_calls, inspected.agent.tool_set) == (
        looped.agent.turns, looped.agent.tool_calls, looped.agent.tool_set,
    )  # fmt: skip
    assert inspected.agent.tool_calls == {"list_files": 1, "read_file": 1}
    assert inspected.final.abstain_reason == looped.final.abstain_reason
    assert str(looped.final.abstain_reason).endswith("(trial ended: max_turns)")
    assert looped.agent.trajectory is not None
    loop_atif = read_trajectory(tmp_path / "run", looped.agent.trajectory)
    inspect_atif = (score.metadata or {})[TRAJECTORY_KEY]
    assert _shape(inspect_atif) == _shape(loop_atif)


def early(turn: int) -> tuple[str, dict[str, Any]] | None:
    """A script that submits before writing anything, then writes and submits."""
    script: list[tuple[str, dict[str, Any]]] = [
        ("submit", {}),
        ("write_file", {"path": "solution.pl", "content": "answer(1).\n"}),
        ("submit", {}),
    ]
    return script[turn] if turn < len(script) else None


class EarlySubmitter(Mirror):
    async def generate(self, request: Request) -> list[Completion]:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        call = early(turn)
        calls = (ToolCall(f"c{turn}", call[0], call[1]),) if call else ()
        return [Completion(text="", tokens_in=TOKENS[0], tokens_out=TOKENS[1], tool_calls=calls)]


def _early_mock(messages: list[ChatMessage], tools: Any, choice: Any, config: Any) -> ModelOutput:
    call = early(sum(1 for m in messages if m.role == "assistant"))
    if call is None:
        output = ModelOutput.from_content("mockllm/model", "done")
    else:
        output = ModelOutput.for_tool_call("mockllm/model", call[0], call[1])
    output.usage = ModelUsage(
        input_tokens=TOKENS[0], output_tokens=TOKENS[1], total_tokens=sum(TOKENS)
    )
    return output


def test_a_submit_before_a_program_is_refused_by_both_front_doors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard rail on an early submit (agents.guards) holds in inspect's react() too:
    the first submit costs a turn, the trial goes on to write and submit."""
    forbid_network(monkeypatch.setattr)
    task = deonticbench_task("airline", split="smoke", mode="agent-zero-shot", epochs=1,
                             bootstrap=20, data_dir=DATA)  # fmt: skip
    (log,) = inspect_eval(
        task, model=get_model("mockllm/model", custom_outputs=_early_mock), limit=1,
        log_dir=str(tmp_path / "logs"), display="none",
    )  # fmt: skip
    assert log.status == "success", log.error
    assert log.samples is not None
    (score,) = [s for sample in log.samples for s in (sample.scores or {}).values()]
    from inspect_ai.scorer import SampleScore

    (inspected,) = records_of([SampleScore(score=score)])
    with Solver(workers=1) as solver:
        _, ran = run_agents(EarlySubmitter(smoke(AIRLINE, 1)), solver, tmp_path / "run",
                            domains=[AIRLINE], modes=("agent-zero-shot",), limit=1)  # fmt: skip
    (looped,) = ran.values()
    assert inspected.agent is not None and looped.agent is not None
    assert inspected.agent.stop_reason == looped.agent.stop_reason == "submit"
    assert inspected.agent.turns == looped.agent.turns == 3
    assert inspected.agent.tool_calls == looped.agent.tool_calls
