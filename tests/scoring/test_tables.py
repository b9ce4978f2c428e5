"""``deonticbench score`` end to end on real run folders, and the paper's numbers."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from synthetic_runs import write_synthetic_run as _run

from deonticbench.cli import cli
from deonticbench.data.domains import DOMAINS
from deonticbench.scoring.paper import load_paper_results, match_model
from deonticbench.scoring.tables import LONG_COLUMNS
from deonticbench.vocabulary.modes import MODES

PAPER_COLUMNS = ["SARA Num.", "Airline", "SARA Bin.", "USCIS-AAO", "Housing"]


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    a = _run(tmp_path / "gpt41", "openai:gpt-4.1", extra='{"schema": 1, "doma\n')
    b = _run(tmp_path / "o3-retry", "openai:o3", shift=1, retries=True)
    return a, b


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["score", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_table_format_has_table2_columns_and_rows(runs: tuple[Path, Path]) -> None:
    code, out, err = _invoke(str(runs[0]), "-B", "50")
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("Model"))
    positions = [header.index(c) for c in PAPER_COLUMNS]
    assert positions == sorted(positions)
    rows = [line for line in out.splitlines() if line.startswith("openai:gpt-4.1")]
    # A run folder whose config.json names no protocol was made before protocols existed.
    assert [r.split()[1:3] for r in rows] == [
        ["harness", m] for m in ["Few-Shot", "Zero-Shot", "Direct"]
    ]
    # Each cell reads "mean +upper -lower" with one decimal.
    assert all(len([t for t in r.split() if t.startswith("+")]) == 5 for r in rows)
    assert "skipped 1 of" in err and "not valid JSON" in err


def test_markdown_format(runs: tuple[Path, Path]) -> None:
    code, out, _ = _invoke(*map(str, runs), "-B", "50", "--format", "markdown")
    assert code == 0
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert table[0].split("|")[1:-1] == [
        f" {c} " for c in ["Model", "Protocol", "Setting", "Stage", *PAPER_COLUMNS]
    ]
    # gpt-4.1: 3 modes x stage first; o3 retried: 3 modes x (first, final).
    assert len(table) == 2 + 3 + 6
    assert sum("| final |" in line for line in table) == 3


def test_csv_format_is_the_long_table(runs: tuple[Path, Path]) -> None:
    code, out, _ = _invoke(str(runs[1]), "-B", "50", "--format", "csv")
    assert code == 0
    reader = csv.DictReader(io.StringIO(out))
    assert tuple(reader.fieldnames or ())[: len(LONG_COLUMNS)] == LONG_COLUMNS
    rows = list(reader)
    assert len(rows) == len(DOMAINS) * len(MODES) * 2
    for row in rows:
        low, mean, high = float(row["ci_low"]), float(row["mean"]), float(row["ci_high"])
        assert 0.0 <= low <= mean <= high <= 1.0
        shares = float(row["accuracy"]) + float(row["wrong_rate"]) + float(row["abstain_rate"])
        assert shares == pytest.approx(1.0)
    finals = [r for r in rows if r["stage"] == "final"]
    assert all(float(r["abstain_rate"]) == 0.0 for r in finals)  # every retry answered


def test_latex_and_json_formats(runs: tuple[Path, Path]) -> None:
    code, out, _ = _invoke(str(runs[0]), "-B", "50", "--format", "latex")
    assert code == 0
    assert out.startswith("\\begin{tabular}") and out.rstrip().endswith("\\end{tabular}")
    assert "$^{+" in out and "}_{-" in out
    code, out, _ = _invoke(str(runs[0]), "-B", "50", "--json", "--bootstrap-seed", "4")
    assert code == 0
    doc = json.loads(out)
    (run,) = doc["runs"]
    assert run["model"] == "openai:gpt-4.1" and run["seed"] == 4 and run["bootstrap"] == 50
    assert len(run["scores"]) == len(DOMAINS) * len(MODES)
    assert any("skipped 1" in n for n in run["notes"])


def test_seed_changes_the_intervals_and_repeats_exactly(runs: tuple[Path, Path]) -> None:
    one = _invoke(str(runs[0]), "-B", "80", "--bootstrap-seed", "1", "--format", "csv")[1]
    again = _invoke(str(runs[0]), "-B", "80", "--bootstrap-seed", "1", "--format", "csv")[1]
    other = _invoke(str(runs[0]), "-B", "80", "--bootstrap-seed", "2", "--format", "csv")[1]
    assert one == again
    assert one != other


@pytest.mark.slow
def test_out_writes_every_file_and_they_parse(runs: tuple[Path, Path], tmp_path: Path) -> None:
    out_dir = tmp_path / "report"
    code, out, _ = _invoke(
        *map(str, runs), "-B", "60", "--out", str(out_dir), "--compare", "--against", "paper"
    )
    assert code == 0
    assert str(out_dir) in out
    for name in ("table.md", "table.tex", "long.csv", "cases.csv", "scores.json"):
        assert (out_dir / name).stat().st_size > 0
    long = list(csv.DictReader((out_dir / "long.csv").open()))
    assert {r["run"] for r in long} == {"gpt41", "o3-retry"}
    cases = list(csv.DictReader((out_dir / "cases.csv").open()))
    first = next(r for r in cases if r["domain"] == "sara_numeric" and r["run"] == "gpt41")
    assert {"case_id", "gold", "answer_0", "outcome_0", "reason_0", "answer_3"} <= set(first)
    abstained = [r for r in cases if r["outcome_0"] == "abstain"]
    assert abstained and all(r["reason_0"] == "timeout" and r["answer_0"] == "" for r in abstained)
    json.loads((out_dir / "scores.json").read_text())
    comparison = list(csv.DictReader((out_dir / "comparison.csv").open()))
    assert len(comparison) == len(DOMAINS) * len(MODES)
    assert all(int(r["n_common"]) == 8 for r in comparison)
    assert "paper T2" in (out_dir / "paper.md").read_text()
    import matplotlib.image

    for name in ("results-gpt41.json", "results-o3-retry.json"):
        assert json.loads((out_dir / name).read_text())["schema"] == 1
    assert '<table id="table2"' in (out_dir / "report.html").read_text()
    for png in (
        "figure-gpt41.png",
        "figure-o3-retry.png",
        "figure-o3-retry-final.png",
        "figure-all.png",
        "figure-all-final.png",
    ):
        data = (out_dir / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        pixels = matplotlib.image.imread(out_dir / png)
        assert pixels.shape[0] > 200 and pixels.shape[1] > 600
        assert pixels.std() > 0.05  # not a blank canvas


def test_compare_reports_dropped_cases(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "x:model-a")
    b = _run(tmp_path / "b", "x:model-b", shift=2)
    lines = (b / "records.jsonl").read_text().splitlines()
    kept = [line for line in lines if '"case_id": "airline-0"' not in line]
    (b / "records.jsonl").write_text("\n".join(kept) + "\n")
    code, out, _ = _invoke(str(a), str(b), "-B", "40", "--compare")
    assert code == 0
    airline = [line for line in out.splitlines() if "Airline" in line and " - a" in line]
    assert len(airline) == 3
    assert all("7 (1 dropped: 1 A-only, 0 B-only)" in line for line in airline)


def test_against_paper_shows_the_matching_published_rows(runs: tuple[Path, Path]) -> None:
    code, out, _ = _invoke(str(runs[0]), "-B", "30", "--against", "paper")
    assert code == 0
    paper_rows = [line for line in out.splitlines() if line.startswith("paper T2")]
    assert len(paper_rows) == 3 and all("GPT-4.1" in line for line in paper_rows)
    few = next(line for line in paper_rows if "Few-Shot" in line)
    words = few.split()
    assert words[words.index("Few-Shot") + 1] == "23.7"  # GPT-4.1 few-shot SARA Numeric, T2


def test_compare_needs_two_runs(runs: tuple[Path, Path]) -> None:
    result = CliRunner().invoke(cli, ["score", str(runs[0]), "--compare"])
    assert result.exit_code == 2
    assert "--compare needs at least two run folders" in result.output


@pytest.mark.slow
def test_not_a_run_folder_is_one_sentence_and_a_nonzero_exit(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    proc = subprocess.run(
        [sys.executable, "-m", "deonticbench", "score", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"error: {tmp_path / 'nope'} is not a run folder: no such directory."
    ]


@pytest.mark.slow
def test_end_to_end_through_the_console_entry(runs: tuple[Path, Path]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "deonticbench", "score", str(runs[1]), "-B", "30"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "openai:o3" in proc.stdout and "final" in proc.stdout


# -- the paper's numbers ---------------------------------------------------------------


def test_paper_results_cover_tables_2_3_and_7() -> None:
    cells = load_paper_results()
    keys = {(c.table, c.model, c.setting, c.domain) for c in cells}
    assert len(keys) == len(cells) == (8 + 5 + 3) * 3 * 5
    assert {c.domain for c in cells} == set(DOMAINS)
    assert {c.setting for c in cells} == set(MODES)
    assert all(0.0 <= c.mean <= 100.0 for c in cells)
    assert all(c.lower is None for c in cells)  # never legible in the OCR
    assert all(c.uncertain for c in cells if c.upper is not None)
    by_key = {(c.model, c.setting, c.domain): c.mean for c in cells}
    # Values the paper's prose quotes, so the transcription can be checked against it.
    assert by_key[("Qwen3-235B", "few-shot", "sara_numeric")] == 0.7
    assert by_key[("Qwen3-235B", "direct", "sara_numeric")] == 32.1
    assert by_key[("Qwen3-235B", "direct", "sara_binary")] == 66.5
    assert by_key[("Kimi K2 Instruct", "direct", "sara_binary")] == 68.4
    assert by_key[("Qwen2.5-32B (base)", "few-shot", "uscis")] == 10.3


def test_model_specs_match_paper_names() -> None:
    assert match_model("openai:gpt-4.1") == "GPT-4.1"
    assert match_model("anthropic:claude-sonnet-4.5") == "Claude Sonnet 4.5"
    assert match_model("openai:o3") == "o3"
    assert match_model("reference") is None
    # Dated pins, as upstream's output folders name them (import-upstream's model).
    assert match_model("openai/gpt-4.1-2025-04-14") == "GPT-4.1"
    assert match_model("openai:o3-2025-04-16") == "o3"
    assert match_model("anthropic:claude-sonnet-4-5-20250929") == "Claude Sonnet 4.5"
    assert match_model("openai:gpt-4.1-mini") is None


def test_table2_sets_models_behind_a_server_match_their_published_rows() -> None:
    """eval/sets/table2.yaml reaches Gemini and the open models through
    ``openai-compatible:<model>@<url>``: the server is no part of the name, and the open
    models' served names are the paper's rows."""
    assert match_model("openai-compatible:gemini-2.5-flash@http://h:8000/v1") == (
        "Gemini 2.5 Flash"
    )
    kimi = "openai-compatible:moonshotai/Kimi-K2-Instruct-0905@https://api.together.xyz/v1"
    assert match_model(kimi) == "Kimi K2 Instruct"
    qwen = "openai-compatible:Qwen/Qwen3-235B-A22B-Instruct-2507-tput@http://h/v1"
    assert match_model(qwen) == "Qwen3-235B"
    assert match_model("openai-compatible:Qwen/Qwen3-8B@http://h/v1") is None
    assert match_model("openai:o3-mini") is None


@pytest.mark.slow
def test_an_unwritable_out_folder_is_one_sentence(
    runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from deonticbench.cli import main

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(SystemExit) as exit_info:
        main(["score", str(runs[1]), "-B", "10", "--out", str(blocker / "report")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        f"error: Cannot write the report to {blocker / 'report'}: Not a directory."
    )


def test_against_paper_warns_when_the_run_is_not_on_the_hard_split(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    import shutil

    smoke = tmp_path / "smoke-run"
    shutil.copytree(runs[0], smoke)
    config = json.loads((smoke / "config.json").read_text())
    config["split"] = "smoke"
    (smoke / "config.json").write_text(json.dumps(config))
    code, _, err = _invoke(str(smoke), "-B", "20", "--against", "paper")
    said = " ".join(err.split())
    assert code == 0 and "this run is on 'smoke', so the two are not comparable" in said
    _, _, err_hard = _invoke(str(runs[0]), "-B", "20", "--against", "paper")
    assert "this run is on" not in err_hard
