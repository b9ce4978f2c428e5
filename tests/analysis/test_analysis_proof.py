"""The meta-interpreter (prolog/analyse.pl) run by the real swipl in the sandbox: which
goal printed the answer, and what its proof records."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from deonticbench.analysis.engine import analyse_many, run_analyser
from deonticbench.analysis.proof import answer_goal, goal_runs, render, walk
from deonticbench.data.domains import get_domain
from deonticbench.solver import Solver

SARA = get_domain("sara_numeric")
AIRLINE = get_domain("airline")

PROGRAM = """\
income(alice, 1000).
income(bob, 300).
rate(0.1).
exempt(bob).
tax(P, T) :- income(P, I), \\+ exempt(P), rate(R), T is I * R.
bracket(I, B) :- ( I =< 500 -> B = low ; B = high ).
total(Sum) :- findall(T, tax(_, T), Ts), sum_list(Ts, Sum).
count(N) :- aggregate_all(count, income(_, _), N).
big(P) :- income(P, I), I > 999.
first_big(P) :- big(P), !.
:- format("debug line~n").
:- initialization(main).
main :- tax(alice, T), bracket(1000, B), total(S), count(N), first_big(P),
        include([X]>>(X > 1), [1, 2, 3], L),
        format("Tax result: ~w~n", [T]), writeln(B-S-N-P-L).
"""


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with Solver(workers=1) as s:
        yield s


@pytest.fixture(scope="module")
def report(solver: Solver) -> dict[str, Any]:
    return run_analyser(PROGRAM, "full", solver)


def kinds(nodes: Any) -> list[str]:
    return [str(n.get("k")) for n, _ in walk(nodes)]


def test_answer_goal_is_the_goal_that_printed_the_answer_line(report: dict[str, Any]) -> None:
    runs = goal_runs(report)
    # SWI-Prolog's order: the plain directive first, then initialization/1.
    assert [r.kind for r in runs] == ["directive", "initialization"]
    assert runs[0].output == "debug line\n"
    found = answer_goal(SARA, runs)
    assert found is not None
    run, answer = found
    assert run.kind == "initialization" and run.line == 12 and answer.value == 100.0
    assert run.status == "true"


def test_proof_records_clauses_facts_values_and_control(report: dict[str, Any]) -> None:
    found = answer_goal(SARA, goal_runs(report))
    assert found is not None
    proof = found[0].proof
    main = proof[0]
    assert main["k"] == "rule" and main["l"] == 13 and main["g"] == "main"
    tax = main["c"][0]
    assert tax["g"] == "tax(alice,100.0)" and tax["l"] == 5
    body = tax["c"]
    assert body[0] == {"k": "fact", "l": 1, "g": "income(alice,1000)", "v": ["alice", 1000]}
    assert body[1]["k"] == "naf" and body[1]["g"] == "exempt(alice)"
    arith = body[3]
    assert arith["k"] == "arith" and arith["in"] == [1000, 0.1] and arith["out"] == 100.0
    nodes = [n for n, _ in walk(proof)]
    ite = next(n for n in nodes if n["k"] == "ite")
    assert ite["branch"] == "else"  # 1000 =< 500 failed: the failed comparison is kept
    assert ite["c"][0]["k"] == "cmp" and ite["c"][0]["ok"] is False
    assert ite["c"][0]["args"] == [1000, 500]
    findall = next(n for n in nodes if n["k"] == "findall")
    assert findall["n"] == 1 and findall["c"][0]["k"] == "solution"
    agg = next(n for n in nodes if n["k"] == "aggregate_all")
    assert agg["n"] == 2 and agg["out"] == 2
    # the cut committed first_big/1 to alice; include/3 calls back into a closure: opaque
    assert any(n["k"] == "rule" and n["g"] == "first_big(alice)" for n in nodes)
    assert any(n["k"] == "opaque" and "include" in n["g"] for n in nodes)
    text = "\n".join(render(proof))
    assert "tax(alice,100.0)    [rule, line 5]" in text
    assert "100.0 is 1000*0.1    [= 100.0]" in text


def test_undefined_call_and_halt_and_bounds(solver: Solver) -> None:
    programs = [
        # the answer's path calls a predicate nobody wrote
        "total(T) :- fee(F), T is F + 1.\n:- total(T), format('Total cost: ~w~n', [T]).\n",
        # halt ends the program: the goal after it is never run
        ":- format('Total cost: 5~n'), halt.\n:- format('Total cost: 6~n').\n",
        # unbounded recursion: the depth bound turns the rest into an opaque call
        "down(0, done) :- !.\ndown(N, R) :- M is N - 1, down(M, R).\n"
        ":- down(400, R), format('Total cost: ~w~n', [1]), writeln(R).\n",
    ]
    undefined, halted, deep = analyse_many(programs, "full", solver)
    (run,) = goal_runs(undefined)
    assert run.status == "error" and run.undefined == "fee/1"
    runs = goal_runs(halted)
    assert [r.status for r in runs] == ["halt"]
    found = answer_goal(AIRLINE, runs)
    assert found is not None and found[1].value == 5.0
    (run,) = goal_runs(deep)
    assert run.status == "true"
    assert "opaque" in kinds(run.proof)


@pytest.mark.slow
def test_a_program_that_loops_is_bounded(solver: Solver) -> None:
    looping = "loop :- loop.\n:- loop.\n:- format('Total cost: 1~n').\n"
    report = run_analyser(looping, "full", solver)
    first, second = goal_runs(report)
    assert first.status in ("limit", "true")  # depth bound -> opaque direct call, or timed out
    assert second.output == "Total cost: 1\n"
