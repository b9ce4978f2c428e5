"""The paper reader's quirks, one by one (each reproduces upstream on purpose; the parity
test, test_paper_reading_parity.py, checks them against upstream's scripts themselves)."""

from __future__ import annotations

from deonticbench.data.domains import get_domain
from deonticbench.reading import reader_for
from deonticbench.reading.paper import EMPTY_PROLOG_EXTRACT, NEUTRAL_FIRST_LINE
from deonticbench.solver import Execution
from deonticbench.solver.execution import TIMEOUT_TERM_IGNORED

PAPER = reader_for("paper")
NUM, BIN = get_domain("sara_numeric"), get_domain("sara_binary")
HOUSING, USCIS = get_domain("housing"), get_domain("uscis")


def _run(stdout: str, status: str = "ok", limit: str | None = None) -> Execution:
    return Execution(status, stdout, "", 0, 0.1, 0, "bwrap", limit)  # type: ignore[arg-type]


def test_the_first_of_two_answer_lines_is_read() -> None:
    answer = PAPER.read_execution(NUM, _run("Tax result: 5\nTax result: 7\n"))
    assert answer.value == 5.0
    assert (
        reader_for("harness").read_execution(NUM, _run("Tax result: 5\nTax result: 7\n")).abstained
    )


def test_the_first_of_two_prolog_blocks_is_run() -> None:
    reply = "```prolog\nsketch.\n```\n```prolog\nfull.\n```"
    assert PAPER.extract(reply) == "sketch."
    assert PAPER.extract("```pl\na.\n```") == "a."
    assert PAPER.extract("no fence at all") == "no fence at all"


def test_an_empty_reply_runs_upstreams_comment_only_program() -> None:
    assert PAPER.prepare(NUM, PAPER.extract("  ") or "").text == EMPTY_PROLOG_EXTRACT
    housing = PAPER.prepare(HOUSING, PAPER.extract("  ") or "").text
    assert housing == NEUTRAL_FIRST_LINE + EMPTY_PROLOG_EXTRACT


def test_housing_and_uscis_programs_start_on_line_two_as_upstreams_do() -> None:
    # Upstream's Label: directive is their line 1 (a script line on line 2 is then a
    # syntax error); the neutral line takes its place and prints nothing.
    script = "#!/usr/bin/env swipl\nanswer(1).\n"
    for domain in (HOUSING, USCIS):
        text = PAPER.prepare(domain, script).text
        assert text.startswith(NEUTRAL_FIRST_LINE + script)
    assert PAPER.prepare(NUM, script).text == script
    assert PAPER.prepare(BIN, script).text == script


def test_a_resource_error_the_program_survived_is_read_a_sandbox_stop_is_not() -> None:
    # classify calls a stack overflow reported on stderr a memory limit; upstream never
    # reads stderr and reads the answer the program went on to print.
    survived = Execution(
        "resource_limit",
        "Tax result: 5\n",
        "Stack limit (1.0Gb) exceeded",
        0,
        0.1,
        0,
        "bwrap",
        "memory",
    )
    assert PAPER.read_execution(NUM, survived).value == 5.0
    flooded = Execution(
        "resource_limit", "Tax result: 5\n", "", None, 0.1, 0, "bwrap", "output", signal=9
    )
    assert PAPER.read_execution(NUM, flooded).abstained


def test_no_gold_label_directive_is_written_and_the_entrypoint_is_upstreams() -> None:
    prepared = PAPER.prepare(USCIS, "decision('Accepted').")
    assert "Label" not in prepared.text
    assert prepared.text.endswith(
        "main :-\n    decision(Result),\n    writeln(Result).\n:- initialization(main, main).\n"
    )
    # A fact main. is no definition to upstream's regex: main/0 is appended all the same.
    assert "decision(Result)" in PAPER.prepare(USCIS, "main.\n:- initialization(main, main).").text


def test_the_verdict_is_the_last_line_that_is_not_a_label_line() -> None:
    # Upstream's injected "Label: ..." line comes first and is skipped, like any other.
    assert PAPER.read_execution(USCIS, _run("Label: Accepted\nDismissed\n")).value == "Dismissed"
    assert PAPER.read_execution(USCIS, _run("Dismissed\nLabel: Accepted\n")).value == "Dismissed"
    assert PAPER.read_execution(USCIS, _run("Accepted\ndone\n")).abstained
    assert PAPER.read_execution(USCIS, _run("Sustained\n")).abstained


def test_a_line_that_reads_as_a_path_ends_the_block_and_an_unterminated_line_is_lost() -> None:
    assert PAPER.read_execution(NUM, _run("loaded /x/rules.pl\nTax result: 5\n")).abstained
    assert PAPER.read_execution(NUM, _run("Tax result: 5")).abstained
    assert PAPER.read_execution(NUM, _run("Tax result: 5\n\n")).value == 5.0


def test_a_timeout_abstains_unless_the_program_outlived_its_sigterm() -> None:
    assert PAPER.read_execution(NUM, _run("Tax result: 5\n", "timeout", "timeout")).abstained
    killed = _run("Tax result: 5\n", "timeout", TIMEOUT_TERM_IGNORED)
    assert PAPER.read_execution(NUM, killed).value == 5.0
    assert PAPER.read_execution(NUM, _run("Tax result: 5\n", "resource_limit", "output")).abstained


def test_direct_replies_are_read_as_bootstrap_outputs_reads_them() -> None:
    assert PAPER.read_direct(NUM, "Total: 68844\n\nNote: 0 items exempt.").value == 68844.0
    assert PAPER.read_direct(NUM, "-500").value == 500.0
    assert PAPER.read_direct(NUM, "It costs $1,200 for 3 bags").value == 1200.0
    assert PAPER.read_direct(BIN, "not Contradiction").value == "Contradiction"
    assert PAPER.read_direct(HOUSING, "Y").value == "yes"
    assert PAPER.read_direct(HOUSING, "It was decided yesterday").abstained
    assert PAPER.read_direct(USCIS, "Sustained").abstained
    assert PAPER.read_direct(USCIS, "").abstained


def test_judging_is_the_papers_rule() -> None:
    answer = PAPER.read_execution(NUM, _run("Tax result: 100.6\n"))
    assert PAPER.judge_answer(NUM, answer, 100) == "correct"
    assert (
        PAPER.judge_answer(NUM, PAPER.read_execution(NUM, _run("Tax result: 101.6\n")), 100)
        == "wrong"
    )
