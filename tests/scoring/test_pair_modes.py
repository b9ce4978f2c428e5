"""Pairing one mode with another over the cases both scored, in one run folder or across
two (``compare_modes``, ``score --pair``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from synthetic_runs import write_synthetic_run

from deonticbench.cli import cli
from deonticbench.errors import ConfigError
from deonticbench.scoring.comparisons import Comparison, compare_modes
from deonticbench.scoring.metrics import BootstrapEstimate
from deonticbench.scoring.scores import score_runs


def _only(folder: Path, keep: set[str], rename: dict[str, str] | None = None) -> None:
    """Keep the records of some modes (renamed, so that one folder holds a setting)."""
    path = folder / "records.jsonl"
    kept = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row["mode"] in keep:
            row["mode"] = (rename or {}).get(row["mode"], row["mode"])
            kept.append(json.dumps(row))
    path.write_text("\n".join(kept) + "\n")


def test_a_mode_paired_with_itself_differs_by_nothing_and_with_another_by_the_point_gap(
    tmp_path: Path,
) -> None:
    run = write_synthetic_run(tmp_path / "one", "m")
    [scores] = score_runs([run], bootstrap=200)
    same = compare_modes(scores, "zero-shot", scores, "zero-shot", 200)
    assert same and all(c.difference.point == 0 and c.difference.high == 0 for c in same)
    other = compare_modes(scores, "zero-shot", scores, "few-shot", 200)
    for c in other:
        a = scores.group(c.domain, "zero-shot", c.stage)
        b = scores.group(c.domain, "few-shot", c.stage)
        assert a is not None and b is not None
        assert c.mode == "few-shot - zero-shot" and c.n_common == 8
        assert c.difference.point == pytest.approx(b.estimate.point - a.estimate.point)
        assert c.difference.low <= c.difference.point <= c.difference.high


def test_score_pair_finds_the_setting_and_its_baseline_across_two_folders(tmp_path: Path) -> None:
    base = write_synthetic_run(tmp_path / "zero", "m")
    _only(base, {"zero-shot"})
    setting = write_synthetic_run(tmp_path / "rules", "m", shift=2)
    _only(setting, {"few-shot"}, {"few-shot": "rules-given"})
    result = CliRunner().invoke(
        cli,
        ["score", str(base), str(setting), "--pair", "rules-given:zero-shot", "-B", "100"],
        standalone_mode=False,
        catch_exceptions=True,
    )
    assert result.exception is None, result.output
    assert "rules-given - zero-shot" in result.output
    result = CliRunner().invoke(
        cli,
        ["score", str(base), "--pair", "facts-given:zero-shot"],
        standalone_mode=False,
        catch_exceptions=True,
    )
    assert isinstance(result.exception, ConfigError)
    assert "no run folder given holds facts-given" in str(result.exception)


def test_pairs_within_one_folder_name_the_run_not_run_minus_run(tmp_path: Path) -> None:
    """score --pair-modes on one folder: the Setting column tells the two modes apart,
    and the first column names the one run, never "agents - agents"."""
    from deonticbench.scoring.tables import comparison_table

    a = Comparison(
        run_a="agents", run_b="agents", domain="airline", mode="agent-zero-shot - zero-shot",
        stage="first", metric="accuracy", n_common=1, only_a=0, only_b=0, point_a=0.5, point_b=0.5,
        difference=BootstrapEstimate(0.0, 0.0, 0.0, 0.0),
    )  # fmt: skip
    table = comparison_table([a])
    assert table.headers[0] == "Run" and table.rows[0][0] == "agents"
    assert "both modes" in table.title
