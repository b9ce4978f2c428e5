from __future__ import annotations

import pytest

from deonticbench.data.domains import get_domain
from deonticbench.reading.answers import (
    answer_from_execution,
    parse_number,
    read_direct_answer,
    read_program_answer,
)
from deonticbench.reading.outcomes import judge_answer, within_tolerance
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
        ("sara_numeric", "Tax result: abc\n", "unreadable answer line"),
        ("sara_numeric", "Tax result: 2017 68844\n", "unreadable answer line"),
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
        ("uscis", "The record shows the petitioner qualifies; the appeal is accepted.", "Accepted"),
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
    from deonticbench.reading.answers import Answer

    assert judge_answer(get_domain("airline"), Answer.abstain("x"), 0) == "abstain"
    assert judge_answer(get_domain("airline"), Answer.abstain("x"), -1) == "abstain"


# --- reading rules ---------------------------------------------------------------------
# Each case below checks one rule a naive reading breaks (negation ignored, leading bare
# labels missed, numbers cut at spaces or years taken for amounts, answers read from
# inside reasoning blocks).

BINARY = ["sara_binary", "housing", "uscis"]


def _labels(name: str) -> tuple[str, str, str, str]:
    """(positive word, negative word, positive class, negative class) from the spec."""
    domain = get_domain(name)
    pos, neg = domain.classes
    words = {domain.canonical_label(w): w for w in domain.label_words}
    return words[pos].capitalize(), words[neg].capitalize(), pos, neg


@pytest.mark.parametrize("name", BINARY)
def test_negated_marked_label_reads_as_the_complement(name: str) -> None:
    pos_w, neg_w, pos, neg = _labels(name)
    domain = get_domain(name)
    assert read_direct_answer(domain, f"Some analysis.\nAnswer: Not {pos_w}").value == neg
    assert read_direct_answer(domain, f"Answer: not {neg_w}.").value == pos
    assert read_direct_answer(domain, f"Answer: it is not {pos_w}").value == neg
    assert read_direct_answer(domain, f"\\boxed{{\\text{{Not {neg_w}}}}}").value == pos
    assert read_direct_answer(domain, f"Answer: {pos_w} rather than {neg_w}").value == pos


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize(
    "template",
    [
        "Answer: Neither {p} nor {n}",
        "Answer: {p} or {n}",
        "Answer: probably {p}",
        "Answer: {p}?",
        "Answer: maybe {n}",
        "Answer: I do not think it is {p}",
        "Answer: {p} is wrong",
        "Answer: {n} is not right",
        "Final answer: It is unclear whether {p} applies",
        "{p}. The statute says so. {n}.",
        "Probably {p}.",
        "Thinking it over.\n{n}?",
    ],
)
def test_negated_hedged_or_conflicting_labels_abstain(name: str, template: str) -> None:
    pos_w, neg_w, _, _ = _labels(name)
    answer = read_direct_answer(get_domain(name), template.format(p=pos_w, n=neg_w))
    assert answer.abstained, answer
    assert answer.reason


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("sara_binary", "Looking at section 63, there is no contradiction with the facts."),
        ("sara_binary", "This is not an entailment of the statute."),
        ("uscis", "The petitioner's appeal is not accepted by the officer's reasoning."),
        ("uscis", "Nothing in the record suggests the appeal was dismissed without cause."),
    ],
)
def test_a_negated_label_in_prose_abstains(name: str, text: str) -> None:
    assert read_direct_answer(get_domain(name), text).abstained


@pytest.mark.parametrize("name", BINARY)
def test_leading_and_trailing_bare_labels(name: str) -> None:
    pos_w, neg_w, pos, neg = _labels(name)
    domain = get_domain(name)
    assert read_direct_answer(domain, f"{pos_w}. The statute provides that ...").value == pos
    assert read_direct_answer(domain, f"{neg_w}, because the rule does not apply.").value == neg
    assert read_direct_answer(domain, f"**{neg_w}**\n\nThe facts show ...").value == neg
    assert read_direct_answer(domain, f"The facts show several things.\n\n**{pos_w}**").value == pos
    assert read_direct_answer(domain, f"We weigh the facts.\nThus: {neg_w}.").value == neg
    # Leading and trailing disagree: abstain.
    assert read_direct_answer(domain, f"{pos_w}. Many words here.\n{neg_w}.").abstained


@pytest.mark.parametrize("name", BINARY)
def test_marker_outranks_bare_labels(name: str) -> None:
    pos_w, neg_w, _, neg = _labels(name)
    text = f"{pos_w}. At first sight.\nOn reflection the rule excludes it.\nAnswer: {neg_w}"
    assert read_direct_answer(get_domain(name), text).value == neg
    text = f"**Final Answer**: {neg_w}\n\n{pos_w}"
    assert read_direct_answer(get_domain(name), text).value == neg


def test_single_mention_in_prose_counts_only_once_and_never_for_everyday_words() -> None:
    assert read_direct_answer(get_domain("sara_binary"), "Clearly an entailment here.").value == (
        "Entailment"
    )
    both = "It looked like an entailment, but it turns out to be a contradiction overall."
    assert read_direct_answer(get_domain("sara_binary"), both).abstained
    # housing's yes/no are everyday words: a mention in prose is not an answer.
    assert read_direct_answer(get_domain("housing"), "There is no statute on point here.").abstained
    assert read_direct_answer(get_domain("housing"), "No statute applies here.").abstained


@pytest.mark.parametrize(
    ("domain", "text", "value"),
    [
        ("sara_numeric", "Tax result: 26567.", 26567.0),
        ("sara_numeric", "Tax result: $40,741.50", 40741.5),
        ("sara_numeric", "Final answer: For tax year 2017, Alice owes $68,844.", 68844.0),
        ("sara_numeric", "Final answer: in 2017 the tax is 68844", 68844.0),
        ("sara_numeric", "Answer: 26 567", 26567.0),
        ("sara_numeric", "Answer: 1\u202f166\u202f000 dollars", 1166000.0),
        ("airline", "Total cost: not $500 but $650.", 650.0),
        ("airline", "Answer: 2017", 2017.0),
        ("airline", "Answer: -$12.50", -12.5),
    ],
)
def test_direct_numbers(domain: str, text: str, value: float) -> None:
    assert read_direct_answer(get_domain(domain), text).value == value


@pytest.mark.parametrize(
    "text",
    ["Answer: 26 5670", "Tax result: 2017 68844", "The tax is then\n26 5670"],
)
def test_a_number_is_never_cut_at_a_space(text: str) -> None:
    answer = read_direct_answer(get_domain("sara_numeric"), text)
    assert answer.abstained and "space" in (answer.reason or "")


@pytest.mark.parametrize(
    ("stdout", "value"),
    [
        ("Tax result: 26567.\n", 26567.0),
        ("Tax result: $40,741.50\n", 40741.5),
        ("Tax result: 26 567\n", 26567.0),
        ("Tax result: 1.2e3\n", 1200.0),
    ],
)
def test_program_output_uses_the_same_number_reader(stdout: str, value: float) -> None:
    assert read_program_answer(get_domain("sara_numeric"), stdout).value == value
    assert parse_number(stdout.split(":", 1)[1]) == value


@pytest.mark.parametrize("stdout", ["Tax result: 26 5670\n", "Total cost: 12,34\n"])
def test_program_output_numbers_are_read_whole_or_not_at_all(stdout: str) -> None:
    domain = get_domain("airline" if stdout.startswith("Total") else "sara_numeric")
    assert read_program_answer(domain, stdout).abstained


@pytest.mark.parametrize("name", [*BINARY, "airline", "sara_numeric"])
@pytest.mark.parametrize(
    ("opening", "closing"),
    [("<think>", "</think>"), ("<thinking>", "</thinking>"), ("<reasoning>", "</reasoning>")],
)
def test_answers_inside_reasoning_blocks_are_not_read(
    name: str, opening: str, closing: str
) -> None:
    domain = get_domain(name)
    stated = "Answer: $650" if domain.label_kind == "numeric" else f"Answer: {_labels(name)[0]}"
    inside = f"{opening}Let me see. {stated}{closing}\nI could not decide."
    assert read_direct_answer(domain, inside).abstained
    unterminated = f"{opening}Let me see.\n{stated}"
    assert read_direct_answer(domain, unterminated).abstained
    after = f"{opening}First guess: {stated.replace('650', '500')}{closing}\n{stated}"
    assert read_direct_answer(domain, after).value == (
        650.0 if domain.label_kind == "numeric" else domain.positive
    )
    orphan = f"draft {stated}{closing}\nNothing to add."
    assert read_direct_answer(domain, orphan).abstained


@pytest.mark.parametrize(
    ("domain", "text", "value"),
    [
        ("airline", "Answer: $150 + $200 = $350", 350.0),
        ("airline", "Total cost: 2 x $75 = $150.", 150.0),
        ("sara_numeric", "Answer: $1.5 million", 1_500_000.0),
        ("sara_numeric", "Answer: $10k", 10_000.0),
        ("sara_binary", "Answer: The hypothesis is not entailed.", "Contradiction"),
        ("sara_binary", "Answer: entailed", "Entailment"),
        ("uscis", "Answer: The appeal is sustained.", "Accepted"),
    ],
)
def test_calculations_scales_and_the_domains_own_words(
    domain: str, text: str, value: object
) -> None:
    assert read_direct_answer(get_domain(domain), text).value == value


def test_a_marked_answer_that_only_negates_an_amount_abstains() -> None:
    text = "The tax is $1,200 on the wages.\nAnswer: not $1,300"
    answer = read_direct_answer(get_domain("sara_numeric"), text)
    assert answer.abstained and "negates" in (answer.reason or "")


@pytest.mark.parametrize("name", BINARY)
def test_a_hedge_anywhere_in_the_answer_sentence_abstains(name: str) -> None:
    pos_w, neg_w, _, _ = _labels(name)
    domain = get_domain(name)
    assert read_direct_answer(domain, f"Answer: {pos_w} (probably)").abstained
    assert read_direct_answer(domain, f"{neg_w}, probably.").abstained
    assert read_direct_answer(domain, f"Analysis.\nSo: {pos_w}, though this is unclear.").abstained


@pytest.mark.parametrize("name", [*BINARY, "airline"])
def test_a_marker_heading_marks_the_next_line(name: str) -> None:
    domain = get_domain(name)
    stated = "$650" if domain.label_kind == "numeric" else _labels(name)[1]
    expected = 650.0 if domain.label_kind == "numeric" else domain.negative
    for heading in ("## Final Answer", "**Answer:**", "Answer"):
        text = f"Reasoning about the case.\n\n{heading}\n\n**{stated}**\n\nWhy: the rules."
        assert read_direct_answer(domain, text).value == expected, heading


@pytest.mark.parametrize(
    "wrapped",
    [
        "[THINK]Answer: Entailment[/THINK]\nI cannot decide.",
        "◁think▷Answer: Entailment◁/think▷\nI cannot decide.",
        "<|begin_of_thought|>Answer: Entailment<|end_of_thought|>\nI cannot decide.",
        "<seed:think>Answer: Entailment</seed:think>\nI cannot decide.",
        "<|channel|>analysis<|message|>Answer: Entailment<|end|>"
        "<|start|>assistant<|channel|>final<|message|>I cannot decide.<|return|>",
    ],
)
def test_other_reasoning_wrappers_are_removed_too(wrapped: str) -> None:
    assert read_direct_answer(get_domain("sara_binary"), wrapped).abstained
    answered = wrapped.replace("I cannot decide.", "Answer: Contradiction")
    assert read_direct_answer(get_domain("sara_binary"), answered).value == "Contradiction"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("sara_binary", "Answer: I'm not sure, but Entailment"),
        ("sara_binary", "Answer: not not Entailment"),
        ("sara_binary", "Answer: would be Entailment if the income were higher, so Contradiction"),
        ("uscis", "Answer: Accepted in part, dismissed in part"),
        ("uscis", "Answer: hard to say; Dismissed"),
        ("housing", "Answer: No answer"),
        ("housing", "Answer: No rule applies"),
        ("housing", "Answer: yes unless the lease says otherwise"),
    ],
)
def test_doubtful_double_negated_and_determiner_uses_abstain(name: str, text: str) -> None:
    assert read_direct_answer(get_domain(name), text).abstained


def test_an_everyday_label_standing_alone_is_still_an_answer() -> None:
    housing = get_domain("housing")
    assert read_direct_answer(housing, "Answer: there is no rule, so no").value == "no"
    assert read_direct_answer(housing, "Answer: Yes it is").value == "yes"
    assert read_direct_answer(housing, "Answer: No.").value == "no"


def test_one_reading_of_an_execution_names_a_failed_status() -> None:
    # The runner, validate and exec read an execution with this one function: a program
    # that stopped with an error and printed no answer says so.
    from deonticbench.solver import Execution

    crashed = Execution("error", "", "ERROR: boom", 1, 0.1, 0, "bwrap", None, None)
    answer = answer_from_execution(get_domain("airline"), crashed)
    assert answer.abstained and answer.reason == "program error: no output"
    fine = Execution("error", "Total cost: 5\n", "Warning: x", 1, 0.1, 1, "bwrap", None, None)
    assert answer_from_execution(get_domain("airline"), fine).value == 5.0


@pytest.mark.parametrize(
    ("domain", "text", "value"),
    [
        ("airline", "Final answer: Bag fee $200, so the total is $1,366", 1366),
        ("airline", "Answer: The fare is $1,166 and the bag is $200, for a total of $1,366", 1366),
        ("airline", "Answer: $200 bag fee, $1,366 total", 1366),
        ("airline", "Answer: $1,366 ($200 for the bag plus $1,166 fare)", 1366),
        ("airline", "Answer: $1,366 [bag $200]", 1366),
        ("sara_numeric", "Final answer: tax before credits $70,000, net $68,844", 68844),
        ("sara_numeric", "Final answer: Alice owes $68,844, so no refund is due", 68844),
    ],
)
def test_a_marked_answer_with_several_amounts_reads_the_one_it_concludes(
    domain: str, text: str, value: float
) -> None:
    assert read_direct_answer(get_domain(domain), text).value == value
