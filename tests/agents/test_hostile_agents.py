"""A hostile agent: every attack is refused or contained with an error
observation, the trial ends within its budget, no process survives it, nothing outside
the workspace changes, and no other trial's files are visible.  Real sandbox, real bash,
real swipl; the agent is scripted."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import hostile_programs as hostile
import pytest
from agent_runs import DATA, SANDBOXED, ScriptedAgent, observations, run_agents

from deonticbench.agents.guards import NO_PROGRAM
from deonticbench.agents.tools import MAX_CALLS_PER_TURN, WORKSPACE_QUOTA_BYTES
from deonticbench.agents.workspace import OBSERVATION_CHARS
from deonticbench.data.domains import get_domain
from deonticbench.solver import Solver
from deonticbench.store.record import Record
from deonticbench.store.spec import AgentOptions

pytestmark = SANDBOXED
AIRLINE = get_domain("airline")
SECRET = "sk-hostile-test-secret-0123456789"


@pytest.fixture(autouse=True)
def planted_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    # A secret in the harness's environment, which no agent may ever see.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)


def _trial(
    script: list[list[tuple[str, dict[str, object]]]],
    solver: Solver,
    out: Path,
    *,
    tool_set: str = "prolog",
    k: int = 1,
    **options: object,
) -> tuple[list[Record], Path]:
    _, records = run_agents(
        ScriptedAgent(script), solver, out, domains=[AIRLINE], modes=("agent-zero-shot",),
        limit=1, k=k, agent=AgentOptions(tool_set=tool_set, **options),  # type: ignore[arg-type]
    )  # fmt: skip
    return list(records.values()), out


def test_paths_out_of_the_workspace_are_refused(solver: Solver, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("host file\n")
    script = [
        [("read_file", {"path": "../../../../etc/passwd"})],
        [("read_file", {"path": "/etc/passwd"})],
        [("read_file", {"path": "/proc/self/environ"})],
        [("write_file", {"path": "../escape.txt", "content": "x"})],
        [("write_file", {"path": str(outside), "content": "overwritten"})],
        [("search", {"pattern": "root", "path": "/etc"})],
        [("run_prolog", {"path": "../../../../etc/hostname"})],
        [("read_file", {"path": ["case.txt"]}), ("read_file", {"path": "case.txt", "offset": "2"})],
        [("write_file", {"path": "a.txt"}), ("read_file", {"path": "case.txt", "x": 1})],
        [("submit", {})],
    ]
    (record,), run_dir = _trial(script, solver, tmp_path / "run")
    seen = observations(record, run_dir)
    assert len(seen) == 12 and all(text.startswith("error:") for text in seen[:-1])
    assert "root:" not in "".join(seen) and SECRET not in "".join(seen)
    assert outside.read_text() == "host file\n" and not (tmp_path / "escape.txt").exists()
    # The last submit comes with no program written: a guard rail refuses it too.
    assert seen[-1] == NO_PROGRAM
    assert record.agent is not None and record.agent.stop_reason == "no_tool_call"
    assert record.final.outcome == "abstain"


@pytest.mark.slow
def test_shell_sees_only_its_workspace_and_no_secret(solver: Solver, tmp_path: Path) -> None:
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "keep.txt").write_text("keep\n")
    script = [
        [("bash", {"command": "cat /proc/self/environ | tr '\\000' '\\n'; env"})],
        [("bash", {"command": f"ls {canary} {DATA} /root 2>&1; echo > {canary}/keep.txt"})],
        [("bash", {"command": "find / -name case.txt -not -path '/proc/*' 2>/dev/null"})],
        [("bash", {"command": "ln -s /etc/hostname solution.pl; ls -l solution.pl"})],
        [("bash", {"command": "touch /etc/x /usr/x 2>&1; echo written > /tmp/t; ls /tmp"})],
    ]
    # Two trials at once (k=2): neither sees the other's workspace.
    records, run_dir = _trial(script, solver, tmp_path / "run", tool_set="shell", k=2)
    for record in records:
        seen = observations(record, run_dir)
        assert SECRET not in "".join(seen) and "OPENAI" not in seen[0]
        assert "No such file" in seen[1] and "keep.txt" not in seen[1].split("\n")[-1]
        assert seen[2].strip().split("\n")[1:] == ["/workspace/case.txt"]
        assert "Read-only file system" in seen[4]
        # The judge refuses the symlinked solution: an abstention, not the host file.
        assert record.final.outcome == "abstain" and record.final.execution is None
    assert (canary / "keep.txt").read_text() == "keep\n"


@pytest.mark.slow
def test_floods_bombs_and_background_processes_are_contained(
    solver: Solver, tmp_path: Path
) -> None:
    marker = f"3{uuid.uuid4().int % 10**6}"  # the background sleeps' seconds, ours alone
    background = f"sleep {marker} & setsid nohup sleep {marker}1 > /dev/null 2>&1 & echo bg"
    script = [
        [("bash", {"command": "yes"})],
        [("bash", {"command": hostile.SHELL_FORK_BOMB})],
        [("bash", {"command": background})],
        [("bash", {"command": "head -c 40000000 /dev/zero > big; ls -l big"})],
        [("bash", {"command": "for i in 1 2 3; do head -c 15000000 /dev/zero > f$i; done; ls"})],
        [("bash", {"command": "sleep 100"})],
    ]
    start = time.monotonic()
    (record,), run_dir = _trial(script, solver, tmp_path / "run", tool_set="shell", timeout_s=10.0)
    took = time.monotonic() - start
    seen = observations(record, run_dir)
    assert all(len(text) <= OBSERVATION_CHARS + 200 for text in seen)
    assert "characters cut" in seen[0] and "exit status 153" in seen[0]  # SIGXFSZ
    assert "bombed" in seen[1] and "Resource temporarily unavailable" in seen[1]  # the limit
    assert "bg" in seen[2] and "fork: retry" not in seen[2]  # the bomb left no process behind
    assert "File size limit exceeded" in seen[3] and "16777216" in seen[3]
    assert f"quota of {WORKSPACE_QUOTA_BYTES}" in seen[4]
    assert record.agent is not None and record.agent.stop_reason == "timeout"
    assert took < 10.0 + 8.0  # the trial's own budget, plus judging
    assert hostile.processes_with(marker) == []


def test_a_thousand_tool_calls_and_endless_turns_end_within_budget(
    solver: Solver, tmp_path: Path
) -> None:
    flood = [[("list_files", {})] * 1000] + [[("list_files", {})]] * 200
    # The repeat guard would stop this loop at its fourth turn: off, to test the budget.
    (record,), run_dir = _trial(flood, solver, tmp_path / "run", max_turns=20, repeat_limit=None)
    seen = observations(record, run_dir)
    assert record.agent is not None and record.agent.stop_reason == "max_turns"
    assert record.agent.turns == 20 and record.agent.tool_calls == {"list_files": 1019}
    refused = [t for t in seen[:1000] if "calls are run per turn" in t]
    assert len(refused) == 1000 - MAX_CALLS_PER_TURN


def test_a_huge_write_is_refused(solver: Solver, tmp_path: Path) -> None:
    script = [[("write_file", {"path": "solution.pl", "content": "x" * (2 << 20)})]]
    (record,), run_dir = _trial(script, solver, tmp_path / "run")
    assert observations(record, run_dir)[0].startswith("error: the content is larger")
    assert os.listdir(tmp_path / "run" / "trajectories")  # the trial was still recorded
