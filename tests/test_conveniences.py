"""What eval users expect: ``list``, inspect-style model specs, described options, one
domain order, loadable CSV, ``--limit`` ranges, ``--sample-id``, results.json and the
figures with intervals."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from synthetic_runs import write_synthetic_run as _run

from deonticbench import RunOptions
from deonticbench.cli import cli
from deonticbench.data.cases import load_cases
from deonticbench.data.domains import DISPLAY_ORDER, DOMAINS
from deonticbench.data.selection import parse_limit
from deonticbench.data.sources import resolve_source
from deonticbench.errors import ConfigError
from deonticbench.models.registry import resolve_settings
from deonticbench.scoring.results import RESULTS_FILE, model_prices, write_results
from deonticbench.scoring.scores import score_runs
from deonticbench.scoring.tables import COMPARISON_COLUMNS, TABLE_DOMAINS

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[2] / "shared" / "deonticbench-data"
)
needs_data = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_DATA"] = DATA
    env["DEONTICBENCH_CACHE"] = str(tmp_path / "cache.sqlite")
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


@needs_data
def test_list_shows_domains_sizes_modes_backends_and_models(tmp_path: Path) -> None:
    done = _cli(tmp_path, "list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    source = resolve_source(DATA)
    for name in DISPLAY_ORDER:
        (row,) = [line for line in lines if line.split()[:1] == [name]]
        hard = len(load_cases(name, "hard", source))
        assert str(hard) in row.split()
    listed = [line.split()[0] for line in lines if line.split()[:1] and line.split()[0] in DOMAINS]
    assert listed == list(DISPLAY_ORDER)
    assert "modes: direct, zero-shot, few-shot" in done.stdout
    assert "openai-compatible" in done.stdout and "gpt-4.1*" in done.stdout


def test_inspect_style_model_spec_gets_a_suggestion(tmp_path: Path) -> None:
    done = _cli(tmp_path, "eval", "--model", "openai/gpt-4.1", "--dry-run")
    assert done.returncode == 2
    assert "did you mean openai:gpt-4.1?" in done.stderr
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr


def test_every_eval_option_is_described() -> None:
    command = cli.get_command(click.Context(cli), "eval")
    assert command is not None
    options = [p for p in command.params if isinstance(p, click.Option)]
    assert len(options) > 15
    undescribed = [o.name for o in options if not (o.help or "").strip()]
    assert undescribed == []
    text = CliRunner().invoke(cli, ["eval", "--help"]).output
    assert "--sample-id" in text and "11-20" in text


def test_limit_parses_counts_and_ranges() -> None:
    assert parse_limit("10") == 10
    assert parse_limit(" 11-20 ") == (11, 20)
    for bad in ("0", "5-2", "x", "1-"):
        with pytest.raises(ConfigError, match="--limit"):
            parse_limit(bad)


@pytest.mark.slow
@needs_data
def test_limit_range_and_sample_id_choose_cases(tmp_path: Path) -> None:
    cases = load_cases("airline", "smoke", resolve_source(DATA))
    base = ("eval", "--model", "reference", "--domains", "airline", "--split", "smoke")
    base += ("--modes", "direct", "-k", "1")
    done = _cli(tmp_path, *base, "--limit", "2-3", "--out", str(tmp_path / "range"))
    assert done.returncode == 0, done.stderr
    ids = {json.loads(x)["case_id"] for x in (tmp_path / "range/records.jsonl").open()}
    assert ids == {cases[1].id, cases[2].id}
    chosen = f"{cases[4].id},{cases[0].id}"
    done = _cli(tmp_path, *base, "--sample-id", chosen, "--out", str(tmp_path / "ids"))
    assert done.returncode == 0, done.stderr
    ids = {json.loads(x)["case_id"] for x in (tmp_path / "ids/records.jsonl").open()}
    assert ids == {cases[0].id, cases[4].id}
    done = _cli(tmp_path, *base, "--sample-id", "no-such-case", "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "no-such-case" in done.stderr
    assert not (tmp_path / "x").exists()


def test_score_uses_one_domain_order_everywhere(tmp_path: Path) -> None:
    run = _run(tmp_path / "r", "openai:gpt-4.1")
    result = CliRunner().invoke(cli, ["score", str(run), "-B", "20", "--format", "csv"])
    domains = list(dict.fromkeys(r["domain"] for r in csv.DictReader(io.StringIO(result.stdout))))
    assert domains == list(TABLE_DOMAINS) == list(DISPLAY_ORDER)
    listed = json.loads(CliRunner().invoke(cli, ["score", str(run), "-B", "20", "--json"]).stdout)
    assert list(dict.fromkeys(s["domain"] for s in listed["runs"][0]["scores"])) == domains


def test_csv_with_compare_is_one_loadable_table(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", "openai:gpt-4.1")
    b = _run(tmp_path / "b", "openai:o3", shift=1)
    args = ["score", str(a), str(b), "-B", "20", "--format", "csv", "--compare"]
    out = CliRunner().invoke(cli, args).stdout
    reader = csv.DictReader(io.StringIO(out))
    rows = list(reader)
    assert tuple(reader.fieldnames or ()) == COMPARISON_COLUMNS
    assert len(rows) == len(DOMAINS) * 3
    assert all(None not in r and all(v != "" for v in r.values()) for r in rows)
    out = CliRunner().invoke(cli, [*args[:-1], "--against", "paper"]).stdout
    rows = list(csv.DictReader(io.StringIO(out)))
    assert all(None not in r for r in rows)
    gpt = [r for r in rows if r["model"] == "openai:gpt-4.1" and r["paper_mean"]]
    few = next(r for r in gpt if r["mode"] == "few-shot" and r["domain"] == "sara_numeric")
    assert float(few["paper_mean"]) == 23.7


@pytest.mark.slow
def test_results_json_has_totals_and_an_estimated_cost(tmp_path: Path) -> None:
    run = _run(tmp_path / "gpt", "openai:gpt-4.1")
    lines = []
    for line in (run / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        for attempt in record["attempts"]:
            attempt["tokens_in"], attempt["tokens_out"] = 1000, 100
        lines.append(json.dumps(record))
    (run / "records.jsonl").write_text("\n".join(lines) + "\n")
    (scores,) = score_runs([run], bootstrap=20)
    path = write_results(scores, command=["deonticbench", "score"], wall_time_s=12.5)
    doc = json.loads(path.read_text())
    assert path == run / RESULTS_FILE
    attempts = sum(len(r.attempts) for r in scores.run.records)
    assert doc["totals"]["tokens_in"] == 1000 * attempts
    assert doc["totals"]["wall_time_s"] == 12.5
    assert doc["estimated_cost"]["usd"] == pytest.approx(attempts * (1000 * 2 + 100 * 8) / 1e6)
    assert len(doc["results"]) == len(scores.groups)
    row = doc["results"][0]
    assert {
        "domain",
        "mode",
        "stage",
        "metric",
        "mean",
        "ci_low",
        "ci_high",
        "n_cases",
        "k",
    } <= set(row)
    assert doc["command"] == ["deonticbench", "score"] and doc["versions"]["python"]
    # A second session adds its wall time; score --out (no time of its own) keeps it.
    write_results(scores, wall_time_s=2.5)
    assert json.loads(path.read_text())["totals"]["wall_time_s"] == 15.0
    write_results(scores, tmp_path / "elsewhere.json")
    assert json.loads((tmp_path / "elsewhere.json").read_text())["totals"]["wall_time_s"] == 15.0


def test_prices_come_from_the_registry_and_are_not_parameters() -> None:
    prices = model_prices("openai:gpt-4.1")
    assert prices is not None and (prices.input, prices.output) == (2.0, 8.0)
    mini = model_prices("openai:gpt-4.1-mini")
    assert mini is not None and (mini.input, mini.output) == (0.4, 1.6)
    assert model_prices("reference") is None
    settings = resolve_settings("openai", "gpt-4.1")
    assert "usd_per_mtok_in" not in settings.params.to_dict()


def test_figure_draws_intervals_and_leaves_out_modes_not_run(tmp_path: Path) -> None:
    from deonticbench.scoring.figures import build_figure

    a = _run(tmp_path / "a", "openai:gpt-4.1")
    b = _run(tmp_path / "b", "openai:o3", shift=1)
    lines = [
        line
        for line in (b / "records.jsonl").read_text().splitlines()
        if '"mode": "few-shot"' not in line
    ]
    (b / "records.jsonl").write_text("\n".join(lines) + "\n")
    lines = [
        line
        for line in (a / "records.jsonl").read_text().splitlines()
        if '"mode": "few-shot"' not in line
    ]
    (a / "records.jsonl").write_text("\n".join(lines) + "\n")
    scores = score_runs([a, b], bootstrap=50)
    fig = build_figure(scores, "first")
    top = fig.axes[0]
    # the tables' order (MODE_ORDER): Zero-Shot before Direct, as in Table 2
    assert [t.get_text() for t in top.get_xticklabels()] == ["Zero-Shot", "Direct"]
    # two runs x two modes: four metric bars, each with an error bar at its interval
    bars = [p for p in top.patches]
    assert len(bars) == 4
    assert len(top.collections) == 4  # one errorbar line collection per bar
    g = scores[0].group(TABLE_DOMAINS[0], "zero-shot", "first")
    assert g is not None
    segments = top.collections[0].get_segments()[0]
    assert segments[0][1] == pytest.approx(100 * g.estimate.low)
    assert segments[1][1] == pytest.approx(100 * g.estimate.high)
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_run_spec_carries_a_limit_range_and_case_ids() -> None:
    from deonticbench.store.spec import RunSpec

    spec = RunSpec(model="reference", case_range=[2, 3], case_ids=("b", "a", "b"))
    assert spec.case_range == (2, 3) and spec.case_ids == ("b", "a")
    assert RunSpec.from_json(json.loads(json.dumps(spec.to_json()))) == spec
    with pytest.raises(ConfigError, match="limit range"):
        RunSpec(model="reference", case_range=(3, 2))


@needs_data
def test_the_library_run_writes_results_json(tmp_path: Path) -> None:
    from deonticbench import RunSpec, evaluate

    cases = load_cases("airline", "smoke", resolve_source(DATA))
    spec = RunSpec(
        model="reference",
        domains=("airline",),
        split="smoke",
        modes=("direct",),
        k=1,
        case_range=(4, 5),
        data=resolve_source(DATA),
    )
    result = evaluate(spec, RunOptions(out=tmp_path / "lib", cache=False))
    assert {r.case_id for r in result.records} == {cases[3].id, cases[4].id}
    doc = json.loads((tmp_path / "lib" / RESULTS_FILE).read_text())
    assert doc["totals"]["samples"] == 2 and doc["totals"]["wall_time_s"] > 0
    config = json.loads((tmp_path / "lib" / "config.json").read_text())
    assert config["sessions"][-1]["limit"] == [4, 5] and config["sessions"][-1]["argv"]
