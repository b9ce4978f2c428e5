"""The library entry points as a notebook uses them: evaluate a spec, score the run."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deonticbench import RunOptions, RunSpec, ScoreRow, evaluate, read_run, score
from deonticbench.api import prepare
from deonticbench.data.sources import resolve_source
from deonticbench.errors import ConfigError

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[2] / "shared" / "deonticbench-data"
)
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)


def spec(**changes: object) -> RunSpec:
    values: dict[str, object] = {
        "model": "reference",
        "domains": ("airline",),
        "split": "smoke",
        "modes": ("direct", "zero-shot"),
        "k": 1,
        "data": resolve_source(DATA),
        **changes,
    }
    return RunSpec(**values)  # type: ignore[arg-type]


def test_evaluate_then_score_in_three_lines(tmp_path: Path) -> None:
    run = evaluate(spec(), RunOptions(out=tmp_path / "run", cache=tmp_path / "cache.sqlite"))
    assert run.path == tmp_path / "run" and (run.path / "config.json").is_file()
    session = run.session
    assert session is not None
    assert (session.planned, session.new, session.resumed, session.missing) == (10, 10, 0, 0)
    assert not session.interrupted and run.spec is not None and run.spec.attempts == 2
    assert run.spec.data == resolve_source(DATA)
    # The reference answers every case with its own gold material.
    assert all(r.final.outcome == "correct" for r in run.records)

    result = score(run, bootstrap=50)
    rows = result.rows
    assert [(r.domain, r.mode, r.stage) for r in rows] == [
        ("airline", "direct", "first"),
        ("airline", "zero-shot", "first"),
    ]
    assert all(isinstance(r, ScoreRow) and r.mean == 1.0 and r.n_cases == 5 for r in rows)
    frame = result.to_frame()
    assert list(frame.columns) == list(ScoreRow.columns())
    assert frame["mean"].tolist() == [1.0, 1.0] and len(frame) == 2


def test_read_run_and_score_a_finished_run_folder(tmp_path: Path) -> None:
    made = evaluate(spec(modes=("direct",)), RunOptions(out=tmp_path / "run", cache=False))
    run = read_run(tmp_path / "run")
    assert run.session is None and made.session is not None
    assert run.spec is not None and run.spec.split == "smoke"
    assert [r.key for r in run.records] == [r.key for r in made.records]
    assert run.results is not None  # evaluate wrote results.json
    rows = score(run, bootstrap=50).rows
    assert [(r.domain, r.mode, r.mean, r.n_cases) for r in rows] == [("airline", "direct", 1.0, 5)]
    assert rows == score(tmp_path / "run", bootstrap=50).rows == score(made, bootstrap=50).rows


@pytest.mark.slow
def test_every_reader_of_a_run_takes_the_run_or_its_folder(tmp_path: Path) -> None:
    """score, compare, the report, reliability, analyze and the export read a ``Run`` as
    they read its folder."""
    from deonticbench.analysis.run import analyse_run
    from deonticbench.export.examples import rejected_completions
    from deonticbench.reliability.api import reliability_reports
    from deonticbench.report._page import build_report
    from deonticbench.scoring import compare

    run = evaluate(spec(modes=("zero-shot",)), RunOptions(out=tmp_path / "run", cache=False))
    folder = tmp_path / "run"
    assert score(run, bootstrap=20).rows == score(folder, bootstrap=20).rows
    assert compare(run, folder, 20) == compare(folder, folder, 20)
    assert "DeonticBench report: reference" in build_report([run])
    assert reliability_reports([run], bootstrap=20) == reliability_reports([folder], bootstrap=20)
    by_run, by_folder = analyse_run(run)[0], analyse_run(folder)[0]
    assert [r.to_json() for r in by_run] == [r.to_json() for r in by_folder] and by_run
    assert rejected_completions(run, [], "zero-shot") == {}


def test_evaluate_resumes_a_finished_run_without_sending_anything(tmp_path: Path) -> None:
    first = evaluate(spec(modes=("direct",)), RunOptions(out=tmp_path / "run", cache=False))
    again = evaluate(spec(modes=("direct",)), RunOptions(out=tmp_path / "run", cache=False))
    assert first.session is not None and again.session is not None
    assert (again.session.new, again.session.resumed, again.session.requests) == (
        0,
        first.session.new,
        0,
    )
    assert [r.key for r in again.records] == [r.key for r in first.records]


def test_a_run_is_a_spec_and_its_options_each_named_once() -> None:
    """What a run does is the spec's, how it is carried out the options'; the entry points
    take the two and repeat neither's fields as keywords."""
    import inspect

    from deonticbench.api import arun, dry_run

    what = {f.name for f in dataclasses.fields(RunSpec)}
    how = {f.name for f in dataclasses.fields(RunOptions)}
    assert not what & how
    assert {"out", "fresh", "concurrency", "cache", "batch", "observer"} <= how
    for entry in (evaluate, arun, prepare):
        assert list(inspect.signature(entry).parameters) == ["spec", "options"], entry
    assert list(inspect.signature(dry_run).parameters) == ["prepared"]


def test_the_options_refuse_what_eval_refuses_in_its_sentences(tmp_path: Path) -> None:
    for fields, said in [
        ({"concurrency": 0}, "--concurrency must be at least 1, not 0."),
        ({"workers": 0}, "--workers must be at least 1, not 0."),
    ]:
        with pytest.raises(ConfigError) as refused:
            RunOptions(**fields)  # type: ignore[arg-type]
        assert str(refused.value) == said
    with pytest.raises(ConfigError, match="unknown executor 'spawn'"):
        RunOptions(executor="spawn")  # type: ignore[arg-type]
    from deonticbench.api import arun

    prepared = prepare(spec(), RunOptions(out=tmp_path / "run"))
    with pytest.raises(ConfigError, match="carries the options it was prepared with"):
        evaluate(prepared, RunOptions(cache=False))
    with pytest.raises(ConfigError, match="carries the options it was prepared with"):
        asyncio.run(arun(prepared, RunOptions()))
    assert not (tmp_path / "run").exists()


def test_a_run_resumes_under_other_options_whose_sessions_say_them(tmp_path: Path) -> None:
    """The options are no part of config.json's fingerprint: a run started with some
    resumes with others (inside a running event loop too), and each session says its
    concurrency."""
    from deonticbench.api import arun

    first = evaluate(
        spec(modes=("direct",), case_range=2),
        RunOptions(out=tmp_path / "run", cache=False, concurrency=3, workers=1),
    )
    options = RunOptions(out=tmp_path / "run", cache=False, concurrency=5, executor="fresh")
    again = asyncio.run(arun(spec(modes=("direct",)), options))
    assert first.session is not None and again.session is not None
    assert (first.session.new, again.session.resumed, again.session.new) == (2, 2, 3)
    sessions = again.config["sessions"]
    assert [s["concurrency"] for s in sessions] == [3, 5]
    assert [s["limit"] for s in sessions] == [2, None]


def test_a_failed_preflight_leaves_no_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        evaluate(spec(model="openai:gpt-4.1"), RunOptions(out=tmp_path / "run", cache=False))
    assert not (tmp_path / "run").exists()


def test_a_spec_for_another_run_in_the_folder_is_refused(tmp_path: Path) -> None:
    evaluate(spec(modes=("direct",)), RunOptions(out=tmp_path / "run", cache=False))
    with pytest.raises(ConfigError, match="another configuration"):
        evaluate(
            spec(modes=("direct",), exemplar_seed=5), RunOptions(out=tmp_path / "run", cache=False)
        )


def test_a_spec_without_data_reads_deonticbench_data_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEONTICBENCH_DATA", DATA)
    run = evaluate(
        spec(modes=("direct",), data=None), RunOptions(out=tmp_path / "run", cache=False)
    )
    assert run.spec is not None and run.spec.data == resolve_source(DATA)
    assert run.session is not None and run.session.new == 5


def test_a_library_user_gets_the_eval_commands_refusal_of_a_fixed_parameter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--param`` under the paper protocol is sent or refused, never dropped; the
    harness protocol sends it."""
    monkeypatch.setenv("OPENAI_API_KEY", "unused: nothing is sent")
    paper = spec(model="openai:gpt-4.1", protocol="paper", params=(("top_p", "0.5"),))
    with pytest.raises(ConfigError, match=r"^--param top_p: the paper protocol sends upstream"):
        evaluate(paper, RunOptions(out=tmp_path / "run"))
    assert not (tmp_path / "run").exists()
    harness = prepare(dataclasses.replace(paper, protocol="harness"))
    assert harness.sampling.config("direct").top_p == 0.5
    assert "--param" not in str(harness.sampling.config("direct").verbatim)


def test_logprobs_from_a_backend_without_them_is_refused_by_the_library(tmp_path: Path) -> None:
    """The capability is the backend's (``Model.logprobs``), not a list in the CLI."""
    asked = spec(params=(("extra.logprobs", "true"),))
    with pytest.raises(ConfigError, match="reference gives none"):
        evaluate(asked, RunOptions(out=tmp_path / "run"))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "cli_options", "confidence", "library_options"),
    [
        ("reference", ["--batch"], (), {"batch": True}),
        ("openai:gpt-4.1", ["--batch", "--no-cache"], (), {"batch": True, "cache": False}),
        ("openai:gpt-4.1", ["--batch", "--confidence", "logprob"], ("logprob",), {"batch": True}),
    ],
)
def test_the_library_refuses_what_eval_refuses_in_the_same_sentence(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    model: str,
    cli_options: list[str],
    confidence: tuple[str, ...],
    library_options: dict[str, object],
) -> None:
    """``--batch`` and ``--confidence`` are checked by the library: a notebook
    calling ``evaluate`` gets the sentence ``deonticbench eval`` prints, and neither
    touches the run folder.  Nothing is sent: the refusal comes before any request."""
    env = {
        **os.environ,
        "OPENAI_API_KEY": "unused: nothing is sent",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",  # never reached
        "DEONTICBENCH_CACHE": str(tmp_path / "cache"),
    }
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DEONTICBENCH_CACHE"):
        monkeypatch.setenv(name, env[name])
    cli = subprocess.run(
        [sys.executable, "-m", "deonticbench", "eval", "--model", model, "--domains",
         "airline", "--split", "smoke", "--modes", "direct,zero-shot", "-k", "1",
         "--data-dir", DATA, "--out", str(tmp_path / "cli-run"), *cli_options],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert cli.returncode != 0 and "Traceback" not in cli.stderr
    asked = spec(model=model).with_confidence(*confidence)
    with pytest.raises(ConfigError) as refused:
        evaluate(asked, RunOptions(out=tmp_path / "library-run", **library_options))  # type: ignore[arg-type]
    assert str(refused.value) in cli.stderr
    assert not (tmp_path / "cli-run").exists() and not (tmp_path / "library-run").exists()
