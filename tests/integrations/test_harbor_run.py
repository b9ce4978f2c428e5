"""Harbor's own ``harbor run`` on exported tasks with ``BwrapEnvironment`` (no Docker),
then ``import-harbor`` and ``score``: the oracle agent agrees with ``validate`` case by
case, repeated trials become samples, and terminus-2, driven by a scripted model on a
loopback OpenAI-compatible server, writes and runs a program that the harness re-judges
from the trial's kept artifacts."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from fakeproviders import FakeProvider
from harbor_support import harbor_run, require_harbor, terminus_script

from deonticbench.cli import cli
from deonticbench.data.cases import load_cases
from deonticbench.data.domains import DOMAINS, get_domain
from deonticbench.evaluation.validate import check_case, reference_program
from deonticbench.solver import Solver
from deonticbench.store import read_records

DATA = os.environ.get("DEONTICBENCH_DATA", "")
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)
PER_DOMAIN = 2


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args))
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def _records(run: Path) -> dict[tuple[str, str, str, int], object]:
    return dict(read_records(run / "records.jsonl").records)


@pytest.mark.slow
def test_oracle_agrees_with_validate(tmp_path: Path) -> None:
    require_harbor()
    tasks = tmp_path / "tasks"
    _invoke("export", "--format", "harbor", "--prompt-mode", "zero-shot", "--limit",
            str(PER_DOMAIN), "--out", str(tasks))  # fmt: skip
    job = harbor_run(tasks, tmp_path / "jobs", "oracle", "oracle")
    run = tmp_path / "run"
    printed = _invoke("import-harbor", str(job.parent), "--out", str(run))
    assert f"judged from kept artifacts: {PER_DOMAIN * len(DOMAINS)}" in printed
    records = _records(run)
    assert len(records) == PER_DOMAIN * len(DOMAINS)
    with Solver() as solver:
        for name in DOMAINS:
            domain = get_domain(name)
            for case in load_cases(domain, "hard")[:PER_DOMAIN]:
                prepared = reference_program(domain, case)
                check = check_case(domain, case, solver.run(prepared.text), prepared.repaired)
                record = records[(name, case.id, "agent-zero-shot", 0)]
                assert (record.final.outcome, record.final.answer) == (check.outcome, check.answer)
                assert record.agent.tool_set == "harbor:oracle"
    scored = _invoke("score", str(run), "--bootstrap", "50", "--dar-rules")
    assert "Agent Zero-Shot" in scored and "DAR's rules beside the paper's" in scored
    _timed_out_trials_are_judged_on_what_they_left(job, tmp_path)


def _timed_out_trials_are_judged_on_what_they_left(job: Path, tmp_path: Path) -> None:
    """The agentic rule: a trial that timed out after leaving its program is judged on
    it; one that failed before leaving anything is an abstention naming the failure."""
    copy = tmp_path / "jobs-copy" / "oracle"
    shutil.copytree(job, copy)
    airline = sorted(copy.glob("deonticbench-zeroshot-airline-*"))
    for trial in airline:
        result = json.loads((trial / "result.json").read_text())
        result["exception_info"] = {
            "exception_type": "AgentTimeoutError",
            "exception_message": "Agent execution timed out after 600 seconds",
        }
        (trial / "result.json").write_text(json.dumps(result))
    shutil.rmtree(airline[1] / "artifacts")
    shutil.rmtree(airline[1] / "verifier")
    run = tmp_path / "run-timeouts"
    _invoke("import-harbor", str(copy), "--out", str(run))
    records = {k: r for k, r in _records(run).items() if k[0] == "airline"}
    outcomes = sorted(r.final.outcome for r in records.values())
    assert outcomes == ["abstain", "correct"]
    for record in records.values():
        assert record.agent.stop_reason == "harbor:AgentTimeoutError"
        if record.final.outcome == "abstain":
            assert "AgentTimeoutError" in record.final.abstain_reason


@pytest.mark.slow
def test_direct_oracle_with_repeated_trials(tmp_path: Path) -> None:
    require_harbor()
    tasks = tmp_path / "tasks"
    _invoke("export", "--format", "harbor", "--prompt-mode", "direct", "--domains", "airline",
            "--limit", "1", "--out", str(tasks))  # fmt: skip
    job = harbor_run(tasks, tmp_path / "jobs", "direct", "oracle", "-k", "2")
    run = tmp_path / "run"
    _invoke("import-harbor", str(job), "--out", str(run))
    records = _records(run)
    case = load_cases("airline", "hard")[0]
    assert set(records) == {("airline", case.id, "agent-direct", s) for s in (0, 1)}
    assert all(
        r.final.outcome == "correct" and r.final.answer == case.gold for r in records.values()
    )


@pytest.mark.slow
def test_terminus_2_on_loopback(tmp_path: Path) -> None:
    require_harbor()
    tasks = tmp_path / "tasks"
    _invoke("export", "--format", "harbor", "--prompt-mode", "zero-shot", "--domains",
            "airline,sara_binary", "--limit", "1", "--out", str(tasks))  # fmt: skip
    airline = load_cases("airline", "hard")[0]
    program = reference_program(get_domain("airline"), airline).text
    # airline: the model reads the case, writes the reference program and runs it;
    # sara_binary: it reads the case and stops without writing anything.
    script = terminus_script({"Airline": program, "SARA Bin.": None})
    with FakeProvider(script) as fake:
        job = harbor_run(
            tasks, tmp_path / "jobs", "t2", "terminus-2",
            "-m", "openai/fake-model", "--ak", f"api_base={fake.openai_url}",
            "--ak", "record_terminal_session=false", "--ak", "max_turns=8",
        )  # fmt: skip
        assert any("cat /app/case.txt" in str(r.body) for r in fake.log)
    run = tmp_path / "run"
    _invoke("import-harbor", str(job), "--out", str(run))
    records = _records(run)
    solved = records[("airline", airline.id, "agent-zero-shot", 0)]
    assert (solved.final.outcome, solved.final.answer) == ("correct", airline.gold)
    assert solved.final.tokens_in > 0 and solved.final.tokens_out > 0
    assert solved.agent.tool_set == "harbor:terminus-2" and solved.agent.turns >= 3
    assert solved.agent.trajectory and solved.agent.trajectory_sha256
    from deonticbench.store.trajectory import read_trajectory

    atif = read_trajectory(run, solved.agent.trajectory, solved.agent.trajectory_sha256)
    assert any("base64 -d > /app/solution.pl" in str(step) for step in atif["steps"])
    binary = next(r for k, r in records.items() if k[0] == "sara_binary")
    assert binary.final.outcome == "abstain" and "solution.pl" in binary.final.abstain_reason
    assert "Agent Zero-Shot" in _invoke("score", str(run), "--bootstrap", "50")
