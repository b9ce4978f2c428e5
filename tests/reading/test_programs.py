from __future__ import annotations

import os

import pytest

from deonticbench.data.cases import load_cases, resolve_source
from deonticbench.data.domains import DOMAINS, get_domain
from deonticbench.reading.programs import extract_program, prepare_program, strip_label_directives

FENCE = "`" * 3


def fenced(body: str, label: str = "prolog") -> str:
    return f"{FENCE}{label}\n{body}\n{FENCE}"


def test_single_prolog_block_with_prose_around() -> None:
    text = "Let me think.\n" + fenced("a(1).\n:- a(X), write(X).") + "\nThat's it."
    assert extract_program(text) == "a(1).\n:- a(X), write(X).\n"


def test_blocks_for_rules_facts_query_are_concatenated() -> None:
    text = "\n".join(
        [fenced("r(X) :- f(X)."), "facts:", fenced("f(1)."), fenced(":- r(X), writeln(X).")]
    )
    assert extract_program(text) == "r(X) :- f(X).\n\nf(1).\n\n:- r(X), writeln(X).\n"


def test_a_later_complete_program_supersedes_a_draft() -> None:
    draft = fenced("p(1).\n:- p(X), writeln(X).\n:- halt.")
    final = fenced("p(2).\n:- p(X), writeln(X).\n:- halt.")
    assert extract_program(f"Draft:\n{draft}\nFixed:\n{final}") == (
        "p(2).\n:- p(X), writeln(X).\n:- halt.\n"
    )


def test_prolog_labels_win_over_other_blocks() -> None:
    text = fenced("print('hi')", "python") + "\n" + fenced("x(1).", "pl")
    assert extract_program(text) == "x(1).\n"


def test_unlabelled_block_is_used_when_it_looks_like_prolog() -> None:
    assert extract_program(fenced("q :- true.\n:- q, halt.", "")) == "q :- true.\n:- q, halt.\n"
    assert extract_program(fenced("Just some words here.\nAnd more words.", "")) is None


def test_unterminated_fence_runs_to_the_end() -> None:
    assert extract_program(f"{FENCE}prolog\nz(1).\n:- z(X), print(X).") == (
        "z(1).\n:- z(X), print(X).\n"
    )


def test_think_sections_are_ignored() -> None:
    text = "<think>\n" + fenced("wrong(1).") + "\n</think>\n" + fenced("right(1).")
    assert extract_program(text) == "right(1).\n"


def test_bare_code_and_prose() -> None:
    assert extract_program("fact(a).\nrule(X) :- fact(X).\n:- rule(X), writeln(X).") is not None
    assert extract_program("The tax owed is $1,166. That is the answer.") is None
    assert extract_program("") is None
    assert extract_program(None) is None


def test_strip_label_directives() -> None:
    program = (
        ':- format("~w~n", ["Label: 1166"]).\nfoo.\n:- format("Label: ~w~n", ["yes"]).\nbar.\n'
    )
    assert strip_label_directives(program) == "foo.\nbar.\n"


def test_entrypoint_repair_for_uscis_and_housing() -> None:
    uscis = prepare_program(get_domain("uscis"), "decision('Accepted').\n")
    assert uscis.repaired
    assert "main :- decision(Result), format('~w~n', [Result])." in uscis.text
    assert uscis.text.rstrip().endswith(":- initialization(main, main).")
    housing = prepare_program(get_domain("housing"), "housing_answer(yes).\nmain :- go.\n")
    assert housing.repaired and housing.text.count("main :-") == 1
    assert housing.notes == (":- initialization(main, main). added",) or any(
        "initialization" in n for n in housing.notes
    )
    untouched = prepare_program(get_domain("airline"), "x.\n")
    assert not untouched.repaired and untouched.text == "x.\n"


@pytest.mark.skipif(not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA")
@pytest.mark.parametrize("name", list(DOMAINS))
def test_no_label_reaches_a_prepared_reference_program(name: str) -> None:
    domain = DOMAINS[name]
    for case in load_cases(domain, "hard", resolve_source()):
        prepared = prepare_program(domain, case.reference_prolog)
        assert "Label:" not in prepared.text
        if domain.entrypoint:
            assert ":- initialization(main, main)." in prepared.text


def test_unwrap_fenced_takes_code_out_of_a_stored_response_only() -> None:
    from deonticbench.reading.programs import unwrap_fenced

    assert unwrap_fenced(fenced("a(1).\n:- halt.")) == "a(1).\n:- halt.\n"
    bare = "% no fence here\nb(2).\n"
    assert unwrap_fenced(bare) == bare


# --- programs recognised by SWI-Prolog's reader -----------------------------------------

# A program shaped like upstream's airline references: banner block comments and clause
# bodies spread over many lines, so that fewer than 80% of its lines "look like" Prolog.
COMMENTED_PROGRAM = """/* =======================================================
   Facts describing the itinerary and the luggage
   ======================================================= */

/* the ticket price */
flight_cost(471).

/* ---------------------------------------------------------
   Over-size fees  (Asia / Pacific region)
   Three bands apply:
        small   up to 62 inches
        medium  up to 65 inches
        large   up to 115 inches
   --------------------------------------------------------- */
oversize_fee(Sum, Fee) :-
      (  Sum =< 62      -> Fee = 0
      ;  Sum =< 65      -> Fee = 30
      ;  Sum =< 115     -> Fee = 200
      ).

total(T) :-
      flight_cost(C),
      oversize_fee(64, F),
      T is C + F.

:- initialization((total(T), format("Total cost: ~w~n", [T]), halt)).
"""


def test_program_with_block_comments_and_long_bodies_is_a_program() -> None:
    expected = COMMENTED_PROGRAM.strip() + "\n"
    assert extract_program(COMMENTED_PROGRAM) == expected
    assert extract_program(f"Here it is:\n{fenced(COMMENTED_PROGRAM, '')}\nDone.") == expected
    assert extract_program(fenced(COMMENTED_PROGRAM, "text")) == expected


def test_swipl_reader_decides_and_honours_operator_libraries() -> None:
    from deonticbench.reading.programs import read_by_swipl

    assert read_by_swipl(COMMENTED_PROGRAM) == 4
    clpfd = ":- use_module(library(clpfd)).\nsolve(X) :- X #= 2 + 3.\n:- solve(X), print(X).\n"
    assert read_by_swipl(clpfd) == 3
    assert read_by_swipl("The tax owed is $1,166. That is the answer.") is None
    assert read_by_swipl("Yes.") is None  # a variable is no clause
    assert extract_program("Yes.") is None


def test_line_rule_counts_comments_and_continuations() -> None:
    """Where swipl's reader stops (a syntax error), the line rule still decides rightly."""
    from deonticbench.reading.programs import _lines_look_like_prolog

    assert _lines_look_like_prolog(COMMENTED_PROGRAM)
    broken = COMMENTED_PROGRAM.replace("T is C + F.", "T is C + F")  # no full stop
    assert extract_program(broken) is not None
    assert not _lines_look_like_prolog("Just some words here.\nAnd more words.\nThe end.")


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA")
@pytest.mark.parametrize("name", list(DOMAINS))
def test_every_reference_program_is_a_program_bare_or_in_a_bare_fence(name: str) -> None:
    from deonticbench.reading.programs import unwrap_fenced

    for case in load_cases(DOMAINS[name], "hard", resolve_source()):
        program = unwrap_fenced(case.reference_prolog)
        assert extract_program(program) is not None, case.id
        assert extract_program(f"My program:\n{fenced(program, '')}") is not None, case.id


def test_label_directives_are_found_by_swipl_in_every_shape() -> None:
    program = (
        ':- format(\n    "Label: ~w~n",\n    [yes]).\n'
        "foo.\n"
        ":- writeln('Label: no').\n"
        ':- print("Label: 3").\n'
        ':- format(user_output, "Label: ~w~n", [1166]).\n'
        'bar :- format("Label: ~w~n", [x]).\n'  # a clause, not a directive: kept
        ':- format("~w~n", [done]).\n'
    )
    assert strip_label_directives(program) == (
        'foo.\nbar :- format("Label: ~w~n", [x]).\n:- format("~w~n", [done]).\n'
    )


def test_removing_a_label_directive_is_a_repair() -> None:
    domain = get_domain("airline")
    prepared = prepare_program(domain, ':- format("~w~n", ["Label: 1166"]).\nfoo.\n')
    assert prepared.text == "foo.\n"
    assert prepared.repaired
    assert "removed upstream Label directive" in prepared.notes
    assert not prepare_program(domain, "foo.\n").repaired
