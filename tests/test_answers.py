from __future__ import annotations

import pytest

from deonticbench.answers import (
    answer_from_execution,
    parse_number,
    read_direct_answer,
    read_program_answer,
)
from deonticbench.domains import get_domain
from deonticbench.outcomes import judge, within_tolerance
from deonticbench.solver import Execution


@pytest.mark.parametrize(
    ("domain", "stdout", "value"),
    [
        ("sara_numeric", "Tax result: 68844\n", 68844.0),
        ("sara_numeric", "Tax result: 1,166.50\n", 1166.5),
        ("sara_numeric", "Tax result: -12\n", -12.0),
        ("airline", "Total cost: 1166\n", 1166.0),
        ("airline", "Total cost: 1166\nTotal cost: 1166.0\n", 1166.0),
        ("sara_binary", "Result: Entailment\n", "Entailment"),
        ("sara_binary", "Result: contradiction\n", "Contradiction"),
        ("housing", "housing_answer(yes).\n", "yes"),
        ("housing", "housing_answer(no)\n", "no"),
        ("uscis", "Accepted\n", "Accepted"),
        ("uscis", "Dismissed\n", "Dismissed"),
    ],
)
def test_program_answers(domain: str, stdout: str, value: object) -> None:
    assert read_program_answer(get_domain(domain), stdout).value == value


@pytest.mark.parametrize(
    ("domain", "stdout", "reason"),
    [
        ("airline", "", "no output"),
        ("airline", "Total: 5\n", "no answer line"),
        ("airline", "Total cost: 5\nTotal cost: 7\n", "conflicting"),
        ("housing", "housing_answer(yes).\nhousing_answer(no).\n", "conflicting"),
        ("uscis", "Lack of information: predicate x/0 is not defined.\n", "no answer line"),
        ("sara_numeric", "Tax result: abc\n", "no answer line"),
    ],
)
def test_program_abstentions(domain: str, stdout: str, reason: str) -> None:
    answer = read_program_answer(get_domain(domain), stdout)
    assert answer.abstained and reason in (answer.reason or "")


def test_killed_programs_abstain_even_with_output() -> None:
    execution = Execution("timeout", "Total cost: 5\n", "", None, 20.0, 0, "bwrap", "timeout", 9)
    answer = answer_from_execution(get_domain("airline"), execution)
    assert answer.abstained and "timeout" in (answer.reason or "")


@pytest.mark.parametrize(
    ("domain", "text", "value"),
    [
        ("airline", "The total is $1,166.", 1166.0),
        ("airline", "First $500 ... then the total comes to $650.\nAnswer: $650", 650.0),
        ("airline", "Answer: 1166.00", 1166.0),
        ("airline", "Final answer: 1.5e3", 1500.0),
        ("sara_numeric", "so tax is \\boxed{68,844}", 68844.0),
        ("sara_numeric", "Answer: $500 earlier, \\boxed{600} wait no. Final answer: 700", 700.0),
        (
            "sara_binary",
            "It looks like an entailment at first, but Answer: Contradiction",
            "Contradiction",
        ),
        ("sara_binary", "\\boxed{Entailment}", "Entailment"),
        ("housing", "Reasoning: there is no rule...\nAnswer: Yes", "yes"),
        ("housing", "Analysis here.\nNo", "no"),
        ("uscis", "The appeal should be dismissed... Actually it is Accepted.", "Accepted"),
        ("uscis", "Decision: Dismissed", "Dismissed"),
    ],
)
def test_direct_answers(domain: str, text: str, value: object) -> None:
    assert read_direct_answer(get_domain(domain), text).value == value


@pytest.mark.parametrize(
    ("domain", "text"),
    [
        ("airline", "I cannot tell."),
        ("housing", "There is no statute that says so, and no case either."),
        ("sara_binary", ""),
    ],
)
def test_direct_abstentions(domain: str, text: str) -> None:
    assert read_direct_answer(get_domain(domain), text).abstained


def test_parse_number() -> None:
    assert parse_number("$1,234.50") == 1234.5
    assert parse_number("nan") is None
    assert parse_number("inf") is None
    assert parse_number("12 apples") is None


@pytest.mark.parametrize(
    ("value", "gold", "ok"),
    [
        (100.0, 100, True),
        (101.0, 100, True),
        (99.0, 100, True),
        (102.0, 100, False),
        (101.4, 100, True),
        (101.5, 100, False),  # round(101.5) == 102 (half to even)
        (98.5, 100, False),  # round(98.5) == 98
        (100.5, 101, True),  # round(100.5) == 100
        (-1.0, 0, True),
        (-2.0, 0, False),
    ],
)
def test_tolerance_edges(value: float, gold: int, ok: bool) -> None:
    assert within_tolerance(value, gold) is ok


def test_abstention_is_never_correct_even_near_gold() -> None:
    from deonticbench.answers import Answer

    assert judge(get_domain("airline"), Answer.abstain("x"), 0) == "abstain"
    assert judge(get_domain("airline"), Answer.abstain("x"), -1) == "abstain"
