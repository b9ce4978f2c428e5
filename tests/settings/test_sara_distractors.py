"""Distractor statutes for SARA, whose prompts hold the whole statute: the sections a
case's reference program uses (read by SWI-Prolog), plus N others of the same statute
(real swipl, the shared mirror, the reference backend; docs/settings.md)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from deonticbench import RunOptions, RunSpec, evaluate
from deonticbench.data import get_domain, load_cases
from deonticbench.data.sources import resolve_source
from deonticbench.prompting import plan_run
from deonticbench.prompting.distractors import statute_sections
from deonticbench.settings.given import SettingParts
from deonticbench.settings.sections import needed_sections, predicate_sections

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
    ),
]
SECTIONS = ("1", "2", "63", "68", "151", "152", "3301", "3306", "7703")


def _shown(statutes: str) -> list[str]:
    return re.findall(r"^§(\d+)\.", statutes, re.MULTILINE)


def test_predicate_names_map_to_sections_by_number_and_by_defined_term() -> None:
    sara = get_domain("sara_numeric")
    assert predicate_sections(sara, "tax_section_1a", SECTIONS) == {"1"}
    assert predicate_sections(sara, "married_under_7703", SECTIONS) == {"7703"}
    assert predicate_sections(sara, "s152_d", SECTIONS) == {"152"}
    assert predicate_sections(sara, "head_of_household_tax", SECTIONS) == {"2"}
    # The generic word "tax" names §1 only when nothing more specific does.
    assert predicate_sections(sara, "futa_tax", SECTIONS) == {"3301"}
    assert predicate_sections(sara, "alice_tax", SECTIONS) == {"1"}
    assert predicate_sections(sara, "sum_list", SECTIONS) == frozenset()
    assert predicate_sections(sara, "cap7000", SECTIONS) == frozenset()


def test_needed_sections_are_read_from_the_program_the_answer_rests_on() -> None:
    source = resolve_source(DATA)
    cases = {c.id: c for c in load_cases("sara_binary", "hard", source)}
    chosen = [cases[i] for i in ("s1_a_1_i_pos", "s68_a_2_pos", "s63_c_2_A_ii_neg")]
    found = needed_sections(chosen)
    # tax_section_1a/2, taxable_income/2 and married_under_7703/1 carry the answer.
    assert found["s1_a_1_i_pos"] == {"1", "63", "7703"}
    assert found["s68_a_2_pos"] == {"68"}
    # Filed under §63, but no predicate its answer rests on names §63: not trusted.
    assert found["s63_c_2_A_ii_neg"] == "the sections read miss the one the case is filed under"
    # A predicate the program defines but the answer does not reach names nothing.
    unused = cases["s68_a_2_pos"]
    program = unused.reference_prolog + "\nsurviving_spouse_unused(X) :- X = 1.\n"
    padded = dataclasses.replace(unused, reference_prolog=program)
    assert needed_sections([padded])[unused.id] == {"68"}


@pytest.mark.slow
def test_a_distractor_plan_shows_needed_plus_n_others_and_leaves_out_unread_cases() -> None:
    source = resolve_source(DATA)
    domain = get_domain("sara_binary")
    parts = SettingParts()

    def plan(distractors: int | None, seed: int = 0):
        return plan_run(
            [domain],
            split="hard",
            modes=["zero-shot"],
            source=source,
            limit=(9, 11),  # s63_c_2_A_ii_neg (left out), s63_f_3_pos, s68_a_2_pos
            distractors=distractors,
            seed=seed,
            given_parts=parts,
        )

    full, only, two, again, other = plan(None), plan(0), plan(2), plan(2), plan(2, seed=1)
    assert [u.case.id for u in full.units] == ["s63_c_2_A_ii_neg", "s63_f_3_pos", "s68_a_2_pos"]
    assert all(_shown(u.case.statutes) == list(SECTIONS) for u in full.units)
    assert "sara_binary/distractors" not in full.setting_notes
    assert [u.case.id for u in only.units] == ["s63_f_3_pos", "s68_a_2_pos"]
    assert [_shown(u.case.statutes) for u in only.units] == [["63"], ["68"]]
    note = two.setting_notes["sara_binary/distractors"]
    assert "2/3 cases" in note and "1 the sections read miss" in note
    for unit in two.units:
        shown = _shown(unit.case.statutes)
        assert len(shown) == 3 and set(
            _shown(only.units[0 if "63" in shown else 1].case.statutes)
        ) <= set(shown)
        # Each section whole, as the statute has it.
        full_text = dict(statute_sections(full.units[0].case.statutes))
        assert all(text == full_text[n] for n, text in statute_sections(unit.case.statutes))
    assert [u.case.statutes for u in two.units] == [u.case.statutes for u in again.units]
    assert [u.case.statutes for u in two.units] != [u.case.statutes for u in other.units]


@pytest.mark.slow
def test_a_sara_distractor_run_counts_what_it_left_out_and_scores_the_kept(
    tmp_path: Path,
) -> None:
    def spec(distractors: int | None) -> RunSpec:
        return RunSpec(
            model="reference",
            domains=("sara_binary",),
            split="hard",
            modes=("zero-shot",),
            k=1,
            attempts=1,
            case_range=(9, 11),
            distractors=distractors,
            data=resolve_source(DATA),
        )

    relevant = evaluate(spec(0), RunOptions(out=tmp_path / "zero", cache=False))
    noisy = evaluate(spec(3), RunOptions(out=tmp_path / "three", cache=False))
    for run in (relevant, noisy):
        assert {r.case_id for r in run.records} == {"s63_f_3_pos", "s68_a_2_pos"}
        assert all(r.final.outcome == "correct" for r in run.records)
    config = json.loads((noisy.path / "config.json").read_text())
    assert config["distractors"] == 3
    assert "left out: 1 the sections read miss" in config["settings"]["sara_binary/distractors"]
