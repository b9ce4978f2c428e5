"""The solver pool and the status classification."""

from __future__ import annotations

import asyncio
import signal
import threading

import pytest

from deonticbench.solver import Execution, Limits, Solver
from deonticbench.solver.classify import classify
from deonticbench.solver.execution import STATUSES
from deonticbench.solver.pool import bwrap_works


def report(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {
        "stdout": "",
        "stderr": "",
        "exit_code": 0,
        "signal": None,
        "limit": None,
        "wall_s": 0.1,
    }
    base.update(fields)
    return base


@pytest.mark.parametrize(
    ("fields", "status", "limit"),
    [
        ({"stdout": "x\n"}, "ok", None),
        ({}, "no_output", None),
        ({"limit": "timeout", "stdout": "Total cost: 5\n"}, "timeout", "timeout"),
        ({"limit": "output"}, "resource_limit", "output"),
        ({"signal": int(signal.SIGXCPU), "exit_code": None}, "resource_limit", "cpu"),
        ({"signal": int(signal.SIGXFSZ), "exit_code": None}, "resource_limit", "file_size"),
        ({"signal": int(signal.SIGSEGV), "exit_code": None}, "crashed", None),
        ({"stderr": "ERROR: ... Stack limit (1.0Gb) exceeded\n"}, "resource_limit", "memory"),
        (
            {"stderr": "ERROR: f.pl:1:4: Syntax error: Operator expected\n", "stdout": "a\n"},
            "syntax_error",
            None,
        ),
        (
            {"stderr": "Warning: f.pl:3:\nWarning:    Goal (directive) failed: user:foo\n"},
            "runtime_error",
            None,
        ),
        ({"exit_code": 3, "stdout": "x\n"}, "runtime_error", None),
        ({"error": "the sandbox worker died"}, "crashed", None),
    ],
)
def test_classification(fields: dict[str, object], status: str, limit: str | None) -> None:
    execution = classify(report(**fields), "bwrap")
    assert execution.status == status
    assert execution.status in STATUSES
    assert execution.limit == limit


def test_warnings_are_counted_per_message() -> None:
    stderr = (
        "Warning: /p.pl:1:\nWarning:    Singleton variables: [X]\n"
        "Warning: /p.pl:4:\nWarning:    Clauses of foo/1 are not together\n"
    )
    assert classify(report(stdout="1\n", stderr=stderr), "bwrap").warnings == 2


def test_pool_runs_in_parallel_and_keeps_order() -> None:
    programs = [f":- X is {i} * 2, writeln(X).\n" for i in range(40)]
    with Solver(workers=2) as solver:
        executions = solver.map(programs)
    assert [e.stdout for e in executions] == [f"{i * 2}\n" for i in range(40)]
    assert {e.status for e in executions} == {"ok"}


def test_async_interface() -> None:
    async def go() -> list[str]:
        with Solver(workers=2) as solver:
            results = await asyncio.gather(*(solver.arun(f":- writeln({i}).\n") for i in range(6)))
        return [r.stdout for r in results]

    assert asyncio.run(go()) == [f"{i}\n" for i in range(6)]


def test_sandbox_kind_is_recorded() -> None:
    expected = "bwrap" if bwrap_works() else "rlimits"
    with Solver(workers=1) as solver:
        assert solver.run(":- writeln(a).\n").sandbox == expected
    with Solver(workers=1, sandbox="rlimits") as solver:
        assert solver.run(":- writeln(a).\n").sandbox == "rlimits"


def test_per_call_limits_override_the_pool() -> None:
    with Solver(workers=1, limits=Limits(timeout_s=30)) as solver:
        execution = solver.run("l :- l.\n:- l.\n", Limits(timeout_s=0.5))
    assert execution.status == "timeout" and execution.wall_s < 3


def test_worker_restarts_after_its_supervisor_dies() -> None:
    with Solver(workers=1) as solver:
        solver.run(":- writeln(warm).\n")
        worker = solver._all[0]
        assert worker.proc is not None
        worker.proc.kill()
        worker.proc.wait()
        assert solver.run(":- writeln(again).\n").stdout == "again\n"


def test_concurrent_pools_do_not_kill_each_others_programs() -> None:
    """Two pools side by side (as when two runs share a machine): each worker's uid is its
    own, so one supervisor's clean-up never reaches the other pool's programs."""
    from concurrent.futures import ThreadPoolExecutor

    programs = [f":- X is {i} + 1, writeln(X).\n" for i in range(60)]
    kinds = ["rlimits", "bwrap" if bwrap_works() else "rlimits"]
    with Solver(workers=2, sandbox=kinds[0]) as one, Solver(workers=2, sandbox=kinds[1]) as two:  # type: ignore[arg-type]
        with ThreadPoolExecutor(2) as pool:
            first, second = pool.map(lambda s: s.map(programs), [one, two])
        uids = {w.uid for w in one._all + two._all}
    for executions in (first, second):
        assert [e.status for e in executions] == ["ok"] * len(programs)
        assert [e.stdout for e in executions] == [f"{i + 1}\n" for i in range(60)]
    import os

    if os.geteuid() == 0:
        assert len(uids) == 4


def test_workers_outlive_the_thread_that_started_them() -> None:
    """bubblewrap's --die-with-parent follows the starting *thread*: a worker started by
    a thread that has ended (a finished map, warm_up) must still be the same process."""
    import threading
    import time

    with Solver(workers=2) as solver:
        solver.warm_up()
        starter = threading.Thread(target=lambda: solver.run(":- writeln(a).\n"))
        starter.start()
        starter.join()
        time.sleep(0.3)
        pids = {w.slot: w.proc.pid for w in solver._all if w.proc is not None}
        assert len(pids) == 2
        assert [e.stdout for e in solver.map([":- writeln(b).\n"] * 4)] == ["b\n"] * 4
        assert {w.slot: w.proc.pid for w in solver._all if w.proc is not None} == pids


def test_a_forked_child_starts_its_own_workers() -> None:
    """A trainer forks worker processes after the parent has used a pool: the child must
    start sandboxes of its own (the parent's launcher thread does not exist there)."""
    import multiprocessing

    with Solver(workers=1) as parent:
        assert parent.run(":- format('Total cost: 1~n').").stdout == "Total cost: 1\n"
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_run_in_fresh_solver, args=(queue,))
        child.start()
        stdout = queue.get(timeout=60)
        child.join(60)
        assert child.exitcode == 0 and stdout == "Total cost: 2\n"
        assert parent.run(":- format('Total cost: 3~n').").stdout == "Total cost: 3\n"


def _run_in_fresh_solver(queue: object) -> None:
    with Solver(workers=1) as solver:
        queue.put(solver.run(":- format('Total cost: 2~n').").stdout)  # type: ignore[attr-defined]


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot run here")
def test_an_auto_pool_reaches_its_first_program_without_the_bubblewrap_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whether bubblewrap works is learnt from the first worker that starts in it: the
    separate probe (a whole sandbox start) is not on the way to the first program, and
    ``sandbox`` answers from that worker.  A probe that never returns shows it."""
    from deonticbench.solver import pool

    release = threading.Event()
    probed: list[str] = []

    def stuck_probe() -> bool:
        probed.append("probe")
        release.wait(timeout=60)
        return True

    # What this process learnt from earlier pools is forgotten: this pool must learn it.
    monkeypatch.setattr(pool, "_BWRAP_WORKS", None, raising=False)
    monkeypatch.setattr(pool, "bwrap_works", stuck_probe)
    monkeypatch.setattr(pool, "_probe_bwrap", stuck_probe, raising=False)
    results: list[object] = []

    def use_a_pool() -> None:
        with Solver(workers=2) as solver:
            solver.warm_up()
            results.append(solver.sandbox)
            results.append(solver.run(":- writeln(a).\n"))

    user = threading.Thread(target=use_a_pool, daemon=True)
    user.start()
    user.join(timeout=30)
    finished_while_the_probe_was_stuck = not user.is_alive()
    release.set()
    user.join()
    assert finished_while_the_probe_was_stuck and not probed
    assert results[0] == "bwrap"
    execution = results[1]
    assert isinstance(execution, Execution)
    assert (execution.sandbox, execution.stdout) == ("bwrap", "a\n")


def test_an_auto_pool_where_bubblewrap_cannot_start_falls_back_with_the_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the first worker cannot start in bubblewrap, the probe decides: bubblewrap
    does not work here (a real bwrap, given an option it refuses), so the pool runs with
    process limits and says so, as it always has."""
    from deonticbench.solver import pool

    real_argv = pool._bwrap_argv
    monkeypatch.setattr(pool, "_BWRAP_WORKS", None, raising=False)
    monkeypatch.setattr(pool, "_bwrap_argv", lambda workdir: [*real_argv(workdir), "--no-such"])
    pool._warn_once.cache_clear()
    warned = pytest.warns(RuntimeWarning, match="bubblewrap is unavailable")
    with warned, Solver(workers=1) as solver:
        execution = solver.run(":- writeln(a).\n")
        assert solver.sandbox == "rlimits"
    assert (execution.sandbox, execution.stdout) == ("rlimits", "a\n")
    assert pool._BWRAP_WORKS is False
