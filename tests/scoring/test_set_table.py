"""An eval set's one table (``scoring.set_table``): every run's cells are ``score``'s of
that run folder alone, the published cells beside are ``score --against paper``'s (or
``--against dar``'s for runs of the dar protocol), the paired differences are ``score
--compare``'s, and results.json holds each run's results.json figures.

The set: two synthetic runs of paper models under the paper protocol (their figures
differ; the second is compared with the first on the same cases), a real run of the
reference model (the paper protocol too, on other cases: no shared case), a run of the
harness protocol (the first of its protocol: no difference), and one run not started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from set_folders import DAR_MIRROR, reference_run, small_synthetic_run, write_manifest

from deonticbench.cli import cli
from deonticbench.data.dar_files import DAR_DIR_ENV
from deonticbench.data.domains import DOMAINS
from deonticbench.scoring.results import write_results
from deonticbench.scoring.scores import score_runs
from deonticbench.scoring.set_table import SetComparison, set_comparison, write_set_results
from deonticbench.solver.pool import bwrap_works
from deonticbench.store.sets import SpendLedger

B, SEED = 30, 7
DOMAIN_HEADERS = [d.display_name for d in DOMAINS.values()]


@pytest.fixture(scope="module")
def set_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("set") / "table2"
    runs = [
        small_synthetic_run(root / "gpt41", "openai:gpt-4.1", "paper"),
        small_synthetic_run(root / "o3", "openai:o3", "paper", shift=2),
        reference_run(root / "reference"),
        small_synthetic_run(root / "o3-harness", "openai:o3", "harness", shift=1),
    ]
    return write_manifest(root, runs, later=["gpt51"])


@pytest.fixture(scope="module")
def compared(set_dir: Path) -> SetComparison:
    return set_comparison(set_dir, bootstrap=B, seed=SEED)


def _score(*args: str) -> str:
    result = CliRunner().invoke(cli, ["score", "-B", str(B), "--bootstrap-seed", str(SEED), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def _markdown_rows(text: str) -> list[dict[str, str]]:
    """Every row of every Markdown table in ``text``, each a dict by its table's header."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip().replace("\\|", "|") for c in line.strip("|").split(" | ")]
        if header is None:
            header = cells
        elif set(line) - set("|- "):
            rows.append(dict(zip(header, cells, strict=True)))
    return rows


def _rows(compared: SetComparison) -> list[dict[str, str]]:
    return [dict(zip(compared.table.headers, r, strict=True)) for r in compared.table.rows]


def test_each_runs_cells_are_its_score_alone_with_the_papers_beside(
    set_dir: Path, compared: SetComparison
) -> None:
    rows = _rows(compared)
    assert [r["Source"] for r in rows if r["Source"] in ("gpt41", "o3", "reference")] == [
        "gpt41", "gpt41", "o3", "o3", "reference", "reference",
    ]  # fmt: skip
    # One block per model, the runs in the set's order: o3's two runs side by side.
    own = [r["Source"] for r in rows if r["Source"] in ("gpt41", "o3", "reference", "o3-harness")]
    assert list(dict.fromkeys(own)) == ["gpt41", "o3", "o3-harness", "reference"]
    for name in ("gpt41", "o3", "reference", "o3-harness"):
        alone = _markdown_rows(
            _score(str(set_dir / name), "--against", "paper", "--format", "markdown")
        )
        mine = [r for r in rows if r["Source"] == name]
        assert [[r["Protocol"], r["Setting"], *(r[d] for d in DOMAIN_HEADERS)] for r in mine] == [
            [r["Protocol"], r["Setting"], *(r[d] for d in DOMAIN_HEADERS)]
            for r in alone
            if "Source" not in r and "Model" in r and "Setting" in r
        ], name
        # The published rows beside a model of the paper are score --against paper's, in
        # its order; beside a model the paper did not test (the reference), none.
        published = [r for r in alone if r.get("Source", "").startswith("paper T")]
        block = _block_of(rows, name)
        beside = [
            [r["Source"], r["Model"], r["Setting"], *(r[d] for d in DOMAIN_HEADERS)]
            for r in block
            if r["Source"].startswith("paper T")
        ]
        if name == "reference":
            assert published and beside == [], name
            continue
        assert published and beside == [
            [r["Source"], r["Model"], r["Setting"], *(r[d] for d in DOMAIN_HEADERS)]
            for r in published
        ], name
    assert any("(not comparable)" in r["Source"] for r in _block_of(rows, "o3-harness"))
    assert not any("(not comparable)" in r["Source"] for r in _block_of(rows, "o3"))
    assert "gpt51 (openai:gpt-5.1) has not started: it is not in the table." in compared.notes
    assert any(n.startswith("reference: not a model of the paper") for n in compared.notes)
    assert not any(r["Source"] == "gpt51" for r in rows)


def _block_of(rows: list[dict[str, str]], name: str) -> list[dict[str, str]]:
    """The rows under run ``name``: from its first row to the next run's first row."""
    runs = {"gpt41", "o3", "reference", "o3-harness"}
    start = next(i for i, r in enumerate(rows) if r["Source"] == name)
    end = next(
        (i for i, r in enumerate(rows[start:], start) if r["Source"] in runs - {name}),
        len(rows),
    )
    return rows[start:end]


def test_the_paired_differences_are_score_compares_against_the_first_of_the_protocol(
    set_dir: Path, compared: SetComparison
) -> None:
    alone = json.loads(
        _score(str(set_dir / "gpt41"), str(set_dir / "o3"), str(set_dir / "reference"),
               "--compare", "--json")
    )["comparisons"]  # fmt: skip
    mine = compared.to_json()["comparisons"]
    assert mine == alone and {(c["run_a"], c["run_b"]) for c in mine} == {
        ("gpt41", "o3"),
        ("gpt41", "reference"),
    }
    # o3's difference from gpt41 in the table: the cell score --compare prints, per domain.
    rows = _rows(compared)
    diff = [r for r in rows if r["Source"] == "o3 - gpt41"]
    assert [r["Setting"] for r in diff] == ["Zero-Shot", "Direct"]
    text = _markdown_rows(
        _score(str(set_dir / "gpt41"), str(set_dir / "o3"), "--compare", "--format", "markdown")
    )
    cells = {(r["Domain"], r["Setting"]): r["B - A [95% CI]"] for r in text if "Domain" in r}
    for row in diff:
        for domain in ("Airline", "SARA Bin."):
            assert row[domain] == cells[(domain, row["Setting"])]
            assert row[domain].startswith(("+", "-")) and "[" in row[domain]
    # The reference run shares no case with gpt41: it says so, in the table and a note.
    apart = [r for r in rows if r["Source"] == "reference - gpt41"]
    assert apart and all(r["Airline"] == "no common cases" for r in apart)
    assert any(n.startswith("reference shares no case with gpt41") for n in compared.notes)
    # The harness run is the first of its protocol: nothing to set it against.
    assert not any(r["Source"].startswith("o3-harness -") for r in rows)


def test_the_comparison_renders_in_scores_formats_and_as_one_json_document(
    compared: SetComparison,
) -> None:
    doc = json.loads(compared.render("json"))
    assert doc["kind"] == "deonticbench-set-comparison"
    assert [r["name"] for r in doc["set"]["runs"]] == [
        "gpt41", "o3", "reference", "o3-harness", "gpt51",
    ]  # fmt: skip
    assert [r["started"] for r in doc["set"]["runs"]] == [True] * 4 + [False]
    assert doc["table"]["rows"] == _rows(compared)
    assert [r["run"] for r in doc["runs"]] == ["gpt41", "o3", "reference", "o3-harness"]
    markdown = compared.render("markdown")
    assert _markdown_rows(markdown) == _rows(compared)
    assert compared.render("csv").splitlines()[0] == ",".join(compared.table.headers)
    assert "\\begin{tabular}" in compared.render("latex")


@pytest.mark.slow  # upstream's statistics of every run, three times over: 2-4 s
def test_set_results_holds_each_runs_results_json_figures(
    set_dir: Path, compared: SetComparison, tmp_path: Path
) -> None:
    SpendLedger(set_dir).append("o3", 0.25)  # what the set paid for o3's requests
    path = write_set_results(compared)
    assert path == set_dir / "results.json"
    doc = json.loads(path.read_text())
    assert [r["name"] for r in doc["runs"]] == ["gpt41", "o3", "reference", "o3-harness"]
    for entry in doc["runs"]:
        # What eval writes into the run folder (api.write_run_results), at the set's draws.
        (scores,) = score_runs([set_dir / entry["name"]], bootstrap=B, seed=SEED)
        own = json.loads(write_results(scores, tmp_path / f"{entry['name']}.json").read_text())
        for key in ("run", "model", "bootstrap", "bootstrap_seed", "results", "totals"):
            assert entry["results"][key] == own[key], (entry["name"], key)
    assert doc["comparison"]["table"]["rows"] == _rows(compared)
    assert doc["totals"]["samples"] == sum(r["results"]["totals"]["samples"] for r in doc["runs"])
    assert [r["spent_usd"] for r in doc["runs"]] == [0.0, 0.25, 0.0, 0.0]
    assert doc["totals"]["spent_usd"] == 0.25


def test_a_set_of_dar_runs_is_set_beside_dars_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runs of the dar protocol are set beside DAR's Appendix Table 1, as ``score
    --against dar`` sets each, never beside the paper's."""
    root = tmp_path / "dar"
    agentic = ("agent-zero-shot", "agent-direct")
    runs = [
        small_synthetic_run(root / "kimi", "together:moonshotai/kimi-k2", "dar", modes=agentic),
        small_synthetic_run(root / "gpt52", "openai:gpt-5.2", "dar", shift=3, modes=agentic),
    ]  # fmt: skip
    write_manifest(root, runs)
    compared = set_comparison(root, bootstrap=B, seed=SEED)
    rows = _rows(compared)
    assert not any(r["Source"].startswith("paper T") for r in rows)
    for name in ("kimi", "gpt52"):
        alone = _markdown_rows(_score(str(root / name), "--against", "dar", "--format", "markdown"))
        published = [
            [
                r["Model"],
                r["Setting"],
                r["sara_numeric"],
                r["airline"],
                r["sara_binary"],
                r["uscis"],
            ]
            for r in alone
            if r.get("Source") == "DAR T1"
        ]
        block = _block_of_dar(rows, name)
        assert published and published == [
            [r["Model"], r["Setting"], r["SARA Num."], r["Airline"], r["SARA Bin."], r["USCIS-AAO"]]
            for r in block
            if r["Source"] == "DAR T1"
        ]
        assert {r["Model"] for r in block if r["Source"] == "DAR T1"} == (
            {"Kimi-K2"} if name == "kimi" else {"GPT-5.2"}
        )
    assert [c["run_b"] for c in compared.to_json()["comparisons"]] == ["gpt52"] * 4
    assert compared.to_json()["against_dar"] and "against_paper" not in compared.to_json()


def _block_of_dar(rows: list[dict[str, str]], name: str) -> list[dict[str, str]]:
    start = next(i for i, r in enumerate(rows) if r["Source"] == name)
    other = {"kimi", "gpt52"} - {name}
    end = next((i for i, r in enumerate(rows[start:], start) if r["Source"] in other), len(rows))
    return rows[start:end]


@pytest.mark.skipif(not (DAR_MIRROR / "adapters").is_dir(), reason="no mirror of DAR's repository")
def test_real_dar_runs_carry_dars_readings_beside_dars_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two real runs of the reference agent under the dar protocol, on overlapping cases:
    DAR's readings of each run's trials are score --against dar's, and the second run's
    difference from the first is over the case both ran."""
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    monkeypatch.setenv(DAR_DIR_ENV, str(DAR_MIRROR))
    root = tmp_path / "dar"
    runs = [
        reference_run(root / name, protocol="dar", domains=["airline"],
                      modes=["agent-zero-shot"], cases=cases)
        for name, cases in (("first", (1, 2)), ("second", (2, 3)))
    ]  # fmt: skip
    write_manifest(root, runs)
    compared = set_comparison(root, bootstrap=B, seed=SEED)
    rows = _rows(compared)
    for name in ("first", "second"):
        alone = _markdown_rows(_score(str(root / name), "--against", "dar", "--format", "markdown"))
        readings = [
            [r["Setting"], r["airline"]]
            for r in alone
            if r.get("Source") == "this run" and r.get("Setting", "").endswith("(DAR)")
        ]
        assert readings and readings == [
            [r["Setting"], r["Airline"]]
            for r in rows
            if r["Source"] == name and r["Setting"].endswith("(DAR)")
        ]
    (diff,) = compared.comparisons
    assert (diff.run_a, diff.run_b, diff.n_common, diff.only_a, diff.only_b) == (
        "first", "second", 1, 1, 1,
    )  # fmt: skip
    assert any(n.startswith("second - first Airline") for n in compared.notes)
