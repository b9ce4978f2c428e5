"""An eval set's folder wherever run folders are taken: ``score SETDIR`` is ``score RUN1
RUN2 ...`` in the set's order (the command and ``deonticbench.score``), ``analyze SETDIR``
analyses each run in turn, and a set with no run started is refused in one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from set_folders import reference_run, small_synthetic_run, write_manifest

from deonticbench import score
from deonticbench.cli import cli
from deonticbench.errors import DataError


@pytest.fixture(scope="module")
def set_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("set") / "set"
    # The manifest's order is not the folders' alphabetical order.
    runs = [
        small_synthetic_run(root / "o3", "openai:o3", "paper", shift=2),
        small_synthetic_run(root / "gpt41", "openai:gpt-4.1", "paper"),
    ]
    return write_manifest(root, runs, later=["not-yet"])


def _cli(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_score_of_a_set_folder_is_score_of_its_runs_in_the_sets_order(set_dir: Path) -> None:
    runs = [str(set_dir / "o3"), str(set_dir / "gpt41")]
    outputs = []
    for options in (["--json"], ["--format", "markdown", "--compare", "--against", "paper"]):
        whole = _cli("score", "-B", "20", str(set_dir), *options)
        assert whole.exit_code == 0, whole.output
        each = _cli("score", "-B", "20", *runs, *options)
        assert (whole.stdout, whole.stderr) == (each.stdout, each.stderr)
        outputs.append(whole.stdout)
    assert [r["run"] for r in json.loads(outputs[0])["runs"]] == ["o3", "gpt41"]
    assert "Paired bootstrap differences" in outputs[1] and "paper T2" in outputs[1]


def test_the_librarys_score_takes_a_set_folder_alone_or_among_runs(set_dir: Path) -> None:
    library = score(set_dir, bootstrap=20)
    assert [s.run.name for s in library.runs] == ["o3", "gpt41"]
    each = score([set_dir / "o3", set_dir / "gpt41"], bootstrap=20)
    assert [r.to_dict() for r in library.rows] == [r.to_dict() for r in each.rows]
    mixed = score([set_dir / "gpt41", set_dir], bootstrap=20)
    assert [s.run.name for s in mixed.runs] == ["gpt41", "o3", "gpt41"]


def test_a_set_with_no_run_started_is_refused_in_one_sentence(tmp_path: Path) -> None:
    empty = write_manifest(tmp_path / "empty", [], later=["a", "b"])
    done = _cli("score", str(empty))
    assert done.exit_code != 0
    assert (
        str(done.exception) == f"{empty} is an eval set with no run started yet: nothing to score."
    )
    with pytest.raises(DataError, match="no run started yet"):
        score(empty)


@pytest.mark.slow
def test_analyze_of_a_set_folder_analyses_each_run(tmp_path: Path) -> None:
    """Two reference runs (programs to analyse) and one of the direct mode only (none):
    each of the first two is analysed, in the set's order, and the third is said to be
    left out."""
    root = tmp_path / "set"
    runs = [
        reference_run(root / "b", domains=["airline"], modes=["zero-shot"], cases=(1, 1)),
        reference_run(root / "direct", domains=["airline"], modes=["direct"], cases=(1, 1)),
        reference_run(root / "a", domains=["sara_binary"], modes=["zero-shot"], cases=(1, 1)),
    ]
    write_manifest(root, runs)
    done = _cli("analyze", str(root), "--out", str(tmp_path / "out"))
    assert done.exit_code == 0, done.output
    assert [line for line in done.stdout.splitlines() if line.startswith("==")] == [
        "== b ==",
        "== a ==",
    ]
    assert f"{root / 'direct'}: no record of a mode that writes a program: left out." in done.stderr
    for name in ("a", "b"):
        assert (root / name / "analysis.jsonl").is_file()
        assert (tmp_path / "out" / name / "analysis.csv").is_file()
    assert not (root / "direct" / "analysis.jsonl").exists()
    as_json = _cli("analyze", str(root), "--json")
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert rows and [r["run"] for r in rows] == sorted((r["run"] for r in rows), reverse=True)
    assert {(r["run"], r["domain"]) for r in rows} == {("b", "airline"), ("a", "sara_binary")}
