"""An eval set's report and results: ``report SETDIR`` writes one report.html into the set
folder with every run, and ``finish_set`` (what ``eval-set`` calls when a set ends)
writes that report and results.json and returns the set's one table."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from set_folders import reference_run, small_synthetic_run, write_manifest

from deonticbench.cli import cli
from deonticbench.report.set_outputs import finish_set
from deonticbench.scoring.set_table import set_comparison


@pytest.fixture(scope="module")
def set_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("set") / "set"
    runs = [
        small_synthetic_run(root / "gpt41", "openai:gpt-4.1", "paper", domains=["airline"]),
        reference_run(root / "reference", domains=["airline"], modes=["zero-shot"]),
        small_synthetic_run(root / "o3", "openai:o3", "paper", shift=2, domains=["airline"]),
    ]
    return write_manifest(root, runs, later=["gpt51"])


def _meta(page: str) -> dict[str, object]:
    found = re.search(r'<script type="application/json" id="meta">(.*?)</script>', page, re.S)
    assert found
    meta: dict[str, object] = json.loads(found.group(1))
    return meta


def _comparison_rows(page: str) -> list[str]:
    found = re.search(r'<section id="comparison">(.*?)</section>', page, re.S)
    assert found
    rows = re.findall(r"<tr>(.*?)</tr>", found.group(1), re.S)
    return [html.unescape(re.sub(r"<[^>]+>", " ", r)).split()[0] for r in rows[1:]]


def test_report_of_a_set_folder_writes_one_report_of_every_run(set_dir: Path) -> None:
    done = CliRunner().invoke(cli, ["report", str(set_dir), "-B", "20"])
    assert done.exit_code == 0, done.output
    page = (set_dir / "report.html").read_text()
    assert _meta(page)["runs"] == [
        {"name": "gpt41", "model": "openai:gpt-4.1"},
        {"name": "reference", "model": "reference"},
        {"name": "o3", "model": "openai:o3"},
    ]
    # Each run against the set's first run of its protocol: gpt41 for both.
    compared = set_comparison(set_dir, bootstrap=20)
    assert {(c.run_a, c.run_b) for c in compared.comparisons} == {
        ("gpt41", "reference"),
        ("gpt41", "o3"),
    }
    assert set(_comparison_rows(page)) == {"reference", "o3"}  # "reference - gpt41", ...
    assert "reference shares no case with gpt41" in done.stderr


def test_finish_set_writes_the_sets_report_and_results_and_returns_its_table(
    set_dir: Path,
) -> None:
    outputs = finish_set(set_dir, replicates=20, seed=3)
    assert outputs.results_path == set_dir / "results.json"
    assert outputs.report_path == set_dir / "report.html"
    compared = set_comparison(set_dir, bootstrap=20, seed=3)
    assert outputs.text == compared.render("table")
    assert outputs.json_doc == json.loads(compared.render("json"))
    assert outputs.comparison.render("markdown") == compared.render("markdown")
    assert outputs.notes == compared.notes
    doc = json.loads(outputs.results_path.read_text())
    assert doc["comparison"] == outputs.json_doc
    assert [r["name"] for r in doc["runs"]] == ["gpt41", "reference", "o3"]
    assert doc["bootstrap"] == 20 and doc["bootstrap_seed"] == 3
    page = outputs.report_path.read_text()
    assert [r["name"] for r in _meta(page)["runs"]] == ["gpt41", "reference", "o3"]  # type: ignore[index]


def test_finish_set_draws_upstreams_statistics_once_per_group(
    set_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """results.json's figures, the comparison's JSON and the report each show upstream's
    statistics of every run: 1,000 replicates per domain x mode, drawn once for the three."""
    from deonticbench.scoring import upstream_bootstrap

    drawn = upstream_bootstrap.upstream_bootstrap_stats
    calls: list[int] = []

    def counted(*args: Any, **kwargs: Any) -> dict[str, float | int]:
        calls.append(1)
        return drawn(*args, **kwargs)

    monkeypatch.setattr(upstream_bootstrap, "upstream_bootstrap_stats", counted)
    outputs = finish_set(set_dir, replicates=20)
    groups = sum(
        len(modes) for r in outputs.json_doc["runs"] for modes in r["upstream_bootstrap"].values()
    )
    assert groups == 5 and len(calls) == groups  # gpt41 and o3: 2 each; reference: 1
    doc = json.loads(outputs.results_path.read_text())
    assert [r["results"]["upstream_bootstrap"] for r in doc["runs"]] == [
        r["upstream_bootstrap"] for r in outputs.json_doc["runs"]
    ]


def test_runs_scored_as_their_lanes_end_give_the_set_what_scoring_at_its_end_gives(
    set_dir: Path,
) -> None:
    """``eval-set`` scores each run as its lane finishes it (``prescore``) and hands the
    scores to ``finish_set``: the table and results.json are those of scoring them all at
    the set's end, and a run missing from the handed scores is scored there."""
    from deonticbench.report import prescore

    at_end = finish_set(set_dir, replicates=20, seed=3)
    early = {name: prescore(set_dir / name, replicates=20, seed=3) for name in ("gpt41", "o3")}
    handed = finish_set(set_dir, replicates=20, seed=3, scored=early)
    assert handed.text == at_end.text
    assert handed.json_doc == at_end.json_doc
    assert [s.run.name for s in handed.comparison.scores] == ["gpt41", "reference", "o3"]
    assert all(handed.comparison.scores[i] is early[name] for i, name in ((0, "gpt41"), (2, "o3")))
