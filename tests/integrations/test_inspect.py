"""DeonticBench inside inspect_ai, offline: inspect's own ``mockllm/model`` answers with
scripted responses (reference programs, broken programs, programs that print a wrong
amount, prose without code, direct answers), through ``inspect_ai.eval()`` and through
the ``inspect eval`` command line.  The same responses replayed through ``deonticbench
eval --model replay:`` must give the same prompts, the same records and the same
scores; ``import-inspect`` must bring the log back with identical scores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval  # the dev extra installs inspect_ai
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import get_model
from inspect_script import Script, first_prompt_hash, forbid_network

from deonticbench.data.cases import Case
from deonticbench.data.domains import get_domain
from deonticbench.errors import ConfigError
from deonticbench.integrations.inspect import airline, deonticbench, uscis
from deonticbench.integrations.inspect._messages import from_inspect
from deonticbench.integrations.inspect._plan import TaskOptions, plan_for
from deonticbench.prompting import prompt_hash
from deonticbench.store import read_records

TESTS = Path(__file__).resolve().parents[1]
DATA = os.environ.get("DEONTICBENCH_DATA") or str(TESTS.parents[1] / "shared" / "deonticbench-data")
pytestmark = [
    pytest.mark.skipif(
        not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
    ),
    # inspect's own call into tenacity, not ours.
    pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning"),
]
SPLIT = "smoke"
B = 500  # bootstrap replicates: enough to tell two streams apart, quick to draw


@pytest.fixture(autouse=True)
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Logs in tmp, nothing on screen, no telemetry hook, no way off the machine; and
    afterwards, proof that nothing tried (even if inspect swallowed the refusal)."""
    monkeypatch.setenv("DEONTICBENCH_DATA", DATA)
    monkeypatch.setenv("INSPECT_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("INSPECT_DISPLAY", "none")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("INSPECT_TELEMETRY", "INSPECT_API_KEY_OVERRIDE", "INSPECT_REQUIRED_HOOKS"):
        monkeypatch.delenv(name, raising=False)
    attempts = forbid_network(monkeypatch.setattr)
    yield
    assert attempts == [], f"the test tried to reach the network: {attempts}"


# -- scripted responses -------------------------------------------------------------------


def reference(case: Case) -> str:
    return f"```prolog\n{case.reference_prolog.strip()}\n```"


def prints(line: str) -> str:
    """A program that runs cleanly and prints ``line``."""
    return f'```prolog\n:- initialization(main).\nmain :- format("{line}~n").\n```'


BROKEN = "```prolog\n:- initialization(main).\nmain :- total(X, .\n```"
PROSE = "The fee depends on the bags; I would need to check the statute more carefully."


def program_script(domain: str, mode: str) -> Script:
    """Per case, three first attempts (one per epoch) and the retries: right, wrong,
    broken, no code at all; retries that fix it or fail again."""
    plan = plan_for(TaskOptions(domain, SPLIT, mode, 0, None, False, None))
    responses: dict[str, list[list[str]]] = {}
    for i, unit in enumerate(plan.units):
        case = unit.case
        wrong = prints(f"Total cost: {int(case.gold) + 37}")
        first = [
            [reference(case), reference(case), wrong],
            [reference(case), BROKEN, PROSE],
            [BROKEN, wrong, reference(case)],
            [PROSE, PROSE, BROKEN],
            [wrong, reference(case), BROKEN],
        ][i % 5]
        retry = [[reference(case)], [BROKEN], [wrong]][i % 3]
        key = first_prompt_hash(_rendered(unit))
        responses[key] = [first, retry]
    return Script(responses)


def direct_script(domain: str) -> Script:
    plan = plan_for(TaskOptions(domain, SPLIT, "direct", 0, None, False, None))
    spec = get_domain(domain)
    responses: dict[str, list[list[str]]] = {}
    for i, unit in enumerate(plan.units):
        gold = str(unit.case.gold)
        other = next(c for c in spec.classes if c != gold)
        right, wrong = f"Answer: {gold}", f"Reasoning...\nAnswer: {other}"
        options = [
            [right, right, wrong, PROSE],
            [wrong, wrong, right, right],
            [PROSE, right, right, right],
            [wrong, PROSE, wrong, right],
            [right, wrong, PROSE, PROSE],
        ][i % 5]
        responses[first_prompt_hash(_rendered(unit))] = [options]
    return Script(responses)


def _rendered(unit: Any) -> Any:
    # The unit's own prompt, under the protocol it follows (the task's default: paper).
    return unit.render().messages


# -- helpers --------------------------------------------------------------------------------


def run_cli(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    full.update({"DEONTICBENCH_DATA": DATA, "DEONTICBENCH_CACHE": str(tmp_path / "c.sqlite")})
    full.update(env)
    return subprocess.run(args, cwd=tmp_path, env=full, capture_output=True, text=True, timeout=300)


def deonticbench_cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli([sys.executable, "-m", "deonticbench", *args], tmp_path)


def scores_json(tmp_path: Path, run: Path) -> list[dict[str, Any]]:
    done = deonticbench_cli(tmp_path, "score", str(run), "-B", str(B), "--json")
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)["runs"][0]["scores"]
    return rows


def inspect_metrics(log: EvalLog) -> dict[str, float]:
    assert log.results is not None
    return {k: v.value for s in log.results.scores for k, v in s.metrics.items()}


def attempts_sent(log: EvalLog) -> dict[tuple[str, int], list[tuple[str, str]]]:
    """(case id, sample) -> per attempt, (hash of the messages the model was sent, the
    response it gave), read from the conversation inspect logged."""
    out: dict[tuple[str, int], list[tuple[str, str]]] = {}
    assert log.samples is not None
    for sample in log.samples:
        turns = []
        messages = from_inspect(sample.messages)
        for i, m in enumerate(messages):
            if m.role == "assistant":
                turns.append((prompt_hash(messages[:i]), m.content))
        out[(str(sample.id), sample.epoch - 1)] = turns
    return out


def replay_file(log: EvalLog, domain: str, mode: str, path: Path) -> Path:
    lines = [
        json.dumps(
            {
                "domain": domain,
                "case_id": case_id,
                "mode": mode,
                "sample": sample,
                "attempt": attempt,
                "response": response,
            }
        )
        for (case_id, sample), turns in sorted(attempts_sent(log).items())
        for attempt, (_, response) in enumerate(turns)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def compare_scores(metrics: dict[str, float], row: dict[str, Any], prefix: str = "") -> None:
    name = row["metric"]
    assert metrics[f"{prefix}{name}"] == pytest.approx(row["point"], abs=1e-9)
    assert metrics[f"{prefix}wrong_rate"] == pytest.approx(row["wrong_rate"], abs=1e-9)
    assert metrics[f"{prefix}abstain_rate"] == pytest.approx(row["abstain_rate"], abs=1e-9)
    # The bootstrap: the same draws from the same seed, bit for bit.
    assert metrics[f"{prefix}{name}_mean"] == row["mean"]
    assert metrics[f"{prefix}{name}_low"] == row["ci_low"]
    assert metrics[f"{prefix}{name}_high"] == row["ci_high"]


SCORE_FIELDS = (
    "metric",
    "n_cases",
    "k",
    "n_samples",
    "point",
    "mean",
    "ci_low",
    "ci_high",
    "accuracy",
    "wrong_rate",
    "abstain_rate",
    "domain",
    "mode",
    "stage",
)


# -- the tests ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("domain", "mode", "attempts"),
    [("airline", "few-shot", 2), ("sara_binary", "direct", 1)],
)
def test_inspect_eval_equals_deonticbench_on_the_same_responses(
    tmp_path: Path, domain: str, mode: str, attempts: int
) -> None:
    script = direct_script(domain) if mode == "direct" else program_script(domain, mode)
    model = get_model("mockllm/model", custom_outputs=script)
    task = deonticbench(domain=domain, split=SPLIT, mode=mode, attempts=attempts, bootstrap=B)
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    k = get_domain(domain).default_k
    assert log.eval.config.epochs == k  # the paper's K for the domain
    assert log.samples is not None and len(log.samples) == 5 * k
    metrics = inspect_metrics(log)

    # The same responses through the harness's own runner.
    replay = replay_file(log, domain, mode, tmp_path / "replay.jsonl")
    run = tmp_path / "replayed"
    done = deonticbench_cli(
        tmp_path,
        "eval",
        "--model",
        f"replay:{replay}",
        "--domains",
        domain,
        "--split",
        SPLIT,
        "--modes",
        mode,
        "--attempts",
        str(attempts),
        "--out",
        str(run),
    )
    assert done.returncode == 0, done.stderr
    records = read_records(run / "records.jsonl").records
    assert len(records) == 5 * k

    # Same prompts, attempt by attempt (system message, template, exemplars, feedback),
    # and the same judgement of every attempt.
    sent = attempts_sent(log)
    for (_, case_id, _, sample), record in records.items():
        turns = sent[(case_id, sample)]
        assert [a.prompt_hash for a in record.attempts] == [h for h, _ in turns]
    imported_run = tmp_path / "imported"
    done = deonticbench_cli(
        tmp_path, "import-inspect", str(log.location), "--out", str(imported_run)
    )
    assert done.returncode == 0, done.stderr
    assert f"wrote {5 * k} records" in done.stdout
    again = deonticbench_cli(
        tmp_path, "import-inspect", str(log.location), "--out", str(imported_run)
    )
    assert again.returncode == 2 and "already holds a run" in again.stderr
    imported = read_records(imported_run / "records.jsonl").records
    assert set(imported) == set(records)
    for key, record in records.items():
        mine = imported[key]
        assert [
            (a.response, a.program, a.answer, a.outcome, a.abstain_reason) for a in mine.attempts
        ] == [
            (a.response, a.program, a.answer, a.outcome, a.abstain_reason) for a in record.attempts
        ]
    if mode != "direct":
        # The script exercises every path: right, wrong, broken, no code, and a retry.
        outcomes = {a.outcome for r in records.values() for a in r.attempts}
        assert outcomes == {"correct", "wrong", "abstain"}
        assert any(len(r.attempts) == 2 for r in records.values())
        assert any(len(r.attempts) == 1 for r in records.values())

    # Inspect's metrics are deonticbench score's numbers.
    replayed_rows = scores_json(tmp_path, run)
    stages = ["first", "final"] if attempts > 1 else ["first"]
    assert [r["stage"] for r in replayed_rows] == stages
    for row in replayed_rows:
        compare_scores(metrics, row, "final_" if row["stage"] == "final" else "")
    if mode == "direct":
        assert replayed_rows[0]["metric"] == "macro_f1"
        assert 0 < replayed_rows[0]["abstain_rate"] < 1

    # The round trip through import-inspect gives identical scores.
    imported_rows = scores_json(tmp_path, imported_run)
    assert [{f: r[f] for f in SCORE_FIELDS} for r in imported_rows] == [
        {f: r[f] for f in SCORE_FIELDS} for r in replayed_rows
    ]


@pytest.mark.slow
def test_inspect_command_line_runs_the_registered_task(tmp_path: Path) -> None:
    """``inspect eval deonticbench/deonticbench`` finds the task through the package's
    entry point and runs it in a subprocess; the log imports and scores as inspect said."""
    script_path = tmp_path / "script.json"
    program_script("airline", "zero-shot").save(script_path)
    logs = tmp_path / "cli-logs"
    journal = tmp_path / "network-attempts.txt"
    done = run_cli(
        [
            str(Path(sys.executable).parent / "inspect"),
            "eval",
            "deonticbench/deonticbench",
            "-T",
            "domain=airline",
            "-T",
            f"split={SPLIT}",
            "-T",
            f"bootstrap={B}",
            "--epochs",
            "2",
            "--limit",
            "4",
            "--model",
            "mockllm/model",
            "-M",
            f"custom_outputs={script_path}",
            "--log-format",
            "json",
        ],
        tmp_path,
        INSPECT_LOG_DIR=str(logs),
        INSPECT_DISPLAY="none",
        HF_HUB_OFFLINE="1",
        PYTHONPATH=str(TESTS / "support" / "inspect_site"),
        DEONTICBENCH_TEST_SCRIPT=str(script_path),
        DEONTICBENCH_TEST_NETWORK_JOURNAL=str(journal),
    )
    assert not journal.exists(), f"inspect tried to reach the network: {journal.read_text()}"
    assert done.returncode == 0, done.stderr + done.stdout
    (log_path,) = logs.glob("*.json")
    log = read_eval_log(str(log_path))
    assert log.status == "success"
    assert log.eval.task_registry_name == "deonticbench/deonticbench"
    assert log.samples is not None and len(log.samples) == 4 * 2  # --limit 4, --epochs 2
    metrics = inspect_metrics(log)
    assert set(metrics) >= {"accuracy", "accuracy_low", "accuracy_high", "abstain_rate"}

    run = tmp_path / "from-json-log"
    done = deonticbench_cli(tmp_path, "import-inspect", str(log_path), "--out", str(run))
    assert done.returncode == 0, done.stderr
    (row,) = scores_json(tmp_path, run)
    assert (row["n_cases"], row["k"]) == (4, 2)
    compare_scores(metrics, row)
    config = json.loads((run / "config.json").read_text())
    assert config["split"] == SPLIT and config["k"] == {"airline": 2}
    assert config["inspect"]["task"] == "deonticbench/deonticbench"

    # --against paper and --compare read the imported run like any other.
    done = deonticbench_cli(tmp_path, "score", str(run), "--against", "paper", "-B", "50")
    assert done.returncode == 0, done.stderr
    assert "paper T" in done.stdout
    done = deonticbench_cli(tmp_path, "score", str(run), str(run), "--compare", "-B", "50")
    assert done.returncode == 0, done.stderr

    # ... and so does analyze: every program-mode sample gets its diagnosis.
    done = deonticbench_cli(tmp_path, "analyze", str(run))
    assert done.returncode == 0, done.stderr
    analysed = [json.loads(line) for line in (run / "analysis.jsonl").read_text().splitlines()]
    samples = {(r["case_id"], r["sample"]) for r in analysed if r["stage"] == "first"}
    assert len(samples) == 4 * 2
    assert all(r["category"] or r["outcome"] == "correct" for r in analysed)


def test_named_tasks_default_to_the_papers_k_and_protocol() -> None:
    for make, domain in ((airline, "airline"), (uscis, "uscis")):
        task = make(split=SPLIT, mode="few-shot")
        assert task.epochs == get_domain(domain).default_k
        assert task.metadata is not None and task.metadata["protocol"] == "paper"
        plan = plan_for(TaskOptions(domain, SPLIT, "few-shot", 0, None, False, None))
        assert {u.protocol for u in plan.units} == {"paper"}


def test_named_tasks_under_the_harness_protocol_take_its_leak_free_exemplars() -> None:
    for make, domain in ((airline, "airline"), (uscis, "uscis")):
        task = make(split=SPLIT, mode="few-shot", protocol="harness")
        spec = get_domain(domain)
        assert task.epochs == spec.default_k
        plan = plan_for(TaskOptions(domain, SPLIT, "few-shot", 0, None, False, None, "harness"))
        samples = list(task.dataset)
        assert [s.id for s in samples] == [u.case.id for u in plan.units]
        for sample, unit in zip(samples, plan.units, strict=True):
            assert sample.target == str(unit.case.gold)
            assert sample.metadata is not None
            assert sample.metadata["exemplars"] == [e.id for e in unit.exemplars]
            assert len(unit.exemplars) == spec.few_shot_count
            # The gold label never reaches the prompt's exemplar choice of the case itself.
            assert unit.case.id not in sample.metadata["exemplars"]


def test_protocol_paper_gives_the_task_upstreams_prompts() -> None:
    task = deonticbench(domain="sara_numeric", split=SPLIT, mode="direct", protocol="paper")
    plan = plan_for(TaskOptions("sara_numeric", SPLIT, "direct", 0, None, False, None, "paper"))
    assert task.metadata is not None and task.metadata["protocol"] == "paper"
    for sample, unit in zip(task.dataset, plan.units, strict=True):
        assert unit.protocol == "paper"
        sent = from_inspect(sample.input)  # type: ignore[arg-type]
        assert prompt_hash(sent) == unit.render().prompt_hash
        assert sent[1].content.startswith("Statutes:\n")  # upstream's, not "## Statutes:"
    with pytest.raises(ConfigError, match="unknown protocol 'papr'"):
        deonticbench(domain="sara_numeric", split=SPLIT, mode="direct", protocol="papr")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["rules-given", "facts-given"])
def test_a_setting_runs_in_inspect_with_its_given_part_put_before_the_answer(
    tmp_path: Path, mode: str
) -> None:
    """rules-given / facts-given through inspect: the model answers only the asked part
    (as the reference backend does); the solver and scorer add the shown part before
    running it, so every kept case is correct and the logged program holds both."""
    from deonticbench.settings.given import SettingParts

    plan = plan_for(TaskOptions("sara_numeric", SPLIT, mode, 0, None, False, None))
    assert plan.units and all(u.given and u.exemplars for u in plan.units)
    parts = SettingParts()
    parts.given(get_domain("sara_numeric"), [u.case for u in plan.units])
    asked = parts.answers()
    responses = {
        first_prompt_hash(u.render().messages): [
            [f"```prolog\n{asked[('sara_numeric', u.case.id, mode)].strip()}\n```"]
        ]
        for u in plan.units
    }
    model = get_model("mockllm/model", custom_outputs=Script(responses))
    task = deonticbench(domain="sara_numeric", split=SPLIT, mode=mode, epochs=1, bootstrap=B)
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == len(plan.units)
    for sample in log.samples:
        score = next(iter(sample.scores.values())) if sample.scores else None
        assert score is not None and score.metadata is not None
        assert score.metadata["outcome"] == "correct", (sample.id, score.metadata)
        unit = plan.unit(str(sample.id))
        record = score.metadata["record"]
        program = record["attempts"][-1]["program"]
        assert program.startswith(unit.given.strip("\n")[:200])
        assert len(program) > len(asked[("sara_numeric", unit.case.id, mode)])


def test_bad_task_arguments_are_one_sentence() -> None:
    from deonticbench.errors import DeonticBenchError

    with pytest.raises(DeonticBenchError, match="unknown mode"):
        deonticbench(domain="airline", split=SPLIT, mode="two-shot")
    with pytest.raises(DeonticBenchError, match="attempts must be at least 1"):
        deonticbench(domain="airline", split=SPLIT, attempts=0)
    with pytest.raises(DeonticBenchError):
        deonticbench(domain="tax", split=SPLIT)


@pytest.mark.slow
def test_the_exemplar_seed_chooses_the_exemplars_and_an_older_logs_seed_still_imports(
    tmp_path: Path,
) -> None:
    """``-T exemplar_seed=`` chooses the harness's exemplars as ``eval --exemplar-seed``
    does and is what config.json's ``seed`` says after ``import-inspect``; a log written
    when the task argument was ``seed`` imports with the same seed."""
    from inspect_ai.log import write_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage

    from deonticbench.integrations.inspect.importer import import_log

    options = TaskOptions("airline", SPLIT, "few-shot", 3, None, False, None, "harness")
    task = airline(split=SPLIT, mode="few-shot", protocol="harness", exemplar_seed=3)
    assert task.metadata is not None and task.metadata["exemplar_seed"] == 3
    chosen = [s.metadata["exemplars"] for s in task.dataset if s.metadata is not None]
    assert chosen == [[e.id for e in u.exemplars] for u in plan_for(options).units]
    task = deonticbench(
        domain="airline", split=SPLIT, mode="direct", exemplar_seed=3, epochs=1, bootstrap=10
    )
    output = ModelOutput.from_content(model="mockllm/model", content="I cannot tell.")
    output.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)
    model = get_model("mockllm/model", custom_outputs=[output] * len(list(task.dataset)))
    (log,) = inspect_eval(task, model=model, log_dir=str(tmp_path / "logs"), display="none")
    assert log.status == "success", log.error
    import_log(str(log.location), tmp_path / "new")
    assert json.loads((tmp_path / "new" / "config.json").read_text())["seed"] == 3
    metadata = dict(log.eval.metadata or {})
    metadata["seed"] = metadata.pop("exemplar_seed")
    log.eval.metadata = metadata
    log.eval.task_args = {k: v for k, v in log.eval.task_args.items() if k != "exemplar_seed"}
    older = tmp_path / "older.eval"
    write_eval_log(log, str(older))
    import_log(str(older), tmp_path / "old")
    assert json.loads((tmp_path / "old" / "config.json").read_text())["seed"] == 3


@pytest.mark.slow
def test_import_inspect_refuses_what_it_cannot_import(tmp_path: Path) -> None:
    from inspect_ai import Task
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage
    from inspect_ai.scorer import match

    output = ModelOutput.from_content(model="mockllm/model", content="4")
    output.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)
    other = Task(dataset=[Sample(input="2+2?", target="4")], scorer=match(), name="arith")
    (log,) = inspect_eval(
        other,
        model=get_model("mockllm/model", custom_outputs=[output]),
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    done = deonticbench_cli(tmp_path, "import-inspect", str(log.location), "--out", "r1")
    assert done.returncode == 2
    assert "not of a deonticbench task" in done.stderr
    assert not (tmp_path / "r1").exists()

    not_a_log = tmp_path / "notes.json"
    not_a_log.write_text("{}")
    done = deonticbench_cli(tmp_path, "import-inspect", str(not_a_log), "--out", "r2")
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "cannot be read as an inspect log" in done.stderr
    assert "Traceback" not in done.stderr

    done = deonticbench_cli(tmp_path, "import-inspect", "missing.eval", "--out", "r3")
    assert done.returncode == 2 and "does not exist" in done.stderr


@pytest.mark.slow
def test_nothing_but_the_import_command_depends_on_the_integration() -> None:
    """The integration is a front door: the library never imports it (nor inspect_ai),
    and only the import-inspect command does, when it runs."""
    import ast

    package = TESTS.parent / "deonticbench"
    allowed = {package / "cli" / "import_inspect_cmd.py"}
    # The Harbor commands (export --format harbor, import-harbor, score --dar-rules) are
    # front doors of the other integration: they may import it, never this one.
    harbor_doors = {
        package / "cli" / f"{m}.py" for m in ("import_harbor_cmd", "export_cmd", "score_cmd")
    }
    # ... directly or through the names ``deonticbench.integrations`` offers for Harbor.
    harbor_names = {"export_tasks", "import_jobs", "scorer_rows", "render_scorer_table"}
    # import-upstream is the front door of the reader of upstream's own output folders.
    upstream_door = package / "cli" / "import_upstream_cmd.py"
    for path in package.rglob("*.py"):
        if package / "integrations" in path.parents or path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                names += [a.name for a in node.names]
                if path == upstream_door:
                    names = [n for n in names if n != "integrations.upstream_outputs"]
                if path in harbor_doors:
                    names = [n for n in names if not n.startswith("integrations.harbor")]
                    if (
                        isinstance(node, ast.ImportFrom)
                        and node.module == "integrations"
                        and {a.name for a in node.names} <= harbor_names
                    ):
                        names = []
                assert not any("integrations" in n or n.startswith("inspect_ai") for n in names), (
                    f"{path.relative_to(package.parent)} imports {names}"
                )
    code = (
        "import sys, deonticbench.cli, deonticbench.evaluation.runner, deonticbench.scoring.scores;"
        "from deonticbench.cli import cli; cli.get_command(None, 'score');"
        "assert 'inspect_ai' not in sys.modules, 'inspect_ai imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


_NO_DEPRECATED_NAMES = """
import importlib, pkgutil, warnings
# Ours only: a DeprecationWarning attributed to a module of this package is an error;
# third-party libraries' own deprecations are not this test's business.
warnings.filterwarnings("error", category=DeprecationWarning, module=r"deonticbench(\\.|$)")
import deonticbench.integrations.inspect as package
for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
    importlib.import_module(info.name)
from deonticbench.integrations.inspect import deonticbench
for mode in ("zero-shot", "agent-zero-shot"):
    task = deonticbench(domain="airline", split="smoke", mode=mode, epochs=1, bootstrap=10)
    list(task.dataset)
print("clean")
"""


@pytest.mark.slow
def test_the_package_uses_no_deprecated_name_of_its_own() -> None:
    """Importing every module of the integration and building its task (prompted and
    agentic) in a fresh interpreter raises no DeprecationWarning of ours: the package
    calls ``TaskOptions``, ``option_args`` and ``.steps``, never the shims it keeps for
    users."""
    done = subprocess.run(
        [sys.executable, "-c", _NO_DEPRECATED_NAMES],
        capture_output=True,
        text=True,
        env={**os.environ, "DEONTICBENCH_DATA": DATA, "HF_HUB_OFFLINE": "1"},
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip() == "clean", done.stderr[-3000:]
