"""inspect's react() agent meets the harness's guard rails and context budget:
a repeating agent is told once then stopped, a reply cut off at the output-token limit
runs none of its calls, a small window elides the oldest observations (or stops the
trial), and each turn's kind is counted.  Every scenario is one script given to both
front doors (inspect's own mockllm, the harness's loop through the runner), and both
must record the same facts: stop reason, turns by kind, the rails that acted, the
elisions, whether a program the agent wrote was run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_runs import DATA, run_agents, smoke
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, resolve_sample_attachments
from inspect_ai.model import get_model
from inspect_ai.scorer import SampleScore
from inspect_script import Reply, ScriptedAgent, Turns, forbid_network, mock_outputs

from deonticbench.agents import MAX_CALLS_PER_TURN, TOO_MANY_CALLS, TRUNCATED, repeat_note
from deonticbench.data.domains import Domain, get_domain
from deonticbench.integrations.inspect import deonticbench as deonticbench_task
from deonticbench.integrations.inspect.agent import TRAJECTORY_KEY
from deonticbench.integrations.inspect.paper_metric import records_of
from deonticbench.reading.programs import unwrap_fenced
from deonticbench.solver import Solver
from deonticbench.store.record import Record
from deonticbench.store.spec import AgentOptions
from deonticbench.store.trajectory import read_trajectory

pytestmark = pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")
AIRLINE = get_domain("airline")
SARA = get_domain("sara_numeric")


def _inspect(
    tmp_path: Path, domain: Domain, turns: Turns, **task: Any
) -> tuple[EvalLog, Record, dict[str, Any]]:
    """One sample through inspect's task; its log, record and trajectory."""
    built = deonticbench_task(domain.name, split="smoke", mode="agent-zero-shot", epochs=1,
                              bootstrap=20, data_dir=DATA, **task)  # fmt: skip
    (log,) = inspect_eval(
        built, model=get_model("mockllm/model", custom_outputs=mock_outputs(turns)), limit=1,
        log_dir=str(tmp_path / "logs"), display="none",
    )  # fmt: skip
    assert log.status == "success", log.error
    assert log.samples is not None
    (score,) = [s for sample in log.samples for s in (sample.scores or {}).values()]
    (record,) = records_of([SampleScore(score=score)])
    return log, record, (score.metadata or {})[TRAJECTORY_KEY]


def _loop(
    tmp_path: Path, domain: Domain, turns: Turns, *, n_ctx: int | None = None
) -> tuple[ScriptedAgent, Record, dict[str, Any]]:
    """The same sample through the harness's loop (the runner); its record and trajectory."""
    model = ScriptedAgent(turns, n_ctx=n_ctx)
    with Solver(workers=1) as solver:
        _, ran = run_agents(model, solver, tmp_path / "run", domains=[domain],
                            modes=("agent-zero-shot",), limit=1,
                            agent=AgentOptions(max_turns=10))  # fmt: skip
    (record,) = ran.values()
    assert record.agent is not None and record.agent.trajectory is not None
    return model, record, read_trajectory(tmp_path / "run", record.agent.trajectory)


def _facts(record: Record) -> tuple[Any, ...]:
    agent = record.agent
    assert agent is not None
    return (
        agent.stop_reason, agent.turns, agent.tool_calls, agent.turn_kinds, agent.ran_program,
        agent.tool_mode, record.final.outcome,
    )  # fmt: skip


def _steps(atif: dict[str, Any]) -> list[tuple[Any, ...]]:
    """What each step records of the rails: calls, kind, the rails that acted, elisions."""
    out = []
    for step in atif["steps"]:
        extra = step.get("extra") or {}
        calls = [(c["function_name"], c["arguments"]) for c in step.get("tool_calls", [])]
        rails = (extra.get("kind"), extra.get("guard"), extra.get("elided"), extra.get("errors"))
        out.append((step["source"], calls, *rails))
    return out


def _observations(atif: dict[str, Any], step: int) -> list[str]:
    return [r["content"] for r in atif["steps"][step]["observation"]["results"]]


def _same_facts(
    inspected: tuple[Record, dict[str, Any]], looped: tuple[Record, dict[str, Any]]
) -> None:
    assert _facts(inspected[0]) == _facts(looped[0])
    assert _steps(inspected[1]) == _steps(looped[1])
    assert inspected[1]["extra"]["stop_reason"] == looped[1]["extra"]["stop_reason"]
    assert inspected[1]["extra"]["tool_mode"] == looped[1]["extra"]["tool_mode"] == "native"


def _both(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    domain: Domain,
    turns: Turns,
    window: int | None = None,
) -> tuple[EvalLog, Record, dict[str, Any], ScriptedAgent, dict[str, Any]]:
    """One script through both front doors, offline, which must record the same facts:
    inspect's log, record and trajectory; the loop's scripted model and trajectory.
    ``window``: the context window each is told."""
    forbid_network(monkeypatch.setattr)
    task = {} if window is None else {"context_tokens": window}
    log, record, atif = _inspect(tmp_path / "inspect", domain, turns, **task)
    model, looped, loop_atif = _loop(tmp_path / "loop", domain, turns, n_ctx=window)
    _same_facts((record, atif), (looped, loop_atif))
    return log, record, atif, model, loop_atif


def repeating(turn: int) -> Reply:
    """The same call five times (the guard stops it before the fifth)."""
    return Reply(calls=(("read_file", {"path": "case.txt", "limit": 3}),))


def test_a_repeating_agent_is_told_once_then_stopped_in_inspect_as_in_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, record, atif, _, loop_atif = _both(tmp_path, monkeypatch, AIRLINE, repeating)
    assert record.agent is not None
    assert (record.agent.stop_reason, record.agent.turns) == ("repeat", 4)
    assert str(record.final.abstain_reason).endswith("(trial ended: repeat)")
    note = repeat_note(3)
    agent_steps = [s for s in atif["steps"] if s["source"] == "agent"]
    assert [(s.get("extra") or {}).get("guard") for s in agent_steps] == [
        None, None, [{"rule": "repeat", "observation": note}],
        [{"rule": "repeat", "observation": "stopped: the same turn again"}],
    ]  # fmt: skip
    # Told once: the note follows the third turn's observation, in what the model was
    # sent and in the trajectory, as the loop tells it.
    assert log.samples is not None
    said = [m.text for m in log.samples[0].messages if m.role == "tool"]
    assert [note in text for text in said] == [False, False, True, False]
    third = agent_steps[2]["step_id"] - 1
    assert _observations(atif, third) == _observations(loop_atif, third)
    assert _observations(atif, third)[0].endswith(f"\n\n{note}")


def cut_off(turn: int) -> Reply:
    """Every kind of turn: a cut-off write (not run), a cut-off reply without a call, an
    early submit (refused: proof the write was not run), an unknown tool (malformed),
    the write again, a run of it, and a last reply with no call."""
    case = smoke(AIRLINE, 1)[0]
    write = ("write_file", {"path": "solution.pl", "content": unwrap_fenced(case.reference_prolog)})
    script = [
        Reply(calls=(write,), cut=True),
        Reply(text="Let me think about the baggage fees in great detail", cut=True),
        Reply(calls=(("submit", {}),)),
        Reply(calls=(("read_files", {"path": "case.txt"}),)),
        Reply(calls=(write,)),
        Reply(calls=(("run_prolog", {"path": "solution.pl"}),)),
        Reply(text="done"),
    ]
    return script[turn]


def test_a_truncated_reply_runs_no_call_and_every_turn_is_counted_by_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, record, atif, _, _loop_atif = _both(tmp_path, monkeypatch, AIRLINE, cut_off)
    assert record.agent is not None
    assert record.agent.stop_reason == "no_tool_call"
    assert record.agent.turn_kinds == {
        "well_formed": 2, "malformed": 1, "no_call": 1, "truncated": 2, "refused": 1,
    }  # fmt: skip
    assert record.agent.ran_program is True and record.final.outcome == "correct"
    agent_steps = [s for s in atif["steps"] if s["source"] == "agent"]
    # The cut-off write was answered TRUNCATED and not run: the submit after it was
    # refused for want of solution.pl.
    first = agent_steps[0]
    assert _observations(atif, first["step_id"] - 1) == [TRUNCATED]
    assert first["extra"]["guard"] == [{"rule": "truncated", "observation": TRUNCATED}]
    assert agent_steps[2]["extra"]["guard"][0]["rule"] == "early_submit"
    # The cut-off reply without a call is answered TRUNCATED as the user's message.
    assert log.samples is not None
    users = [m.text for m in log.samples[0].messages if m.role == "user"]
    assert users[-1] == TRUNCATED


def crowded(turn: int) -> Reply:
    """One turn of 17 calls: write the reference program, run it, then 15 listings (the
    17th call is one too many); then a reply with no call."""
    if turn > 0:
        return Reply()
    case = smoke(AIRLINE, 1)[0]
    write = ("write_file", {"path": "solution.pl", "content": unwrap_fenced(case.reference_prolog)})
    run = ("run_prolog", {"path": "solution.pl"})
    return Reply(calls=(write, run, *[("list_files", {})] * (MAX_CALLS_PER_TURN - 1)))


def test_a_turns_calls_run_in_order_and_past_the_limit_are_refused_in_inspect_as_in_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, record, atif, _, loop_atif = _both(tmp_path, monkeypatch, AIRLINE, crowded)
    first = next(s for s in atif["steps"] if s["source"] == "agent")
    seen = _observations(atif, first["step_id"] - 1)
    assert seen == _observations(loop_atif, first["step_id"] - 1)
    assert len(seen) == MAX_CALLS_PER_TURN + 1 and seen[-1] == TOO_MANY_CALLS
    # run_prolog ran after write_file had written the program (in order, not side by side).
    assert seen[1].startswith("status: ok, exit code 0"), seen[1]
    assert first["extra"]["errors"] == [MAX_CALLS_PER_TURN]
    assert record.agent is not None and record.agent.ran_program is True


STATUTE_READS = [(1, 131), (132, 131), (263, 131), (394, 131)]
"""The SARA statute (about 27,000 characters) in four reads: they overflow 8,192 tokens."""


def reading(turn: int) -> Reply:
    """Read the whole statute in four parts, then write, run and submit the program."""
    if turn < len(STATUTE_READS):
        offset, limit = STATUTE_READS[turn]
        return Reply(calls=(("read_file", {"path": "statute.txt", "offset": offset,
                                           "limit": limit}),))  # fmt: skip
    case = smoke(SARA, 1)[0]
    program = unwrap_fenced(case.reference_prolog)
    script = [
        ("write_file", {"path": "solution.pl", "content": program}),
        ("run_prolog", {"path": "solution.pl"}),
        ("submit", {}),
    ]
    return Reply(calls=(script[turn - len(STATUTE_READS)],))


def test_a_small_window_elides_the_oldest_statute_reads_in_inspect_as_in_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, record, atif, model, _loop_atif = _both(tmp_path, monkeypatch, SARA, reading, window=8192)
    assert record.agent is not None and record.agent.stop_reason == "submit"
    elided = [(s["step_id"], s["extra"]["elided"]) for s in atif["steps"]
              if (s.get("extra") or {}).get("elided")]  # fmt: skip
    # Once, before the fifth turn, in one large step: the oldest reads, never the latest.
    ((step, entries),) = elided
    assert [s["step_id"] for s in atif["steps"] if s["source"] == "agent"][4] == step
    assert [e["turn"] for e in entries] == list(range(len(entries))) and len(entries) < 4
    assert entries[0]["stub"].startswith("[elided to fit the context window: the result of "
                                         "read_file statute.txt limit=131 offset=1;")  # fmt: skip
    # The model was sent the stubs; the log keeps what the tools said.
    assert log.samples is not None
    sample = resolve_sample_attachments(log.samples[0])
    sent = [e for e in sample.events if e.event == "model"][4]
    assert [m.text for m in sent.input if m.role == "tool"][:3] == [e["stub"] for e in entries]
    assert all(not m.text.startswith("[elided") for m in sample.messages)
    assert any(m.content == entries[0]["stub"] for m in model.requests[4].messages)


def test_a_window_too_small_for_the_instruction_stops_the_trial_with_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log, record, _atif, model, _loop_atif = _both(tmp_path, monkeypatch, SARA, reading, window=200)
    assert record.agent is not None
    assert (record.agent.stop_reason, record.agent.turns) == ("context", 0)
    assert log.samples is not None
    assert [e for e in log.samples[0].events if e.event == "model"] == [] == model.requests
