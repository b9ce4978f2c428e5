"""Counterfactual variants: amounts changed in the case and its reference facts alike,
new gold from the perturbed program in the sandbox, and the paired comparison by
original case id (docs/robustness.md)."""

from __future__ import annotations

import json
import os
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner

from deonticbench import RunOptions, RunSpec, evaluate
from deonticbench.cli import cli
from deonticbench.data import get_domain, load_cases
from deonticbench.data.cases import original_case_id
from deonticbench.data.sources import resolve_source
from deonticbench.scoring.comparisons import compare
from deonticbench.scoring.scores import score_runs
from deonticbench.settings.perturb import perturb_domain, write_variants
from deonticbench.solver import Solver

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
    ),
]


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("variants")
    source = resolve_source(DATA)
    with Solver(workers=2) as solver:
        for name in ("sara_numeric", "airline"):
            domain = get_domain(name)
            cases = load_cases(domain, "hard", source)[:3]
            rows, report = perturb_domain(domain, cases, solver, variants=2, seed=7)
            assert report.variants == len(rows) >= 4
            write_variants(out, domain, "hard", rows, source)
    return out


@pytest.mark.slow
def test_variants_change_each_amount_in_the_text_and_the_facts_alike(variants: Path) -> None:
    source = resolve_source(DATA)
    originals = {c.id: c for c in load_cases("sara_numeric", "hard", source)}
    rows = json.loads((variants / "data" / "sara_numeric" / "hard.json").read_text())
    assert len({r["id"] for r in rows}) == len(rows)
    for row in rows:
        original = originals[row["original_id"]]
        assert original_case_id(row["id"]) == row["original_id"] != row["id"]
        assert row["perturbation"]
        for change in row["perturbation"]:
            old, new = (
                Decimal(change["from"].replace(",", "")),
                Decimal(change["to"].replace(",", "")),
            )
            assert old != new and abs(new - old) <= old * Decimal("0.3") + 1
            assert f"${change['from']}" in original.text and f"${change['to']}" in row["text"]
            assert f"${change['from']}" not in row["text"]
            assert str(new) in row["reference_prolog"]
    # The same seed gives the same variants; the statutes came along in the same layout.
    assert (variants / "statutes" / "sara").is_dir()
    cases = load_cases("sara_numeric", "hard", resolve_source(variants))
    assert [c.extra["original_id"] for c in cases] == [r["original_id"] for r in rows]
    assert any(c.gold != originals[c.extra["original_id"]].gold for c in cases)


@pytest.mark.slow
def test_the_reference_scores_every_variant_and_compare_pairs_them_by_original(
    variants: Path, tmp_path: Path
) -> None:
    common = {"model": "reference", "split": "hard", "modes": ("zero-shot",), "k": 1}
    on_variants = evaluate(
        RunSpec(domains=("sara_numeric", "airline"), data=resolve_source(variants), **common),
        RunOptions(out=tmp_path / "variants", cache=False),
    )
    assert on_variants.records and all(r.final.outcome == "correct" for r in on_variants.records)
    on_originals = evaluate(
        RunSpec(
            domains=("sara_numeric", "airline"), data=resolve_source(DATA), case_range=3, **common
        ),
        RunOptions(out=tmp_path / "originals", cache=False),
    )
    a, b = score_runs([on_originals.path, on_variants.path], bootstrap=50)
    comparisons = {(c.domain, c.stage): c for c in compare(a, b, 50)}
    for domain in ("sara_numeric", "airline"):
        c = comparisons[(domain, "first")]
        # Each original pairs with the mean over its variants: 3 originals, 3 pairs.
        assert (c.n_common, c.only_a, c.only_b) == (3, 0, 0)
        assert c.difference.point == 0.0


def test_perturb_writes_a_new_folder_only(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("")
    result = CliRunner().invoke(
        cli,
        ["perturb", "--out", str(tmp_path / "taken"), "--data-dir", DATA],
        standalone_mode=False,
        catch_exceptions=True,
    )
    assert "is not empty" in str(result.exception)
    result = CliRunner().invoke(
        cli,
        ["perturb", "--domains", "housing", "--out", str(tmp_path / "new"), "--data-dir", DATA],
        standalone_mode=False,
        catch_exceptions=True,
    )
    assert "no numeric answer" in str(result.exception)
