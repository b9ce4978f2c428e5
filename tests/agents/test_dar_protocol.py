"""``eval --protocol dar``: DAR's framing of the agentic modes in the harness's own sandbox.

A scripted agent (no model) runs each agentic mode on the smoke split through the real
runner, bubblewrap shell and swipl: what it is told is DAR's instruction.md followed by
the harness's tools section; what it finds at /app (``sha256sum`` and ``ls`` inside the
sandbox) is DAR's statute.txt and examples.txt byte for byte and an empty output/,
nothing else; DAR's verdict in each record is what ``reading.dar_verifier.ajudge_dar_app`` gives for
the same final state, and ``score`` prints DAR's default and strict figures beside the
harness reader's.  The real openai client against a loopback server drives one trial
through /app paths of the file tools; the refusals are one sentence each.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path

import pytest
from agent_runs import DATA, SANDBOXED, ScriptedAgent, case_in, observations, smoke, turn_number
from click.testing import CliRunner
from fakeproviders import FakeProvider, FakeRequest, ToolTurn

from deonticbench.cli import cli
from deonticbench.data.cases import Case, resolve_source
from deonticbench.data.dar_files import DAR_DIR_ENV
from deonticbench.data.domains import get_domain
from deonticbench.errors import ConfigError
from deonticbench.evaluation.runner import Runner
from deonticbench.models import load_model
from deonticbench.models.base import Completion, Request
from deonticbench.prompting.dar_task import DarTask, dar_task
from deonticbench.prompting.plan import plan_run
from deonticbench.reading.dar_verifier import ajudge_dar_app
from deonticbench.solver import Solver
from deonticbench.store.folder import RunFolder
from deonticbench.store.record import Record
from deonticbench.store.spec import AgentOptions, RunSpec
from deonticbench.vocabulary.modes import Mode, prompted_counterpart
from deonticbench.vocabulary.protocols import mode_protocol

DAR = Path(__file__).resolve().parents[3] / "shared" / "harbor-deonticbench"
pytestmark = [
    *SANDBOXED,
    pytest.mark.skipif(not (DAR / "adapters").is_dir(), reason="no mirror of DAR's repository"),
]
DOMAINS = ("airline", "sara_numeric", "uscis")
ANSWER = "Answer: 1166"
"""What every scripted trial answers: right for the first airline smoke case only."""
HARNESS_OUTCOMES = {"airline": "correct", "sara_numeric": "wrong", "uscis": "abstain"}
LOOK = "sha256sum /app/*.txt; echo ---; ls -A /app /app/output; echo ---; pwd"


@pytest.fixture(autouse=True)
def _dar_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DAR_DIR_ENV, str(DAR))


def _finish(mode: Mode) -> str:
    """The shell command that leaves the final state (through /app paths)."""
    if prompted_counterpart(mode) == "direct":
        return f"printf '{ANSWER}\\n' > /app/output/answer.txt"
    return f"printf ':- format(\"{ANSWER}~n\").\\n:- halt.\\n' > /app/solution.pl"


class _Looking(ScriptedAgent):
    """Looks at /app, leaves its answer, stops; keeps each trial's opening message."""

    def __init__(self, mode: Mode) -> None:
        super().__init__([[("bash", {"command": LOOK})], [("bash", {"command": _finish(mode)})]])
        self.openings: dict[str, str] = {}

    async def generate(self, request: Request) -> list[Completion]:
        self.openings[request.case_id] = request.messages[1].content
        return await super().generate(request)


def _run_dar(agent: ScriptedAgent, mode: Mode, out: Path, solver: Solver) -> list[Record]:
    plan = plan_run(
        [get_domain(d) for d in DOMAINS], split="smoke", modes=[mode], k=1, limit=1,
        source=resolve_source(DATA), protocol="dar",
    )  # fmt: skip
    config = {"model": {"spec": agent.spec}, "split": "smoke", "protocol": "dar"}

    async def go() -> list[Record]:
        with RunFolder.open(out, config) as folder:
            runner = Runner(agent, solver, folder, agent=AgentOptions(tool_set="shell"))
            await runner.run(plan)
            return list(folder.done.values())

    return asyncio.run(go())


def _task(record: Record) -> tuple[Case, DarTask]:
    case = next(c for c in smoke(get_domain(record.domain), 1) if c.id == record.case_id)
    counterpart = prompted_counterpart(record.mode)
    assert counterpart in ("direct", "zero-shot", "few-shot")
    return case, dar_task(case, counterpart, source=resolve_source(DATA))


async def _dar_judge(task: DarTask, mode: Mode, app: Path, solver: Solver) -> dict[str, object]:
    """``ajudge_dar_app`` on a fresh /app holding what the scripted agent left."""
    direct = prompted_counterpart(mode) == "direct"
    (app / "output").mkdir(parents=True)
    if direct:
        (app / "output" / "answer.txt").write_text(f"{ANSWER}\n")
    else:
        (app / "solution.pl").write_text(f':- format("{ANSWER}~n").\n:- halt.\n')
    verdict = await ajudge_dar_app(app, task.expected_label, direct=direct, solver=solver)
    return {"reward": verdict.reward, "stdout": verdict.stdout, "exception": verdict.exception}


@pytest.mark.parametrize("mode", ["agent-direct", "agent-zero-shot", "agent-few-shot"])
def test_a_dar_trial_sees_dars_task_and_is_judged_by_dars_verifier(
    mode: Mode, solver: Solver, tmp_path: Path
) -> None:
    agent = _Looking(mode)
    records = _run_dar(agent, mode, tmp_path / "run", solver)
    assert sorted(r.domain for r in records) == sorted(DOMAINS)
    for record in records:
        case, task = _task(record)
        opening = agent.openings[case.id]
        assert opening.startswith(task.instruction.rstrip() + "\n\n")
        assert "bash(command)" in opening  # the harness's tools section follows DAR's text
        assert task.expected_label not in opening.removeprefix(task.instruction)
        seen = observations(record, tmp_path / "run")[0]
        digests, listing, where = seen.split("---")
        for name, text in task.app_files.items():
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            assert f"{digest}  /app/{name}" in digests, (record.key, name)
        assert len(re.findall(r"  /app/", digests)) == len(task.app_files)
        expected_listing = ["/app:", *sorted([*task.app_files, "output"]), "", "/app/output:"]
        assert listing.strip().splitlines() == expected_listing
        assert where.strip() == "/app"
        assert record.agent is not None and record.agent.dar is not None
        app = tmp_path / "judged" / record.domain
        assert record.agent.dar == asyncio.run(_dar_judge(task, mode, app, solver))
        gold_right = record.domain == "airline"
        assert record.agent.dar["reward"] == int(gold_right)
        # the harness reader: right, wrong, and no class at all for uscis
        assert record.final.outcome == HARNESS_OUTCOMES[record.domain]
    _scores_show_both_readings(tmp_path / "run", mode)


def _scores_show_both_readings(run: Path, mode: Mode) -> None:
    result = CliRunner().invoke(cli, ["score", str(run), "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    assert "dar, harness reader" in result.output
    table = result.output.split("DAR's verifier and scorer beside the harness reader")[1]
    assert "harness (point)" in table
    airline = next(line.split() for line in table.splitlines() if line.startswith("airline "))
    # the harness reader's figure, DAR's default and DAR's strict, side by side
    assert airline[:7] == ["airline", mode, "accuracy", "1", "100.0", "100.0", "100.0"]
    sara = next(line.split() for line in table.splitlines() if line.startswith("sara_numeric"))
    assert sara[3:7] == ["1", "0.0", "0.0", "0.0"]
    against = CliRunner().invoke(cli, ["score", str(run), "--against", "dar", "--bootstrap", "50"])
    assert against.exit_code == 0, against.output
    assert "(DAR strict)" in against.output and "(harness reader)" in against.output
    assert "DAR T1" in against.output


def test_no_answer_line_is_dars_no_reward_beside_the_harness_abstention(
    solver: Solver, tmp_path: Path
) -> None:
    """A program that prints no ``Answer:`` line: test.sh writes no reward, which DAR's
    scorer reads as ``("", "")``: correct by default, wrong when strict; the harness
    reader abstains."""
    program = ':- format("Result: 1166~n").\n:- halt.\n'
    write = f"printf '{program}' > /app/solution.pl".replace("\n", "\\n")
    agent = ScriptedAgent([[("bash", {"command": write})]])
    records = _run_dar(agent, "agent-zero-shot", tmp_path / "run", solver)
    for record in records:
        assert record.agent is not None
        assert record.agent.dar == {"reward": None, "stdout": "",
                                    "exception": "RewardFileNotFoundError"}  # fmt: skip
        assert record.final.outcome == "abstain"
    result = CliRunner().invoke(cli, ["score", str(tmp_path / "run"), "--bootstrap", "50"])
    table = result.output.split("DAR's verifier and scorer beside the harness reader")[1]
    airline = next(line.split() for line in table.splitlines() if line.startswith("airline "))
    assert airline[4:7] == ["0.0", "100.0", "0.0"]


def test_the_openai_client_works_the_file_tools_through_app_paths(
    solver: Solver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "k")
    cases = smoke(get_domain("airline"), 1)

    def respond(request: FakeRequest) -> str | ToolTurn:
        case = case_in(request, cases)  # DAR's instruction holds the facts and question
        assert case is not None
        program = f':- format("Answer: {case.gold}~n").\n:- halt.\n'
        script = [
            ToolTurn("", [("read_file", {"path": "/app/statute.txt", "limit": 3})]),
            ToolTurn("", [("write_file", {"path": "/app/solution.pl", "content": program})]),
            ToolTurn("", [("run_prolog", {"path": "/app/solution.pl"})]),
            ToolTurn("", [("read_file", {"path": "/etc/passwd"})]),
            ToolTurn("", [("write_file", {"path": "/app/statute.txt", "content": "x"})]),
            ToolTurn("", [("submit", {})]),
        ]
        turn = turn_number(request)
        return script[turn] if turn < len(script) else "done"

    with FakeProvider(api_key="k") as fake:
        fake.responder = respond
        model = load_model(f"openai-compatible:fake@{fake.openai_url}", overrides={"max_tries": 1})
        plan = plan_run(
            [get_domain("airline")], split="smoke", modes=["agent-zero-shot"], k=1, limit=1,
            source=resolve_source(DATA), protocol="dar",
        )  # fmt: skip
        config = {"model": {"spec": model.spec}, "split": "smoke", "protocol": "dar"}

        async def go() -> list[Record]:
            try:
                with RunFolder.open(tmp_path / "run", config) as folder:
                    await Runner(model, solver, folder).run(plan)
                    return list(folder.done.values())
            finally:
                await model.aclose()

        (record,) = asyncio.run(go())
    seen = observations(record, tmp_path / "run")
    assert seen[0].startswith("/app/statute.txt: lines 1-3")
    assert seen[1].startswith("wrote ") and "status: ok" in seen[2]
    assert seen[3].startswith("error:") and "absolute" in seen[3]
    assert seen[4] == (
        "error: refused: /app/statute.txt is an input of the task and stays as it is; "
        "write your program to /app/solution.pl"
    )
    assert record.agent is not None and record.agent.dar is not None
    assert record.agent.dar["reward"] == 1 and record.final.outcome == "correct"
    sent = [r for r in fake.log if r.api == "openai"]
    assert len(sent) == 6 and all("tools" in r.body for r in sent)


@pytest.mark.parametrize(
    ("domain", "stdout", "read", "dar_got"),
    [
        ("airline", "Answer: $1,166\n", 1166.0, "$1,166"),  # DAR: not 1166
        ("airline", "Answer: 11\nAnswer: 66\n", None, "1166"),  # DAR joins two lines
        ("sara_binary", "Answer: entailment.\n", "Entailment", "entailment."),
        ("uscis", "ANSWER: Accepted\n", "Accepted", "answer:accepted"),  # DAR keeps ANSWER:
        ("uscis", "Accepted\n", None, None),  # the domain's own line is not asked for
    ],
)
def test_the_harness_reads_dars_answer_line_by_its_own_rules(
    domain: str, stdout: str, read: object, dar_got: str | None
) -> None:
    """The harness reader's figure of a dar final state reads ``Answer: <value>`` (DAR's
    line in every mode) by the harness's rules, beside what DAR's verifier reads."""
    from deonticbench.agents.dar_judge import harness_domain
    from deonticbench.reading.answers import read_program_answer
    from deonticbench.reading.dar_verifier import answer_text, normalise

    assert read_program_answer(harness_domain(get_domain(domain)), stdout).value == read
    got = answer_text(stdout)
    assert (normalise("x", got)[1] if got is not None else None) == dar_got


def test_the_agentic_modes_follow_dar_under_a_dar_run() -> None:
    assert mode_protocol("dar", "agent-few-shot") == "dar"
    assert mode_protocol("harness", "agent-few-shot") == "harness"


PROMPTED_REFUSAL = (
    "--protocol dar runs the agentic modes only (agent-direct, agent-zero-shot, "
    "agent-few-shot), not direct, rules-given: run those under --protocol paper or harness."
)
HOUSING_REFUSAL = (
    "housing is not in DAR's task set, so --protocol dar refuses it: pass --domains "
    "airline (or run it under --protocol harness)."
)


def test_a_dar_run_refuses_prompted_modes_and_housing_in_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as prompted:
        RunSpec(model="reference", protocol="dar", domains="airline",
                modes="agent-direct,direct,rules-given")  # fmt: skip
    assert str(prompted.value) == PROMPTED_REFUSAL
    with pytest.raises(ConfigError) as housing:
        RunSpec(model="reference", protocol="dar", domains="airline,housing", modes="agent-direct")
    assert str(housing.value) == HOUSING_REFUSAL
    for modes, sentence in (("agent-direct,direct,rules-given", PROMPTED_REFUSAL),
                            ("agent-direct", HOUSING_REFUSAL)):  # fmt: skip
        domains = "airline" if "rules-given" in modes else "airline,housing"
        out = tmp_path / modes.replace(",", "_")
        result = CliRunner().invoke(cli, [
            "eval", "--model", "reference", "--protocol", "dar", "--modes", modes,
            "--domains", domains, "--split", "smoke", "--out", str(out), "--no-cache",
        ])  # fmt: skip
        assert result.exit_code != 0
        assert str(result.exception) == sentence
        assert not out.exists()


def test_eval_protocol_dar_writes_a_run_that_score_against_dar_accepts(tmp_path: Path) -> None:
    """The real command end to end (the reference agent): config.json says dar, and
    ``score --against dar`` sets DAR's published table beside it."""
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, [
        "eval", "--model", "reference", "--protocol", "dar", "--modes", "agent-zero-shot",
        "--domains", "airline", "--split", "smoke", "--limit", "1", "-k", "1",
        "--out", str(out), "--no-cache",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    # The reference programs print airline's own line, not DAR's Answer: line: the
    # summary says so, and does not blame the data for it.
    assert "a framing the programs predate" in result.output
    assert "defects of the data" not in result.output
    assert json.loads((out / "config.json").read_text())["protocol"] == "dar"
    (line,) = (out / "records.jsonl").read_text().splitlines()
    assert json.loads(line)["agent"]["dar"]["exception"] in (None, "RewardFileNotFoundError")
    against = CliRunner().invoke(cli, ["score", str(out), "--against", "dar", "--bootstrap", "50"])
    assert against.exit_code == 0, against.output
    assert "Agent Zero-Shot (DAR)" in against.output


def test_a_dar_run_without_modes_or_domains_runs_dars_tasks(tmp_path: Path) -> None:
    """``eval --protocol dar`` with no ``--modes`` and no ``--domains`` runs what dar runs:
    the agentic three on DAR's task set (housing left out, and said so, as the export
    does), where the paper's three modes and housing would only be refused."""
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, [
        "eval", "--model", "reference", "--protocol", "dar",
        "--split", "smoke", "--limit", "1", "-k", "1", "--out", str(out), "--no-cache",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "housing left out: not in DAR's task set." in result.output
    config = json.loads((out / "config.json").read_text())
    assert config["modes"] == ["agent-direct", "agent-zero-shot", "agent-few-shot"]
    assert sorted(config["domains"]) == ["airline", "sara_binary", "sara_numeric", "uscis"]
