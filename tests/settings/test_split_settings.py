"""The rule/fact split of real reference programs, and the two settings run end to end
with the reference backend, real swipl and the real sandbox (docs/settings.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deonticbench import RunOptions, RunSpec, evaluate
from deonticbench.data import get_domain, load_cases
from deonticbench.data.sources import resolve_source
from deonticbench.prompting.render import render
from deonticbench.reading import answer_from_execution
from deonticbench.settings import split_cases
from deonticbench.settings.given import asked_part, shown_part
from deonticbench.settings.split import read_clauses
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
DOMAIN_NAMES = ("sara_numeric", "sara_binary", "airline", "housing", "uscis")


def test_split_pl_tells_case_facts_rules_and_the_query_by_reading_the_program() -> None:
    program = (
        "% the case\n"
        'income("Alice", 2017, 50000).\n'
        "rate(0.1).\n"
        "tax(P, Y, T) :- income(P, Y, I), rate(R), T is I * R.\n"
        "run :- tax(\"Alice\", 2017, T), format('Tax result: ~w~n', [T]).\n"
        "main :- run.\n"
        ":- initialization(main, main).\n"
    )
    [report] = read_clauses([program])
    by_pred = {c["pred"]: c for c in report["clauses"] if c["kind"] == "clause"}
    assert by_pred["income/3"]["ground_fact"] and by_pred["income/3"]["constants"] == [
        "Alice",
        "2017",
        "50000",
    ]
    assert not by_pred["tax/3"]["ground_fact"]
    # main/0 and the printing run/0 that only main calls are the query; tax/3 is what
    # the query prints (the conclusion).
    assert sorted(report["query"]) == ["main/0", "run/0"]
    assert report["answer"] == ["tax/3"]
    start, end = by_pred["tax/3"]["start"], by_pred["tax/3"]["end"]
    assert program[start:end].strip().startswith("tax(P, Y, T) :-")
    [broken] = read_clauses(["a(1.\n"])
    assert "syntax_error" in broken["error"]


@pytest.fixture(scope="module")
def splits() -> dict[str, list]:
    source = resolve_source(DATA)
    out = {}
    with Solver(workers=2) as solver:
        for name in DOMAIN_NAMES:
            cases = load_cases(name, "hard", source)[:4]
            out[name] = list(zip(cases, split_cases(cases, solver), strict=True))
    return out


@pytest.mark.slow
def test_each_kept_split_recombines_to_the_gold_answer_and_each_part_is_needed(
    splits: dict[str, list],
) -> None:
    kept = 0
    with Solver(workers=2) as solver:
        for name, pairs in splits.items():
            domain = get_domain(name)
            for case, split in pairs:
                if not split.kept:
                    assert split.dropped  # never silently
                    continue
                kept += 1
                parts = split.split
                assert parts.rules and parts.facts and parts.query
                # The facts are statements of this case: each carries a constant of it.
                assert parts.facts not in parts.rules
                # Only the two parts together answer: the rules-given reference answer
                # alone (facts and query, no rules) prints no answer.
                alone = answer_from_execution(domain, solver.run(asked_part(split, "rules-given")))
                assert alone.value is None, (name, case.id)
    assert kept >= 12


@pytest.mark.slow
def test_the_settings_prompts_show_one_part_and_never_the_other_or_the_query(
    splits: dict[str, list],
) -> None:
    case, split = next(p for p in splits["sara_numeric"] if p[1].kept)
    shot, shot_split = next(p for p in splits["sara_numeric"] if p[1].kept and p[0] != case)

    def shown(setting: str):
        return render(
            case,
            setting,
            [shot],
            given=shown_part(split, setting),
            exemplar_parts=[(shown_part(shot_split, setting), asked_part(shot_split, setting))],
        )

    rules, facts = shown("rules-given"), shown("facts-given")
    text_r, text_f = rules.messages[1].content, facts.messages[1].content
    first_fact = split.split.facts.splitlines()[0]
    first_rule = next(line for line in split.split.rules.splitlines() if ":-" in line)
    own_r, own_f = text_r.split("## Rules given")[1], text_f.split("## Facts given")[1]
    assert first_rule in own_r and first_fact not in text_r
    assert first_fact in own_f and first_rule not in own_f
    # The case's own query is never shown (the exemplars show theirs, above the given part).
    query = split.split.query.splitlines()[0]
    assert query not in text_r.split("## Rules given")[1]
    assert query not in text_f.split("## Facts given")[1]
    # Each exemplar shows its own split parts: rules and the facts+query it completes.
    assert shot_split.split.rules in text_r and shot_split.split.facts in text_r
    assert shot_split.split.facts in text_f and shot_split.split.rules in text_f
    assert str(case.gold) not in text_r
    assert (
        rules.template == "sara_numeric/rules-given" and rules.template_hash != facts.template_hash
    )


@pytest.mark.slow
def test_the_reference_answering_only_the_asked_part_scores_every_kept_case(tmp_path: Path) -> None:
    """Done-when: the harness adds the shown part, so the reference backend's half program
    answers every case the setting kept; the records hold the joined program and the
    template hash, and config.json counts what each setting left out."""
    spec = RunSpec(
        model="reference",
        domains=DOMAIN_NAMES,
        split="hard",
        modes=("rules-given", "facts-given"),
        k=1,
        attempts=1,
        case_range=4,
        data=resolve_source(DATA),
    )
    run = evaluate(spec, RunOptions(out=tmp_path / "run", cache=False))
    assert run.records and run.session is not None and not run.session.interrupted
    assert all(r.final.outcome == "correct" for r in run.records), [
        (r.domain, r.case_id, r.mode, r.final.abstain_reason)
        for r in run.records
        if r.final.outcome != "correct"
    ]
    for record in run.records:
        attempt = record.first
        assert record.template_hash and attempt.response and attempt.program
        # What ran is more than the model's answer: the shown part came first.
        model_part = attempt.response.strip().removeprefix("```prolog").removesuffix("```")
        assert len(attempt.program) > len(model_part.strip())
    config = json.loads((run.path / "config.json").read_text())
    notes = config["settings"]
    assert set(notes) == set(DOMAIN_NAMES) | {f"{d}/exemplars" for d in DOMAIN_NAMES}
    assert "rules-given" in notes["uscis"] and "left out" in notes["uscis"]
    assert "uscis/rules-given" in config["templates"]
    planned = {(r.domain, r.case_id, r.mode) for r in run.records}
    assert len(planned) == run.session.planned < 2 * 4 * len(DOMAIN_NAMES)  # some left out
