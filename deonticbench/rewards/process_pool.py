"""One sandbox pool per process, started on first use, safe across ``fork``.

Trainers call the reward from many processes: verl from Ray workers, TRL from the
training process (and its dataloader forks), OpenRLHF from the reward server.  Each
process gets its own ``Solver`` the first time it scores something.  A child made by
``fork`` inherits the parent's pool object but not its threads, so the child forgets
the inherited pool (without stopping it: its workers belong to the parent) and starts
its own on first use.  The uid each worker runs programs as is claimed from the
machine-wide lock folder by the solver itself, so pools of different processes never
share a uid.

Programs are handed to the pool by this module's own long-lived threads, never by the
caller's: a sandbox is started by the thread that first needs a worker, and bubblewrap's
``--die-with-parent`` (the kernel's parent-death signal) fires when that *thread* ends.
A reward called from short-lived threads (a trainer's thread pool, ``asyncio.to_thread``)
would otherwise see its workers killed between calls.

The pool is closed when the process exits (``atexit``); a process killed outright still
leaves nothing behind, because each sandbox dies with its parent and each supervisor
stops at the end of its input.
"""

from __future__ import annotations

import atexit
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from ..solver import Execution, Limits, Solver

T = TypeVar("T")

WORKERS_ENV = "DEONTICBENCH_REWARD_WORKERS"
"""How many sandbox workers each process's pool has (default: ``WORKERS_PER_CORE`` per
core)."""
WORKERS_PER_CORE = 2
"""A policy's broken programs spend much of their time idle: SWI-Prolog 9.0.4 sleeps
0.1 s before exiting after a directive met an unknown procedure (13 ms of CPU in all), so
two workers per core overlap that sleep.  On a GRPO step's batch (benchmarks/rewards.py)
this doubles throughput on 2 cores: 130 -> 201 completions/s in paper mode."""

_lock = threading.Lock()
_solver: Solver | None = None
_runners: ThreadPoolExecutor | None = None
_owner = os.getpid()
_atexit_registered = False
# Threads for pools a caller brings (``score_completion(..., solver=...)``), dropped with the pool.
_foreign: weakref.WeakKeyDictionary[Solver, ThreadPoolExecutor] = weakref.WeakKeyDictionary()


def process_solver() -> Solver:
    """This process's pool, started on first use."""
    return _ensure()[0]


def run_in_pool(
    program: str, limits: Limits | None = None, solver: Solver | None = None
) -> Execution:
    """Run one program on this process's pool (or on ``solver``), from one of the pool's
    own long-lived threads."""
    if solver is None:
        pool, runners = _ensure()
    else:
        pool, runners = solver, _runners_for(solver)
    return runners.submit(pool.run, program, limits).result()


def call_in_pool(job: Callable[[Solver], T], solver: Solver | None = None) -> T:
    """Run ``job(pool)`` on one of the pool's own threads (for work that drives the
    pool itself, such as the static analysis)."""
    if solver is None:
        pool, runners = _ensure()
    else:
        pool, runners = solver, _runners_for(solver)
    return runners.submit(job, pool).result()


def _runners_for(solver: Solver) -> ThreadPoolExecutor:
    with _lock:
        runners = _foreign.get(solver)
        if runners is None:
            runners = ThreadPoolExecutor(solver.size, thread_name_prefix="deonticbench-reward")
            _foreign[solver] = runners
        return runners


def _ensure() -> tuple[Solver, ThreadPoolExecutor]:
    global _solver, _runners, _atexit_registered
    if _owner != os.getpid():  # forked without the at-fork hook (it always runs on CPython)
        _forget_inherited()
    with _lock:
        if _solver is None or _runners is None:
            _solver = Solver(workers=_workers())
            _runners = ThreadPoolExecutor(_solver.size, thread_name_prefix="deonticbench-reward")
            if not _atexit_registered:
                atexit.register(close_process_solver)
                _atexit_registered = True
        return _solver, _runners


def close_process_solver() -> None:
    """Stop this process's pool (a later call to ``process_solver`` starts a new one)."""
    global _solver, _runners
    with _lock:
        solver, _solver = _solver, None
        runners, _runners = _runners, None
    if _owner != os.getpid():
        return
    if runners is not None:
        runners.shutdown(wait=True)
    if solver is not None:
        solver.close()


def _workers() -> int:
    raw = os.environ.get(WORKERS_ENV, "").strip()
    try:
        return max(1, int(raw))
    except ValueError:  # unset or not a number
        return WORKERS_PER_CORE * (os.cpu_count() or 1)


def _forget_inherited() -> None:
    # In a fork child: the pool's workers are the parent's processes, its threads do not
    # exist here, and the lock may have been held by a parent thread at the fork.
    global _lock, _solver, _runners, _owner, _foreign
    _lock = threading.Lock()
    _solver = None
    _runners = None
    _foreign = weakref.WeakKeyDictionary()
    _owner = os.getpid()


os.register_at_fork(after_in_child=_forget_inherited)
