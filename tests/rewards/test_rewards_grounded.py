"""The ``grounded`` reward mode: 1 only for a correct answer whose
derivation is grounded; through the real sandbox, swipl and the analyser."""

from __future__ import annotations

import json
import os

import pytest

from deonticbench.data.cases import Case, load_cases, resolve_source
from deonticbench.data.domains import get_domain
from deonticbench.prompting import demonstration
from deonticbench.rewards import RewardTarget, score_batch
from deonticbench.rewards.core import RewardCache, RewardInputError

pytestmark = pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)


def fenced(program: str) -> str:
    return f"```prolog\n{program}\n```"


def reference(case: Case) -> str:
    return fenced(demonstration(get_domain(case.domain), case))


@pytest.fixture(scope="module")
def airline() -> list[Case]:
    return load_cases("airline", "hard", resolve_source())[:3]


def test_references_earn_it_constants_and_named_facts_do_not(airline: list[Case]) -> None:
    targets = [RewardTarget.from_case(c) for c in airline]
    constant = [
        fenced(f':- initialization(main).\nmain :- format("Total cost: ~w~n", [{c.gold}]).')
        for c in airline
    ]
    named = [
        fenced(f"total_cost(answer, {c.gold}).\n:- initialization(main).\n"
               "main :- total_cost(answer, X), format(\"Total cost: ~w~n\", [X]).")
        for c in airline
    ]  # fmt: skip
    texts = [reference(c) for c in airline] + constant + named
    results = score_batch(texts, targets * 3, mode="grounded", cache=RewardCache())
    eval_results = score_batch(texts, targets * 3, mode="eval", cache=RewardCache())
    assert [r.reward for r in eval_results] == [1.0] * 9  # every answer is right
    n = len(airline)
    assert [r.reward for r in results[:n]] == [1.0] * n
    assert all(r.derivation == "grounded" and r.parts()["grounded"] == 1.0 for r in results[:n])
    for r in results[n:]:
        assert r.correct and r.reward == 0.0 and r.derivation == "hard_coded", r
        assert r.derivation_reason


def test_uscis_references_asserting_the_conclusion_earn_nothing() -> None:
    cases = load_cases("uscis", "hard", resolve_source())
    targets = [RewardTarget.from_case(c) for c in cases]
    results = score_batch(
        [reference(c) for c in cases], targets, mode="grounded", cache=RewardCache()
    )
    eval_results = score_batch(
        [reference(c) for c in cases], targets, mode="eval", cache=RewardCache()
    )
    correct_not_grounded = [
        r for r, e in zip(results, eval_results, strict=True) if e.reward == 1.0 and r.reward == 0.0
    ]
    assert correct_not_grounded, "some USCIS references assert the adjudicator's conclusion"
    assert all(
        r.derivation in ("hard_coded", "ungrounded", "no_proof") for r in correct_not_grounded
    )


def test_the_label_carries_the_case_constants(airline: list[Case]) -> None:
    target = RewardTarget.from_case(airline[0])
    label = json.loads(target.to_label())
    assert set(label["case_constants"]) == {"numbers", "words", "statute_numbers"}
    again = RewardTarget.from_label(target.to_label())
    assert again.case_constants == target.case_constants
    result = score_batch([reference(airline[0])], [again], mode="grounded", cache=RewardCache())[0]
    assert result.reward == 1.0
    bare = RewardTarget.from_fields("airline", airline[0].gold, airline[0].id)
    with pytest.raises(RewardInputError, match="case's constants"):
        score_batch([reference(airline[0])], [bare], mode="grounded", cache=RewardCache())
