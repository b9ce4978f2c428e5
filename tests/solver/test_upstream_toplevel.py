"""``toplevel="eof"``: a program runs as upstream's ``run_swipl.sh`` runs it.

``swipl -q -f FILE < /dev/null``: after loading, the interactive toplevel reads
end-of-file and ends the output with a line break (two after an unterminated line),
unless the program halted first; at the time limit ``timeout --signal=TERM
--kill-after=2s``: a program that ends on SIGTERM is a plain timeout, one that outlives
it (SWI-Prolog defers the signal while it loads the file) is killed and says so.  The
expected bytes were measured with ``swipl`` and ``timeout`` themselves (SWI-Prolog 9).
"""

from __future__ import annotations

import shutil

import pytest

from deonticbench.solver import EXECUTORS, Limits, Solver
from deonticbench.solver.execution import TIMEOUT_TERM_IGNORED

pytestmark = pytest.mark.skipif(shutil.which("swipl") is None, reason="needs swipl")

OUTPUTS = [
    # (program, stdout with -t halt, stdout through the toplevel at end-of-file)
    (':- format("Tax result: ~w~n", [12]).\n', "Tax result: 12\n", "Tax result: 12\n\n"),
    (
        'main :- format("Tax result: ~w", [12]).\n:- initialization(main).\n',
        "Tax result: 12",
        "Tax result: 12\n\n",
    ),
    ("main :- write(x), halt.\n:- initialization(main).\n", "x", "x"),
    ("main :- write(y).\n:- initialization(main, main).\n", "y", "y"),
    ("x :- .\n", "", "\n"),
]


@pytest.mark.parametrize("executor", EXECUTORS)
def test_the_toplevel_at_end_of_file_ends_the_output_as_upstreams_run_does(executor: str) -> None:
    with Solver(workers=1, executor=executor) as solver:  # type: ignore[arg-type]
        for program, halted, at_eof in OUTPUTS:
            assert solver.run(program).stdout == halted
            assert solver.run(program, toplevel="eof").stdout == at_eof


LOOP_AT_LOAD = "loop :- loop.\nmain :- format('Tax result: 5~n'), loop.\n:- initialization(main).\n"
LOOP_IN_MAIN = (
    "loop :- loop.\nmain :- format('Tax result: 5~n'), loop.\n:- initialization(main, main).\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_program_that_outlives_its_sigterm_is_told_apart(executor: str) -> None:
    with Solver(workers=2, executor=executor, limits=Limits(timeout_s=1)) as solver:  # type: ignore[arg-type]
        at_load, in_main = solver.map([LOOP_AT_LOAD, LOOP_IN_MAIN], toplevel="eof")
        plain = solver.run(LOOP_AT_LOAD)
    assert (at_load.status, at_load.limit) == ("timeout", TIMEOUT_TERM_IGNORED)
    assert at_load.wall_s >= 2.5  # the 2 s after SIGTERM, as timeout --kill-after=2s
    assert (in_main.status, in_main.limit) == ("timeout", "timeout")
    assert at_load.stdout == in_main.stdout == "Tax result: 5\n"
    assert (plain.status, plain.limit) == ("timeout", "timeout")  # -t halt: killed at once


_FLOODS = (
    # ~200 KB on stdout, then the answer line; ~200 KB on stderr; the stack limit's size.
    "main :-\n"
    "    forall(between(1, 5000, I), format('trace ~d: checking the rule here~n', [I])),\n"
    "    forall(between(1, 5000, I), format(user_error, 'note ~d: a warning here~n', [I])),\n"
    "    current_prolog_flag(stack_limit, S), format('stack ~w~n', [S]),\n"
    "    format('Tax result: 7~n').\n"
    ":- initialization(main).\n"
)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_output_and_stack_limits_are_upstreams_at_eof_and_the_harness_own_otherwise(
    executor: str,
) -> None:
    """At end-of-file (the paper reader's run) stdout is read far past the
    harness's 64 KiB, stderr is a bounded tail and never a limit, and the stack is
    SWI-Prolog's default 1 GiB; the harness's run keeps its documented limits."""
    with Solver(workers=1, executor=executor) as solver:  # type: ignore[arg-type]
        paper = solver.run(_FLOODS, toplevel="eof")
        harness = solver.run(_FLOODS)
    assert paper.limit is None, paper.limit
    assert len(paper.stdout) > 150_000
    assert paper.stdout.endswith(f"stack {1024 * 1024 * 1024}\nTax result: 7\n\n")
    assert len(paper.stderr) == 64 * 1024 and paper.stderr.endswith("note 5000: a warning here\n")
    assert harness.status == "resource_limit" and harness.limit == "output"
    assert len(harness.stdout) == 64 * 1024 and "Tax result" not in harness.stdout


@pytest.mark.slow
@pytest.mark.parametrize("executor", EXECUTORS)
def test_stdout_past_the_eof_cap_is_a_flood(executor: str) -> None:
    flood = (
        ":- initialization(main).\nmain :- repeat, write(xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx), fail.\n"
    )
    with Solver(workers=1, executor=executor) as solver:  # type: ignore[arg-type]
        execution = solver.run(flood, Limits(timeout_s=20), toplevel="eof")
    assert execution.limit == "output", execution
    assert len(execution.stdout.encode()) == 16 * 1024 * 1024


@pytest.mark.slow
@pytest.mark.parametrize("executor", EXECUTORS)
def test_only_the_wall_clock_ends_an_eof_program_whatever_its_cpu_limit(executor: str) -> None:
    """A CPU limit below the wall clock would end a looping program first on an idle
    machine and last on a busy one: an ``eof`` job is ended by its wall clock, SIGTERM
    and grace alone, so the reading cannot depend on the machine's load."""
    limits = Limits(timeout_s=3, cpu_s=1)
    with Solver(workers=1, executor=executor, limits=limits) as solver:  # type: ignore[arg-type]
        at_load = solver.run(LOOP_AT_LOAD, toplevel="eof")
        # A wall clock far above the CPU limit, so that only the CPU limit can end it.
        halted = solver.run(LOOP_IN_MAIN, Limits(timeout_s=60, cpu_s=1))
    assert (at_load.status, at_load.limit) == ("timeout", TIMEOUT_TERM_IGNORED)
    assert at_load.stdout == "Tax result: 5\n"
    # The harness's own (-t halt) jobs keep the caller's CPU limit (SWI-Prolog takes the
    # soft limit's SIGXCPU; the hard one, a second later, kills it).
    assert (halted.status, halted.limit) == ("resource_limit", "cpu_or_memory")
