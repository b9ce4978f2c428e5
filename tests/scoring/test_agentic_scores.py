"""Scoring agentic runs: Table 2's agentic rows, the cost of each setting, and each
agentic mode paired with its prompted counterpart (one folder or two)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_runs import DATA, ScriptedAgent, run_agents, smoke
from click.testing import CliRunner

from deonticbench.cli import cli
from deonticbench.data.domains import get_domain
from deonticbench.models.reference import ReferenceModel, reference_table
from deonticbench.scoring.comparisons import compare, pair_modes
from deonticbench.scoring.scores import score_runs
from deonticbench.scoring.tables import render, table2
from deonticbench.scoring.usage import usage_rows
from deonticbench.solver import Solver

pytestmark = pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")
AIRLINE = get_domain("airline")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A prompted reference run (zero-shot) and an agentic run of a scripted agent that
    writes the right program for the first two cases only."""
    root = tmp_path_factory.mktemp("runs")
    cases = smoke(AIRLINE, 4)
    with Solver(workers=2) as solver:
        run_agents(
            ReferenceModel(reference_table(cases)), solver, root / "prompted",
            domains=[AIRLINE], modes=("zero-shot",), limit=4,
        )  # fmt: skip
        # Two turns of 10 + 5 tokens each (write, then no call): 30 tokens per sample.
        program = ":- format('Tax result: 0~n')."
        agent = ScriptedAgent([[("write_file", {"path": "solution.pl", "content": program})]],
                              spec="openai:gpt-4.1")  # fmt: skip
        run_agents(agent, solver, root / "agentic", domains=[AIRLINE],
                   modes=("agent-zero-shot",), limit=4)  # fmt: skip
    yield root / "prompted", root / "agentic"


def test_table2_has_the_agentic_rows_and_the_usage_what_each_cost(runs: tuple[Path, Path]) -> None:
    prompted, agentic = score_runs(list(runs), bootstrap=200)
    text = render(table2([prompted, agentic]), "table")
    assert "Agent Zero-Shot" in text and "Zero-Shot" in text
    (row,) = usage_rows([agentic])
    assert (row.mode, row.n_samples, row.turns, row.tool_calls) == ("agent-zero-shot", 4, 2.0, 1.0)
    assert (row.tokens_in, row.tokens_out) == (20.0, 10.0)
    # openai:gpt-4.1 at $2 in / $8 out per million tokens, 4 samples.
    assert row.cost_usd == pytest.approx(4 * (20 * 2.0 + 10 * 8.0) / 1e6)
    assert row.point == 0.0 and row.metric_per_mtok == 0.0
    from deonticbench.scoring.results import run_totals

    assert run_totals(agentic.run).requests == 4 * 2  # one request per turn of each trial
    (base,) = usage_rows([prompted])
    assert base.turns >= 1.0 and base.tool_calls == 0.0 and base.metric_per_mtok is None


def test_pairing_across_two_folders_is_the_paired_bootstrap_of_compare(
    runs: tuple[Path, Path],
) -> None:
    prompted, agentic = score_runs(list(runs), bootstrap=300)
    paired = pair_modes([prompted, agentic], 300)
    first = [c for c in paired if c.stage == "first"]
    assert [c.mode for c in first] == ["agent-zero-shot - zero-shot"]
    (c,) = first
    assert (c.n_common, c.point_a, c.point_b) == (4, 1.0, 0.0)
    assert c.difference.point == -1.0 and c.difference.high <= 0.0
    # The same draws as comparing the two groups directly.
    g_a = prompted.group("airline", "zero-shot", "first")
    g_b = agentic.group("airline", "agent-zero-shot", "first")
    assert g_a is not None and g_b is not None
    assert pair_modes([agentic], 300) == []  # nothing to pair with on its own
    assert len(compare(prompted, agentic, 300)) == 0  # different modes: compare pairs none


def test_score_pair_modes_in_one_folder_from_the_command_line(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    import shutil

    both = tmp_path / "both"
    shutil.copytree(runs[1], both)
    lines = (runs[0] / "records.jsonl").read_text()
    with open(both / "records.jsonl", "a", encoding="utf-8") as handle:
        handle.write(lines)
    result = CliRunner().invoke(cli, ["score", str(both), "--pair-modes", "--bootstrap", "200"])
    assert result.exit_code == 0, result.output
    assert "agent-zero-shot - zero-shot" in result.output and "score/Mtok" in result.output
    alone = CliRunner().invoke(cli, ["score", str(runs[1]), "--pair-modes"])
    assert alone.exit_code != 0 and "no agentic mode with its prompted" in str(alone.exception)
