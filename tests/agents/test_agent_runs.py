"""Agentic runs end to end: the real runner, the real sandbox and swipl, real run
folders and cache; the reference agent against validate; the real openai and anthropic
clients against loopback servers speaking their tool-calling formats; the text tool mode;
replay of a run's trajectories."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_runs import DATA, run_agents, smoke, solving_agent, turn_number
from fakeproviders import FakeProvider, FakeRequest, ToolTurn

from deonticbench.data.domains import DOMAINS, get_domain
from deonticbench.evaluation.cache import ResponseCache
from deonticbench.evaluation.validate import check_case, reference_program
from deonticbench.models import load_model
from deonticbench.models.reference import ReferenceModel, reference_table
from deonticbench.solver import Solver
from deonticbench.store.record import Record
from deonticbench.store.spec import AgentOptions
from deonticbench.store.trajectory import read_trajectory, trajectory_problems

pytestmark = pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")
FAST = {"max_tries": 1, "backoff_base_s": 0.01, "backoff_cap_s": 0.02}


def _validate(solver: Solver, domain_names: list[str], count: int) -> dict[tuple[str, str], str]:
    out = {}
    for name in domain_names:
        domain = get_domain(name)
        for case in smoke(domain, count):
            prepared = reference_program(domain, case)
            check = check_case(domain, case, solver.run(prepared.text), prepared.repaired)
            out[(name, case.id)] = check.outcome
    return out


@pytest.mark.parametrize("tool_set", ["prolog", "shell"])
def test_the_reference_agent_agrees_with_validate_case_by_case(
    tool_set: str, solver: Solver, tmp_path: Path
) -> None:
    names = list(DOMAINS) if tool_set == "prolog" else ["airline", "uscis"]
    count = 2
    domains = [get_domain(n) for n in names]
    table = reference_table(c for d in domains for c in smoke(d, count))
    _, records = run_agents(
        ReferenceModel(table), solver, tmp_path / "run", domains=domains, limit=count,
        modes=("agent-zero-shot", "agent-few-shot", "agent-direct"),
        agent=AgentOptions(tool_set=tool_set),
    )  # fmt: skip
    expected = _validate(solver, names, count)
    for (domain, case_id, mode, _), record in records.items():
        assert record.agent is not None and record.agent.tool_set == tool_set
        if mode == "agent-direct":
            assert record.final.outcome == "correct", (domain, case_id)
            continue
        assert record.final.outcome == expected[(domain, case_id)], (domain, case_id, mode)
        stop = "submit" if tool_set == "prolog" else "no_tool_call"
        assert record.agent.stop_reason == stop
        assert record.final.execution is not None  # the judge ran solution.pl itself
    assert len(records) == 3 * len(expected)


def _one(records: dict[tuple[str, str, str, int], Record]) -> Record:
    (record,) = records.values()
    return record


def test_openai_native_tool_calls_run_the_loop_and_a_rerun_pays_for_nothing(
    solver: Solver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "k")
    airline = get_domain("airline")
    cases = smoke(airline, 1)
    with FakeProvider(api_key="k") as fake, ResponseCache(tmp_path / "c.sqlite") as cache:
        fake.responder = solving_agent(cases)
        spec = f"openai-compatible:fake-model@{fake.openai_url}"
        result, records = run_agents(
            load_model(spec, overrides=dict(FAST)), solver, tmp_path / "a",
            domains=[airline], modes=("agent-zero-shot",), limit=1, cache=cache,
        )  # fmt: skip
        record = _one(records)
        assert record.final.outcome == "correct" and record.agent is not None
        assert record.agent.tool_calls == {"read_file": 1, "run_prolog": 1, "submit": 1,
                                           "write_file": 1}  # fmt: skip
        assert record.agent.turns == 4 and record.final.tokens_in > 0
        sent = [r for r in fake.log if r.api == "openai"]
        assert len(sent) == 4 and all("tools" in r.body for r in sent)
        last = sent[-1].body["messages"]
        tool_messages = [m for m in last if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_messages] == ["call_0"] * 3
        assert "status: ok" in tool_messages[-1]["content"]
        assert any(m.get("tool_calls") for m in last if m["role"] == "assistant")
        # The same run again, in a new folder: every turn comes from the cache.
        again, records2 = run_agents(
            load_model(spec, overrides=dict(FAST)), solver, tmp_path / "b",
            domains=[airline], modes=("agent-zero-shot",), limit=1, cache=cache,
        )  # fmt: skip
        assert again.requests == 0 and again.cache_hits == 4
        assert _one(records2).final.answer == record.final.answer
        assert _one(records2).final.cached
    trajectory = read_trajectory(
        tmp_path / "a", record.agent.trajectory or "", record.agent.trajectory_sha256
    )
    assert trajectory_problems(trajectory) == []
    assert result.requests == 4


@pytest.mark.slow
def test_anthropic_tool_use_blocks_run_the_loop(
    solver: Solver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uscis = get_domain("uscis")
    cases = smoke(uscis, 1)
    with FakeProvider(api_key="k") as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        fake.responder = solving_agent(cases)
        _, records = run_agents(
            load_model("anthropic:claude-x", overrides=dict(FAST)), solver, tmp_path / "a",
            domains=[uscis], modes=("agent-zero-shot",), limit=1,
        )  # fmt: skip
        sent = [r for r in fake.log if r.api == "anthropic"]
    record = _one(records)
    assert record.agent is not None and record.agent.stop_reason == "submit"
    assert record.final.execution is not None and record.final.answer is not None
    body = sent[-1].body
    assert body["tools"][0]["input_schema"]["type"] == "object"
    results = [b for m in body["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]  # fmt: skip
    assert len(results) == 3 and all(b["tool_use_id"] == "toolu_0" for b in results)
    assert any(b.get("type") == "tool_use" for m in body["messages"] if m["role"] == "assistant"
               for b in m["content"])  # fmt: skip


def test_the_text_protocol_and_malformed_calls_cost_a_turn_not_the_run(
    solver: Solver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "k")
    airline = get_domain("airline")

    def respond(request: FakeRequest) -> str:
        turn = turn_number(request)
        script = [
            '```tool\n{"name": "read_file", "arguments": {"path": 7}}\n```',  # wrong type
            "```tool\n{not json}\n```",  # bad JSON
            '```tool\n{"name": "frobnicate", "arguments": {}}\n```',  # unknown tool
            '```tool\n{"name": "write_file", "arguments": {"path": "solution.pl"}}\n```',
            "I am done.",  # no call: the trial ends
        ]
        return script[turn]

    with FakeProvider(api_key="k") as fake:
        fake.responder = respond
        spec = f"openai-compatible:fake-model@{fake.openai_url}"
        model = load_model(spec, overrides={**FAST, "tool_mode": "text"})
        _, records = run_agents(
            model, solver, tmp_path / "a", domains=[airline], modes=("agent-zero-shot",), limit=1
        )
        sent = [r for r in fake.log if r.api == "openai"]
    record = _one(records)
    assert record.agent is not None
    assert (record.agent.stop_reason, record.agent.turns) == ("no_tool_call", 5)
    assert record.agent.tool_calls == {"?": 1, "frobnicate": 1, "read_file": 1, "write_file": 1}
    assert record.final.outcome == "abstain" and "no solution.pl" in str(
        record.final.abstain_reason
    )
    assert all("tools" not in r.body for r in sent)
    assert "```tool" in sent[0].body["messages"][1]["content"]  # the tool mode's section
    observations = [m["content"] for m in sent[-1].body["messages"] if m["role"] == "user"][1:]
    assert "must be a string" in observations[0] and "not valid JSON" in observations[1]
    assert "no tool 'frobnicate'" in observations[2] and "needs the argument" in observations[3]


def test_budgets_stop_a_trial_and_what_it_left_is_still_judged(
    solver: Solver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "k")
    airline = get_domain("airline")
    cases = smoke(airline, 1)
    agent = solving_agent(cases)

    def never_submits(request: FakeRequest) -> str | ToolTurn:
        turn = turn_number(request)
        if turn < 3:
            return agent(request)  # read, write the right program, run it
        return ToolTurn("", [("list_files", {})])

    with FakeProvider(api_key="k") as fake:
        fake.responder = never_submits
        spec = f"openai-compatible:fake-model@{fake.openai_url}"
        for name, options, stop in [
            ("turns", AgentOptions(max_turns=6), "max_turns"),
            ("tokens", AgentOptions(max_tokens=400), "max_tokens"),
        ]:
            _, records = run_agents(
                load_model(spec, overrides=dict(FAST)), solver, tmp_path / name,
                domains=[airline], modes=("agent-zero-shot",), limit=1, agent=options,
            )  # fmt: skip
            record = _one(records)
            assert record.agent is not None and record.agent.stop_reason == stop, name
            # The program left in the workspace is judged like any other.
            assert record.final.outcome == "correct", name
        fake.latency_s = 0.4
        _, records = run_agents(
            load_model(spec, overrides=dict(FAST)), solver, tmp_path / "time",
            domains=[airline], modes=("agent-zero-shot",), limit=1,
            agent=AgentOptions(timeout_s=1.0),
        )  # fmt: skip
    record = _one(records)
    assert record.agent is not None and record.agent.stop_reason == "timeout"
    assert record.agent.wall_s < 2.5


def test_replay_of_a_run_folder_replays_its_trajectories(solver: Solver, tmp_path: Path) -> None:
    domains = [get_domain("airline"), get_domain("sara_binary")]
    table = reference_table(c for d in domains for c in smoke(d, 2))
    modes = ("agent-zero-shot", "agent-direct")
    _, first = run_agents(
        ReferenceModel(table), solver, tmp_path / "ref", domains=domains, modes=modes, limit=2
    )
    _, again = run_agents(
        load_model(f"replay:{tmp_path / 'ref'}"), solver, tmp_path / "replayed",
        domains=domains, modes=modes, limit=2,
    )  # fmt: skip

    def summary(records: dict[tuple[str, str, str, int], Record]) -> dict[object, object]:
        return {
            k: (r.final.answer, r.final.outcome, r.agent.tool_calls if r.agent else None)
            for k, r in records.items()
        }

    assert summary(again) == summary(first) and len(first) == 8


def test_hermes_tool_calls_of_vllms_offline_engine_are_read() -> None:
    from deonticbench.models.tool_calls import read_hermes_tool_calls

    text, calls = read_hermes_tool_calls(
        'Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "case.txt"}}\n'
        "</tool_call>\n<tool_call>{broken</tool_call>"
    )
    assert text == "Let me look."
    assert calls[0].name == "read_file" and dict(calls[0].arguments) == {"path": "case.txt"}
    assert calls[1].error is not None and "not valid JSON" in calls[1].error


def test_a_run_resumes_at_sample_level_and_pays_for_no_turn_twice(
    solver: Solver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "k")
    airline = get_domain("airline")
    cases = smoke(airline, 2)
    with FakeProvider(api_key="k") as fake, ResponseCache(tmp_path / "c.sqlite") as cache:
        fake.responder = solving_agent(cases)
        spec = f"openai-compatible:fake-model@{fake.openai_url}"
        first, records = run_agents(
            load_model(spec, overrides=dict(FAST)), solver, tmp_path / "run",
            domains=[airline], modes=("agent-zero-shot",), limit=2, cache=cache,
        )  # fmt: skip
        assert first.new == 2 and first.requests == 8
        # A crash lost the second sample's record: only that trial is done again, and
        # every one of its turns comes from the cache.
        lines = (tmp_path / "run" / "records.jsonl").read_text().splitlines(keepends=True)
        (tmp_path / "run" / "records.jsonl").write_text(lines[0])
        again, records2 = run_agents(
            load_model(spec, overrides=dict(FAST)), solver, tmp_path / "run",
            domains=[airline], modes=("agent-zero-shot",), limit=2, cache=cache,
        )  # fmt: skip
    assert (again.new, again.resumed, again.requests, again.cache_hits) == (1, 1, 0, 4)
    assert {k: r.final.answer for k, r in records2.items()} == {
        k: r.final.answer for k, r in records.items()
    }
