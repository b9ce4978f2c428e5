"""One sandbox pool per process, started on first use, safe across ``fork``.

Trainers call the reward from many processes: verl from Ray workers, TRL from the
training process (and its dataloader forks), OpenRLHF from the reward server.  Each
process gets its own ``Solver`` the first time it scores something.  A child made by
``fork`` inherits the parent's pool object but not its worker threads or the pipes'
ownership, so the child forgets the inherited pool (without stopping it: its workers
belong to the parent) and starts its own on first use.  The uid each worker runs
programs as is claimed from the machine-wide lock folder by the solver itself, so pools
of different processes never share a uid.

The pool is closed when the process exits (``atexit``); a process killed outright still
leaves nothing behind, because each sandbox dies with its parent (bubblewrap's
``--die-with-parent``) and each supervisor stops at the end of its input.
"""

from __future__ import annotations

import atexit
import os
import threading

from ..solver import Solver

WORKERS_ENV = "DEONTICBENCH_REWARD_WORKERS"
"""How many sandbox workers each process's pool has (default: the machine's cores)."""

_lock = threading.Lock()
_solver: Solver | None = None
_owner = os.getpid()
_atexit_registered = False


def process_solver() -> Solver:
    """This process's pool, started on first use."""
    global _solver, _atexit_registered
    if _owner != os.getpid():  # forked without the at-fork hook (it always runs on CPython)
        _forget_inherited()
    with _lock:
        if _solver is None:
            _solver = Solver(workers=_workers())
            if not _atexit_registered:
                atexit.register(close_process_solver)
                _atexit_registered = True
        return _solver


def close_process_solver() -> None:
    """Stop this process's pool (a later call to ``process_solver`` starts a new one)."""
    global _solver
    with _lock:
        solver, _solver = _solver, None
    if solver is not None and _owner == os.getpid():
        solver.close()


def _workers() -> int | None:
    raw = os.environ.get(WORKERS_ENV, "").strip()
    if not raw:
        return None
    try:
        return max(1, int(raw))
    except ValueError:
        return None


def _forget_inherited() -> None:
    # In a fork child: the pool's workers are the parent's processes, and the lock may
    # have been held by a parent thread at the moment of the fork.  Drop both.
    global _lock, _solver, _owner
    _lock = threading.Lock()
    _solver = None
    _owner = os.getpid()


os.register_at_fork(after_in_child=_forget_inherited)
