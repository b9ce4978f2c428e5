"""The rule applied to structure: a model program with the reference's
clauses, its own names and order, that replaces which rule applies is a ``wrong_rule``
whatever number diverges first; one operator or one literal changed stays
``numerical``.  Every program is read and proved by the real swipl."""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from deonticbench.analysis.diagnose import Diagnosis, Proven, diagnose
from deonticbench.analysis.engine import analyse_many, prolog_string
from deonticbench.analysis.structure import clauses_of, pair_predicates
from deonticbench.data.cases import Case
from deonticbench.data.domains import get_domain
from deonticbench.reading.answers import answer_from_execution
from deonticbench.reading.outcomes import judge_answer
from deonticbench.solver import Solver
from deonticbench.store.record import Attempt

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = get_domain("airline")
CASE = Case(
    domain="airline",
    id="synthetic_structure",
    question="What is the total cost for the passenger?",
    gold=1430,
    reference_prolog="",
    statutes="Main Cabin: 1st bag $35, 2nd bag $45, 3rd bag $150.  Business: 1st and 2nd "
    "bag $0, 3rd bag $150.  A first-bag voucher waives the first bag's fee.  Oversize "
    "(more than 62 inches) $200; overweight (more than 50 lbs) $100, of which members "
    "pay three fifths.  A bag pays the higher of the two.",
    text="Ann flies Main Cabin for $900; she is not a member and has no voucher.  Her three "
    "bags measure 65, 60 and 49 inches in total and weigh 40, 55 and 30 lbs.",
)
REFERENCE = """\
ticket(900).
status(ann, regular).
voucher(bob, first_bag).
bag(1, 65, 40).
bag(2, 60, 55).
bag(3, 49, 30).
base(1, 35).
base(2, 45).
base(3, 150).
promo(P) :- voucher(P, first_bag).
bag_fee(1, F) :- promo(ann), !, F = 0.
bag_fee(I, F) :- base(I, F).
oversize(S, 200) :- S > 62, !.
oversize(_, 0).
heavy(W) :- W > 50.
overweight(W, V) :- heavy(W), !, status(ann, St), heavy_fee(St, V).
overweight(_, 0).
heavy_fee(regular, V) :- full_fee(V).
heavy_fee(member, V) :- member_fee(V).
full_fee(100).
member_fee(60).
surcharge(S, W, X) :- oversize(S, O), overweight(W, V), max_list([O, V], X).
total(T) :- ticket(P), findall(F, (bag(I, _, _), bag_fee(I, F)), Fs),
    findall(X, (bag(_, S, W), surcharge(S, W, X)), Xs),
    append(Fs, Xs, All), sum_list(All, B), T is P + B.
:- total(T), format("Total cost: ~w~n", [T]).
"""
# The reference with every predicate renamed and the predicates in another order, as a
# model (or the planted-fault generator) writes it.
MODEL = """\
extra(S, W, X) :- too_big(S, O), too_heavy(W, V), max_list([O, V], X).
too_heavy(W, V) :- weighs_a_lot(W), !, kind(ann, St), surcharge(St, V).
too_heavy(_, 0).
surcharge(regular, V) :- whole(V).
surcharge(member, V) :- reduced(V).
whole(100).
reduced(60).
fee_of(1, F) :- has_voucher(ann), !, F = 0.
fee_of(I, F) :- price(I, F).
has_voucher(P) :- coupon(P, first_bag).
price(1, 35).
price(2, 45).
price(3, 150).
weighs_a_lot(W) :- W > 50.
too_big(S, 200) :- S > 62, !.
too_big(_, 0).
fare(900).
kind(ann, regular).
coupon(bob, first_bag).
item(1, 65, 40).
item(2, 60, 55).
item(3, 49, 30).
sum_all(T) :- fare(P), findall(F, (item(I, _, _), fee_of(I, F)), Fs),
    findall(X, (item(_, S, W), extra(S, W, X)), Xs),
    append(Fs, Xs, All), sum_list(All, B), T is P + B.
:- sum_all(T), format("Total cost: ~w~n", [T]).
"""
BUSINESS_TABLE = "base(1, 0).\nbase(2, 0).\nbase(3, 150).\n"
VARIANTS = {
    "model": MODEL,
    # Business class's whole table for the Main Cabin's (another schedule's numbers).
    "table_swap": MODEL.replace("price(1, 35).\nprice(2, 45).\n", "price(1, 0).\nprice(2, 0).\n"),
    # `has_voucher(ann)` -> `\+ has_voucher(ann)`: the voucher's rule for no voucher.
    "negated_condition": MODEL.replace(
        "fee_of(1, F) :- has_voucher(ann)", "fee_of(1, F) :- \\+ has_voucher(ann)"
    ),
    # The voucher test dropped: every first bag is free.
    "dropped_condition": MODEL.replace("fee_of(1, F) :- has_voucher(ann), !", "fee_of(1, F) :- !"),
    # The regular passengers' surcharge given the members' body.
    "sibling_body": MODEL.replace(
        "surcharge(regular, V) :- whole(V).", "surcharge(regular, V) :- reduced(V)."
    ),
    # The oversize rule dropped: only the default clause is left.
    "dropped_clause": MODEL.replace("too_big(S, 200) :- S > 62, !.\n", ""),
    # One threshold moved, a number no schedule states: a slip.
    "numerical_threshold": MODEL.replace("S > 62", "S > 59"),
    # One operator changed.
    "numerical_operator": MODEL.replace("T is P + B", "T is P - B"),
    # One fee changed to a number the statutes do not state: a slip, unless another
    # reference program of the domain states it (another schedule's fee).
    "another_schedules_fee": MODEL.replace("price(3, 150).", "price(3, 120)."),
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
            if name == "another_schedules_fee":
                found["another_schedules_fee_known"] = diagnose(
                    DOMAIN, CASE, attempt, Proven.of(DOMAIN, report), reference, (120.0,)
                )
        # The renamed, reordered reference is right: it is the reference.
        assert found["model"].outcome == "correct" and found["model"].category is None
        yield found


@pytest.mark.parametrize(
    "variant",
    ["table_swap", "negated_condition", "dropped_condition", "sibling_body", "dropped_clause"],
)
def test_a_rule_replaced_is_a_wrong_rule(diagnoses: dict[str, Diagnosis], variant: str) -> None:
    d = diagnoses[variant]
    assert d.outcome == "wrong", d.reason
    assert d.category == "wrong_rule", d.reason


@pytest.mark.parametrize(
    ("variant", "clause"),
    [
        ("numerical_threshold", "too_big/2"),
        ("numerical_operator", "sum_all/1"),
        ("another_schedules_fee", "price/2"),
    ],
)
def test_one_operator_or_literal_is_numerical_in_its_clause(
    diagnoses: dict[str, Diagnosis], variant: str, clause: str
) -> None:
    """Decided clause by clause: the reason names the model's clause that changed."""
    d = diagnoses[variant]
    assert d.outcome == "wrong", d.reason
    assert d.category == "numerical", d.reason
    assert clause in d.reason


def test_another_reference_programs_number_is_another_schedule(
    diagnoses: dict[str, Diagnosis],
) -> None:
    d = diagnoses["another_schedules_fee_known"]
    assert d.category == "wrong_rule", d.reason
    assert "another schedule" in d.reason


def _planted() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "planted_faults", ROOT / "scripts" / "planted_faults.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generator_plants_each_new_kind_and_the_analyser_finds_it() -> None:
    """prolog/mutate.pl plants the five kinds (and renames and reorders), and the
    mutant is diagnosed a wrong rule: the generator and the recogniser agree."""
    planted = _planted()
    with Solver(workers=2) as solver:
        where = planted.places(solver, REFERENCE)
        call = next(c for c in where["calls"] if c["name"] == "promo")
        heavy = [c["clause"] for c in where["clauses"] if c["name"] == "heavy_fee"]
        oversize = next(
            c["clause"] for c in where["clauses"] if c["name"] == "oversize" and c["kind"] == "rule"
        )
        faults = {
            "table_swap": f"table(base/2, {prolog_string(BUSINESS_TABLE)})",
            "negated_condition": f"negate({call['k']})",
            "dropped_condition": f"drop({call['k']})",
            "sibling_body": f"sibling({heavy[0]}, {heavy[1]})",
            "dropped_clause": f"drop_clause({oversize})",
        }
        texts = planted.mutants(solver, REFERENCE, list(faults.values()), 7)
        assert all(texts), faults
        programs = [str(t) for t in texts]
        reports = analyse_many([REFERENCE, *programs], "full", solver)
        executions = solver.map(programs)
    reference = Proven.of(DOMAIN, reports[0])
    for kind, program, report, execution in zip(
        faults, programs, reports[1:], executions, strict=True
    ):
        assert "bag_fee(" not in program  # every predicate renamed
        answer = answer_from_execution(DOMAIN, execution)
        attempt = Attempt(
            index=0, prompt_hash="", response=None, program=program,
            execution=execution.to_dict(), answer=answer.value, abstain_reason=answer.reason,
            outcome=judge_answer(DOMAIN, answer, CASE.gold),
        )  # fmt: skip
        d = diagnose(DOMAIN, CASE, attempt, Proven.of(DOMAIN, report), reference)
        assert d.outcome == "wrong", (kind, d.reason)
        assert d.category == "wrong_rule", (kind, d.reason)


def test_facts_only_their_callers_tell_apart_are_paired_through_their_callers() -> None:
    """Forty facts of one structure, renamed and in another order in the model: each is
    paired with the reference fact that the caller of the same structure calls (the
    pairing scores such a fact only against what its callers' pairs call), not by
    order."""
    count = 40
    reference = "".join(f"f{k}.\n" for k in range(count))
    reference += "".join(f"r({k}) :- f{k}.\n" for k in range(count))
    order = list(range(count))
    random.Random(7).shuffle(order)
    model = "".join(f"g{k}.\n" for k in order)
    model += "".join(f"s({k}) :- g{k}.\n" for k in range(count))
    with Solver(workers=1) as solver:
        ref_report, model_report = analyse_many([reference, model], "full", solver)
    names = pair_predicates(clauses_of(ref_report["static"]), clauses_of(model_report["static"]))
    assert names == {"s": "r", **{f"g{k}": f"f{k}" for k in range(count)}}
