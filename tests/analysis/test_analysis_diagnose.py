"""The failure taxonomy and the derivation axis, decided for hand-made programs that
differ from a reference program in one known way (the real swipl analyses them all)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from deonticbench.analysis.diagnose import Diagnosis, Proven, diagnose
from deonticbench.analysis.engine import analyse_many
from deonticbench.data.cases import Case
from deonticbench.data.domains import get_domain
from deonticbench.reading.answers import answer_from_execution
from deonticbench.reading.outcomes import judge_answer
from deonticbench.solver import Solver
from deonticbench.store.record import Attempt

DOMAIN = get_domain("sara_numeric")
CASE = Case(
    domain="sara_numeric",
    id="synthetic_1",
    question="How much tax does Alice owe for 2017?",
    gold=6000,
    reference_prolog="",
    statutes="Tax is 20% of taxable income over $30,000 and 10% otherwise, less a "
    "childcare credit; taxable income is income less $10,000.",
    text="Alice earned $50,000 in 2017. She paid $2,000 for childcare.",
)
REFERENCE = """\
income(alice, 50000).
childcare(alice, 2000).
threshold(10000).
taxable(P, T) :- income(P, I), threshold(H), T is I - H.
tax(P, X) :- taxable(P, T), ( T > 30000 -> R = 0.2 ; R = 0.1 ), childcare(P, C), X is T * R - C.
:- tax(alice, X), format("Tax result: ~w~n", [X]).
"""
# A model's own names, layout and order; one difference each.
MODEL = """\
owes(Who, Amount) :- base(Who, B), ( B > 30000 -> Pct = 0.2 ; Pct = 0.1 ),
    paid_care(Who, Care), Amount is B * Pct - Care.
base(Who, B) :- earned(Who, E), allowance(A), B is E - A.
earned(alice, 50000).
paid_care(alice, 2000).
allowance(10000).
:- owes(alice, X), format("Tax result: ~w~n", [X]).
"""
VARIANTS = {
    "grounded": MODEL,
    "entity_fact": MODEL.replace("earned(alice, 50000)", "earned(alice, 55000)"),
    # The other rate of the statute: another part's constant, the rule chosen is wrong.
    "wrong_rule": MODEL.replace("Pct = 0.2", "Pct = 0.1"),
    # Both rates changed: another schedule.
    "wrong_rule_several": MODEL.replace("Pct = 0.2", "Pct = 0.25").replace(
        "Pct = 0.1", "Pct = 0.15"
    ),
    # One rate changed to a number the statutes never state: a numerical slip.
    "numerical_constant": MODEL.replace("Pct = 0.2", "Pct = 0.25"),
    "numerical_comparison": MODEL.replace("B > 30000", "B < 30000"),
    "numerical_operator": MODEL.replace("B * Pct - Care", "B * Pct + Care"),
    "numerical_threshold": MODEL.replace("B > 30000", "B > 45000"),
    "impl_bug": MODEL.replace("paid_care(Who, Care)", "care_paid(Who, Care)"),
    "syntax": MODEL.replace("allowance(10000).", "allowance(10000."),
    "hard_coded": "owes(alice, 6000).\n:- owes(alice, X), format('Tax result: ~w~n', [X]).\n",
    "ungrounded": "adj(alice, 1234).\n"
    + MODEL.replace("Amount is B * Pct - Care.", "adj(Who, J), Amount is B * Pct - Care + J - J."),
}


@pytest.fixture(scope="module")
def diagnoses() -> Iterator[dict[str, Diagnosis]]:
    with Solver(workers=2) as solver:
        names = list(VARIANTS)
        reports = analyse_many([REFERENCE, *VARIANTS.values()], "full", solver)
        executions = solver.map(list(VARIANTS.values()))
        reference = Proven.of(DOMAIN, reports[0])
        found: dict[str, Diagnosis] = {}
        for name, report, execution in zip(names, reports[1:], executions, strict=True):
            answer = answer_from_execution(DOMAIN, execution)
            attempt = Attempt(
                index=0,
                prompt_hash="",
                response=None,
                program=VARIANTS[name],
                execution=execution.to_dict(),
                answer=answer.value,
                abstain_reason=answer.reason,
                outcome=judge_answer(DOMAIN, answer, CASE.gold),
            )
            found[name] = diagnose(DOMAIN, CASE, attempt, Proven.of(DOMAIN, report), reference)
        yield found


def test_correct_and_grounded(diagnoses: dict[str, Diagnosis]) -> None:
    d = diagnoses["grounded"]
    assert d.outcome == "correct" and d.category is None
    assert d.derivation == "grounded"
    assert d.fact_coverage == 1.0 and d.value_recall == 1.0 and d.first_divergence is None
    assert d.signature_jaccard == 0.0  # no name in common, yet the same meaning


@pytest.mark.parametrize(
    ("variant", "category"),
    [
        ("entity_fact", "entity_fact"),
        ("wrong_rule", "wrong_rule"),
        ("wrong_rule_several", "wrong_rule"),
        ("numerical_constant", "numerical"),
        ("numerical_comparison", "numerical"),
        ("numerical_operator", "numerical"),
        ("numerical_threshold", "numerical"),
        ("impl_bug", "impl_bug"),
        ("syntax", "impl_bug"),
    ],
)
def test_failure_category(diagnoses: dict[str, Diagnosis], variant: str, category: str) -> None:
    d = diagnoses[variant]
    assert d.outcome in ("wrong", "abstain")
    assert d.category == category, d.reason


def test_measures_of_a_wrong_fact(diagnoses: dict[str, Diagnosis]) -> None:
    d = diagnoses["entity_fact"]
    assert d.fact_coverage is not None and d.fact_coverage < 1
    assert d.missing_constants == [50000]
    assert d.first_divergence is not None and d.first_divergence["value"] == 40000
    assert d.first_divergence["line"] == 4  # the reference clause that computed it
    assert d.hallucinated_constants == [55000.0]
    assert d.derivation == "ungrounded"


def test_undefined_predicate_is_reported(diagnoses: dict[str, Diagnosis]) -> None:
    assert diagnoses["impl_bug"].undefined == ["care_paid/2"]
    assert "care_paid/2" in diagnoses["impl_bug"].reason


def test_derivation_axis(diagnoses: dict[str, Diagnosis]) -> None:
    assert diagnoses["hard_coded"].outcome == "correct"
    assert diagnoses["hard_coded"].derivation == "hard_coded"
    assert diagnoses["ungrounded"].outcome == "correct"
    assert diagnoses["ungrounded"].derivation == "ungrounded"
    assert diagnoses["ungrounded"].hallucinated_constants == [1234.0]
    assert diagnoses["impl_bug"].derivation == "no_proof"


USCIS = get_domain("uscis")
USCIS_CASE = Case(
    domain="uscis",
    id="synthetic_2",
    question="Should this case be accepted or dismissed?",
    gold="Dismissed",
    reference_prolog="",
    statutes="A petitioner must show national importance of the proposed endeavor.",
    text="The petitioner holds a doctor of medicine degree and proposes cancer research.",
)
DECIDED_BY_FAIL = """\
holds_doctor_of_medicine_degree.
proposes_cancer_research.
national_importance :- fail.
eligible :- holds_doctor_of_medicine_degree, national_importance.
decision('Dismissed') :- \\+ eligible.
decision('Accepted') :- eligible.
main :- decision(D), format("~w~n", [D]).
:- initialization(main, main).
"""


def test_a_decision_resting_on_a_fail_rule_is_hard_coded() -> None:
    derived = DECIDED_BY_FAIL.replace(
        "national_importance :- fail.", "national_importance :- proposes_cancer_research."
    ).replace("eligible :- holds", "eligible :- \\+ proposes_cancer_research, holds")
    with Solver(workers=1) as solver:
        reports = analyse_many([DECIDED_BY_FAIL, derived], "full", solver)
        executions = solver.map([DECIDED_BY_FAIL, derived])
    found = []
    for program, report, execution in zip(
        [DECIDED_BY_FAIL, derived], reports, executions, strict=True
    ):
        answer = answer_from_execution(USCIS, execution)
        attempt = Attempt(
            index=0, prompt_hash="", response=None, program=program,
            execution=execution.to_dict(), answer=answer.value,
            outcome=judge_answer(USCIS, answer, USCIS_CASE.gold),
        )  # fmt: skip
        proven = Proven.of(USCIS, report)
        found.append(diagnose(USCIS, USCIS_CASE, attempt, proven, proven))
    assert [d.outcome for d in found] == ["correct", "correct"]
    assert [d.derivation for d in found] == ["hard_coded", "grounded"]
