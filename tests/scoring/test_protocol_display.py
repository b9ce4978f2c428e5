"""Every figure says which protocol it came from, and the paper's cells compare only with
the paper protocol: ``score`` end to end on real run folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from synthetic_runs import write_synthetic_run

from deonticbench.cli import cli
from deonticbench.vocabulary.protocols import LEAK_MARK


def _run(folder: Path, model: str, protocol: str | None, shift: int = 0) -> Path:
    run = write_synthetic_run(folder, model, shift=shift)
    if protocol is not None:
        config = json.loads((run / "config.json").read_text())
        config["protocol"] = protocol
        (run / "config.json").write_text(json.dumps(config))
    return run


def _score(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["score", "-B", "20", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
def test_each_row_names_its_protocol_and_agentic_rows_are_the_harness(tmp_path: Path) -> None:
    run = _run(tmp_path / "p", "openai:gpt-4.1", "paper")
    code, out, _ = _score(str(run), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["runs"][0]["protocol"] == "paper"
    assert {row["protocol"] for row in doc["runs"][0]["scores"]} == {"paper"}
    code, out, _ = _score(str(run))
    rows = [line.split() for line in out.splitlines() if line.startswith("openai:gpt-4.1")]
    assert rows and all(r[1] == "paper" for r in rows)


def test_the_papers_cells_are_comparable_only_beside_the_paper_protocol(tmp_path: Path) -> None:
    paper = _run(tmp_path / "paper", "openai:gpt-4.1", "paper")
    harness = _run(tmp_path / "harness", "openai:gpt-4.1", "harness")
    code, out, err = _score(str(paper), "--against", "paper")
    assert code == 0
    assert [line for line in out.splitlines() if line.startswith("paper T2")]
    assert "not comparable" not in out and "not comparable" not in err
    code, out, err = _score(str(harness), "--against", "paper")
    assert code == 0
    published = [line for line in out.splitlines() if line.startswith("paper T2")]
    assert published and all("(not comparable)" in line for line in published)
    assert "harness protocol" in " ".join(err.split())


def test_a_comparison_across_protocols_says_so_in_one_sentence(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "x:model-a", "paper")
    b = _run(tmp_path / "b", "x:model-b", "harness", shift=1)
    c = _run(tmp_path / "c", "x:model-c", "paper", shift=2)
    _, out, err = _score(str(a), str(b), "--compare")
    said = " ".join(err.split())
    assert said.count("differences set figures of different protocols") == 1
    assert "15 of 15" in said and "harness against paper" not in said
    assert "paper against harness" in said
    rows = [line for line in out.splitlines() if line.startswith("b - a")]
    assert rows and all(
        line.split()[3] == "harness" and line.split()[5] == "paper" for line in rows
    )
    _, _, err = _score(str(a), str(c), "--compare")
    assert "different protocols" not in err


def test_pairing_an_agentic_mode_with_its_prompted_mode_crosses_protocols(tmp_path: Path) -> None:
    from deonticbench.scoring.comparisons import compare_modes
    from deonticbench.scoring.notes import cross_protocol_note
    from deonticbench.scoring.scores import score_runs

    run = _run(tmp_path / "r", "x:m", "paper")
    scores = score_runs([run], bootstrap=10)
    pairs = compare_modes(scores[0], "zero-shot", scores[0], "few-shot", 10)
    assert {(c.protocol_a, c.protocol_b) for c in pairs} == {("paper", "paper")}
    assert cross_protocol_note([("x", "paper", "paper")]) is None
    note = cross_protocol_note([("x", "paper", "harness"), ("y", "paper", "paper")])
    assert note is not None and note.startswith("1 of 2 differences")


def test_airline_few_shot_of_the_paper_protocol_is_marked_and_explained(tmp_path: Path) -> None:
    paper = _run(tmp_path / "paper", "openai:gpt-4.1", "paper")
    harness = _run(tmp_path / "harness", "openai:gpt-4.1", "harness")
    _, out, err = _score(str(paper))
    marked = [line for line in out.splitlines() if LEAK_MARK in line]
    assert len(marked) == 1 and "Few-Shot" in marked[0]
    # The mark sits in the Airline column, the second domain of Table 2.
    header = next(line for line in out.splitlines() if line.startswith("Model"))
    assert header.index("Airline") <= marked[0].index(LEAK_MARK) < header.index("SARA Bin.")
    assert "reference program" in " ".join(err.split())
    _, out, err = _score(str(harness))
    assert LEAK_MARK not in out and LEAK_MARK not in err
