"""``score --dar-rules JOBS_DIR`` against DAR's own scorers, run from the read-only mirror.

A Harbor jobs folder is written with Harbor's own models (``TrialConfig``,
``TrialResult``, ``JobConfig``, dumped as Harbor's trial and job write them) and Harbor's
trial naming, holding every trial shape DAR's scorers meet: a correct answer, a decimal
cut at its point, ``$1,166``, two answer lines joined into one number, lower-case
classes, an exception with and without verifier output, a verifier that wrote nothing,
an empty answer, a task of another benchmark, and the same agent/model run twice so that
only the later run counts.  ``evaluate_deonticbench.py`` (default and
``--errors-as-incorrect``) and meta-harness's ``evaluate_jobs.py`` are run on it with the
project's Python; the command must print the same text.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from deonticbench.cli import cli
from deonticbench.integrations.harbor import dar_rules

harbor_config = pytest.importorskip("harbor.models.trial.config")
harbor_result = pytest.importorskip("harbor.models.trial.result")
harbor_job = pytest.importorskip("harbor.models.job.config")
from harbor.models.agent.context import AgentContext  # noqa: E402
from harbor.models.task.id import LocalTaskId  # noqa: E402

DAR = Path(__file__).resolve().parents[3] / "shared" / "harbor-deonticbench"
ADAPTERS_SCORER = DAR / "evaluate_deonticbench.py"
KIRA_SCORER = DAR / "meta-harness" / "reference_examples" / "terminal_bench_2" / "evaluate_jobs.py"
pytestmark = pytest.mark.skipif(
    not ADAPTERS_SCORER.is_file(), reason="DAR's mirror is not available"
)

NUMERIC = "deonticbench-fewshot-sara-numeric-tax-case-"
AIRLINE = "deonticbench-fewshot-airline-airline-cases-complexity-1-airline-cases-"
BINARY = "deonticbench-fewshot-sara-binary-s1-a-"
USCIS = "deonticbench-fewshot-uscis-aao-uscis-"
WHEN = datetime(2026, 11, 1, 10, 0, tzinfo=UTC)


def _trial(
    job: Path,
    task: str,
    agent: dict[str, str | None],
    *,
    expected: str | None = None,
    answers: tuple[str, ...] | None = (),
    exception: str | None = None,
    tokens: int = 1000,
) -> None:
    """One trial as Harbor writes it; the verifier's stdout as DAR's test.sh prints it
    (``answers`` None: no verifier output at all)."""
    config = harbor_config.TrialConfig(
        task=harbor_config.TaskConfig(path=Path("datasets") / task),
        trials_dir=job,
        agent=harbor_config.AgentConfig(**agent),
    )
    folder = job / config.trial_name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(config.model_dump_json(indent=4))
    info = None
    if exception:
        info = harbor_result.ExceptionInfo(
            exception_type=exception,
            exception_message="stopped",
            exception_traceback="Traceback",
            occurred_at=WHEN,
        )
    result = harbor_result.TrialResult(
        task_name=task,
        trial_name=config.trial_name,
        trial_uri=folder.as_uri(),
        task_id=LocalTaskId(path=Path("datasets") / task),
        task_checksum="0" * 64,
        config=config,
        agent_info=harbor_result.AgentInfo(name=agent.get("name") or "kira", version="1"),
        agent_result=AgentContext(
            n_input_tokens=tokens,
            n_output_tokens=tokens // 7,
            n_cache_tokens=tokens // 3,
            cost_usd=tokens / 3e5,
        ),
        exception_info=info,
        started_at=WHEN,
        finished_at=WHEN,
    )
    (folder / "result.json").write_text(result.model_dump_json(indent=4))
    if answers is None or expected is None:
        return
    got = dar_rules.squeeze(answers)  # test.sh: every Answer: line, whitespace gone, joined
    norm_expected, norm_got = dar_rules.normalise(expected, got)
    (folder / "verifier").mkdir()
    (folder / "verifier" / "test-stdout.txt").write_text(
        f"Expected: {expected}\nGot:      {got}\n"
        f"Normalized expected: {norm_expected}\nNormalized got:      {norm_got}\n"
    )


def _job(parent: Path, name: str, agent: dict[str, str | None]) -> Path:
    job = parent / name
    job.mkdir(parents=True)
    config = harbor_job.JobConfig(
        job_name=name, jobs_dir=parent, agents=[harbor_config.AgentConfig(**agent)]
    )
    (job / "config.json").write_text(config.model_dump_json(indent=4))
    (job / "result.json").write_text('{"id": "job", "n_total_trials": 0}')
    return job


def _every_shape(job: Path, agent: dict[str, str | None], first: int) -> None:
    """Every trial shape once, task numbers from ``first`` (so runs differ)."""
    n = first
    _trial(job, f"{NUMERIC}{n}", agent, expected="1166", answers=("1166",))
    _trial(job, f"{NUMERIC}{n + 1}", agent, expected="949", answers=("949.7",), tokens=0)
    _trial(job, f"{NUMERIC}{n + 2}", agent, expected="300", answers=("100", "200"))
    _trial(job, f"{NUMERIC}{n + 3}", agent, answers=None, exception="AgentTimeoutError")
    _trial(job, f"{AIRLINE}{n}", agent, expected="1166", answers=("$1,166",))
    _trial(job, f"{AIRLINE}{n + 1}", agent, expected="75", answers=())
    _trial(
        job, f"{AIRLINE}{n + 2}", agent, expected="75", answers=("75",), exception="RuntimeError"
    )
    _trial(job, f"{AIRLINE}{n + 3}", agent, answers=None)  # the verifier wrote nothing
    _trial(job, f"{BINARY}{n}-pos", agent, expected="Entailment", answers=("entailment",))
    _trial(job, f"{BINARY}{n + 1}-neg", agent, expected="Contradiction", answers=("Entailment",))
    _trial(job, f"{BINARY}{n + 2}-neg", agent, answers=None, exception="RewardFileNotFoundError")
    _trial(job, f"{USCIS}{n}", agent, expected="Accepted", answers=("Dismissed",))
    _trial(job, f"{USCIS}{n + 1}", agent, expected="Dismissed", answers=("dismissed",))
    _trial(job, f"hello-world-{n}", agent, expected="1", answers=("1",))  # not DeonticBench


T2 = {"name": "terminus-2", "model_name": "openai/gpt-5.2"}
CC = {"name": "claude-code", "model_name": "openrouter/qwen/qwen3.5-122b"}
KIRA = {"import_path": "agents.terminus_kira:TerminusKira", "model_name": "openai/gpt-5.1"}


@pytest.fixture
def adapters_jobs(tmp_path: Path) -> Path:
    """DAR's layout: jobs/<name>/<timestamp run>/<trial>; terminus-2 ran twice."""
    parent = tmp_path / "jobs" / "deontic-fewshot"
    _every_shape(_job(parent, "2026-11-01__10-00-00", T2), T2, 1)
    _every_shape(_job(parent, "2026-11-02__09-30-00", T2), T2, 101)
    _every_shape(_job(parent, "2026-11-01__12-00-00", CC), CC, 201)
    return parent


@pytest.fixture
def kira_jobs(tmp_path: Path) -> Path:
    """meta-harness's layout: jobs/<run>/<job>/<trial>; two jobs of one agent/model."""
    root = tmp_path / "jobs" / "deontic-gpt51"
    _every_shape(_job(root, "2026-11-03__08-00-00", KIRA), KIRA, 1)
    _every_shape(_job(root, "2026-11-04__08-00-00", KIRA), KIRA, 301)
    return root


def _theirs(script: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def _ours(*args: str) -> str:
    result = CliRunner().invoke(cli, ["score", "--dar-rules", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("strict", [False, True])
def test_adapters_scorer_printed_byte_for_byte(adapters_jobs: Path, strict: bool) -> None:
    flags = ["--errors-as-incorrect"] if strict else []
    theirs = _theirs(ADAPTERS_SCORER, str(adapters_jobs), *flags)
    assert "[latest-only] terminus-2 / openai/gpt-5.2" in theirs  # the rule is exercised
    assert "(skipped 3 non-deonticbench trials)" in theirs
    assert _ours(str(adapters_jobs), *flags) == theirs


def test_meta_harness_scorer_printed_byte_for_byte(kira_jobs: Path) -> None:
    theirs = _theirs(KIRA_SCORER, str(kira_jobs))
    assert "skipping older run 2026-11-03__08-00-00" in theirs
    assert "terminus_kira / gpt-5.1" in theirs
    assert _ours(str(kira_jobs)) == theirs  # auto: every agent loaded by import path
    assert _ours(str(kira_jobs), "--dar-scorer", "meta-harness") == theirs


def test_scorer_chosen_by_hand(adapters_jobs: Path, kira_jobs: Path) -> None:
    theirs = _theirs(KIRA_SCORER, str(adapters_jobs))
    assert _ours(str(adapters_jobs), "--dar-scorer", "meta-harness") == theirs
    theirs = _theirs(ADAPTERS_SCORER, str(kira_jobs))
    assert _ours(str(kira_jobs), "--dar-scorer", "adapters") == theirs


def _command(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "deonticbench", "score", "--dar-rules", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_bad_requests_say_so(kira_jobs: Path, tmp_path: Path) -> None:
    done = _command("--errors-as-incorrect", str(kira_jobs))
    assert done.returncode != 0
    assert "meta-harness scorer has no --errors-as-incorrect" in done.stderr
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text("")
    done = _command(str(kira_jobs), str(run))
    assert done.returncode != 0
    assert "jobs folders or run folders, not both" in done.stderr


def test_dar_table_is_the_published_one() -> None:
    """resources/dar_results.json holds DAR's Appendix Table 1: 30 model x harness rows of
    four domains, with its source pinned to the commit it was read at."""
    from deonticbench.scoring.dar_published import DAR_RESULTS, load_dar_results

    cells = load_dar_results()
    assert len(cells) == 120
    rows = {(c.model, c.harness) for c in cells}
    assert len(rows) == 30
    kira = {
        c.domain: c.value for c in cells if (c.model, c.harness) == ("GPT-5.2", "terminus-kira")
    }
    assert kira == {
        "sara_numeric": "0.600",
        "airline": "0.363",
        "sara_binary": "0.569",
        "uscis": "0.713",
    }
    assert "49ba307" in DAR_RESULTS.read_text()
