"""The command line is thin: what a command refuses, the library function it hands its
options to refuses in the same sentence, and what it prints is the lines the library
words.  Each command runs as a user runs it (a subprocess), beside the library call."""

from __future__ import annotations

from pathlib import Path

import pytest
from reliability_runs import cli, write_run

from deonticbench.cli.eval_cmd import command as eval_command
from deonticbench.errors import ConfigError
from deonticbench.evaluation.program_file import run_program_file
from deonticbench.evaluation.run_options import EvalOptions, RunOptions
from deonticbench.reliability.api import cascade_folders
from deonticbench.solver import Limits

GOLD: dict[str, int | str] = {"c1": 100, "c2": 200}
ANSWERS = {"c1": [100.0, 100.0], "c2": [200.0, None]}


def _eval_options(*args: str) -> EvalOptions:
    """eval's command line parsed by click, as the command hands it on."""
    ctx = eval_command.make_context("eval", ["--model", "reference", *args])
    return EvalOptions(**ctx.params)


def test_eval_options_become_the_spec_and_refuse_as_eval_does(tmp_path: Path) -> None:
    options = _eval_options("--domains", "airline", "--limit", "11-20", "--sample-id", "a,b")
    spec = options.spec()
    assert (spec.domains, spec.case_range, spec.case_ids) == (("airline",), (11, 20), ("a", "b"))
    assert options.run_options().cache is None
    assert _eval_options("--no-cache").run_options().cache is False
    with pytest.raises(ConfigError) as refused:
        _eval_options("--json")
    done = cli("eval", "--model", "reference", "--json", "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {refused.value}"


@pytest.mark.slow
def test_eval_builds_the_spec_and_the_run_options_the_library_takes(tmp_path: Path) -> None:
    """What eval runs is a RunSpec, how it runs it the library's RunOptions; an option
    the options refuse is refused by eval in the same sentence."""
    options = _eval_options(
        "--out", str(tmp_path / "run"), "--fresh", "--concurrency", "3", "--workers", "2",
        "--executor", "fresh", "--no-prompt-cache", "--batch", "--retry-errors",
        "--cache", str(tmp_path / "cache.sqlite"),
    )  # fmt: skip
    assert options.run_options() == RunOptions(
        out=tmp_path / "run", fresh=True, concurrency=3, cache=tmp_path / "cache.sqlite",
        retry_errors=True, workers=2, executor="fresh", batch=True, prompt_cache=False,
    )  # fmt: skip
    assert "concurrency" not in options.spec().to_json()
    with pytest.raises(ConfigError) as refused:
        _eval_options("--concurrency", "0").run_options()
    done = cli("eval", "--model", "reference", "--concurrency", "0", "--out", str(tmp_path / "r"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {refused.value}"
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_cascade_folders_refuse_as_cascade_does(tmp_path: Path) -> None:
    small = write_run(tmp_path / "small", "test:small", "airline", "direct", GOLD, ANSWERS)
    large = write_run(tmp_path / "large", "test:large", "airline", "direct", GOLD, ANSWERS)
    asked = dict(prices=None, human_accuracy=1.0, human_cost=1.0, bootstrap=20, seed=0)
    cases = [
        ([small], {"defer_to": "model", "signal": "consistency"}),
        ([small, large], {"defer_to": "human", "signal": "consistency"}),
        ([small, large], {"defer_to": "model", "signal": "verbal"}),
    ]
    for folders, options in cases:
        with pytest.raises(ConfigError) as refused:
            cascade_folders(
                folders[0], folders[1] if len(folders) > 1 else None, **options, **asked
            )
        done = cli(
            "cascade", *map(str, folders), "--defer-to", options["defer_to"], "--signal",
            options["signal"], "--human-cost", "1", "-B", "20",
        )  # fmt: skip
        assert done.returncode == 2
        assert done.stderr.strip() == f"error: {refused.value}"


def test_exec_prints_the_lines_of_the_library_run(tmp_path: Path) -> None:
    program = tmp_path / "answer.pl"
    program.write_text(':- initialization(main).\nmain :- format("Total cost: 125~n").\n')
    ran = run_program_file(str(program), None, Limits(timeout_s=10), "fresh")
    assert (ran.domain and ran.domain.name, ran.answer and ran.answer.value) == ("airline", 125)
    done = cli("exec", str(program), "--executor", "fresh")
    assert done.returncode == 0
    shown, words = done.stdout.splitlines(), ran.lines()
    # the second line holds the wall time, which differs between the two runs
    assert shown[:1] + shown[2:] == words[:1] + words[2:]
    assert "answer:   125.0  [airline]" in shown
    with pytest.raises(ConfigError) as refused:
        run_program_file(str(tmp_path / "none.pl"), None, Limits(timeout_s=10), "fresh")
    done = cli("exec", str(tmp_path / "none.pl"))
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {refused.value}"
