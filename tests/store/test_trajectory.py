"""Trajectory sidecars (ATIF) and the agentic fields of a record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deonticbench.errors import DataError
from deonticbench.store.record import AgentInfo, Attempt, Record, parse_record_line
from deonticbench.store.trajectory import (
    add_step,
    finish_trajectory,
    new_trajectory,
    read_trajectory,
    trajectory_path,
    trajectory_problems,
    write_trajectory,
)


def _atif() -> dict:  # type: ignore[type-arg]
    atif = new_trajectory("s1", agent_name="deonticbench", agent_version="1", model_name="m")
    add_step(atif, "system", "instructions")
    add_step(
        atif,
        "agent",
        "reading",
        tool_calls=[{"tool_call_id": "c1", "function_name": "read_file", "arguments": {}}],
        observations=[("c1", "text")],
        metrics={"prompt_tokens": 10, "completion_tokens": 3},
    )
    finish_trajectory(atif, extra={"stop_reason": "submit"})
    return atif


def test_a_trajectory_round_trips_and_its_hash_guards_it(tmp_path: Path) -> None:
    rel = trajectory_path("uscis", "../x y", "agent-zero-shot", 2)
    assert rel == "trajectories/uscis/.._x_y/agent-zero-shot-2.json"
    digest = write_trajectory(tmp_path, rel, _atif())
    back = read_trajectory(tmp_path, rel, digest)
    assert back["final_metrics"]["total_prompt_tokens"] == 10
    assert trajectory_problems(back) == []
    (tmp_path / rel).write_text(json.dumps(back) + " ")
    with pytest.raises(DataError, match="sha256"):
        read_trajectory(tmp_path, rel, digest)
    with pytest.raises(DataError, match="leaves the run folder"):
        read_trajectory(tmp_path, "../outside.json")


def test_the_problems_of_a_broken_trajectory_are_named() -> None:
    atif = _atif()
    atif["steps"][1]["step_id"] = 5
    call = {"tool_call_id": "z", "function_name": "f", "arguments": "{}"}
    atif["steps"][0]["tool_calls"] = [call]
    atif["steps"][1]["observation"]["results"][0]["source_call_id"] = "nope"
    problems = trajectory_problems(atif)
    assert any("step_id 5" in p for p in problems)
    assert any("not an agent step" in p for p in problems)
    assert any("not an object" in p for p in problems)
    assert any("unknown call 'nope'" in p for p in problems)


def _record(agent: AgentInfo | None) -> Record:
    attempt = Attempt(index=0, prompt_hash="h", response="r", answer=1.0, outcome="correct")
    mode = "agent-zero-shot" if agent else "zero-shot"
    return Record("airline", "1", mode, 0, 1, "m", [attempt], agent=agent)  # type: ignore[arg-type]


def test_a_record_carries_agent_info_only_when_it_has_some() -> None:
    prompted = _record(None).to_json()
    assert "agent" not in prompted
    info = AgentInfo("prolog", 3, {"run_prolog": 2}, "submit", 1.5, "t.json", "ab", None)
    line = json.dumps(_record(info).to_json())
    back = parse_record_line(line)
    assert back is not None and back.agent == info and back.mode == "agent-zero-shot"
    broken = json.loads(line)
    broken["agent"] = {"tool_set": "prolog"}
    with pytest.raises(ValueError, match="malformed"):
        parse_record_line(json.dumps(broken))
