"""Sandboxed SWI-Prolog execution.

    with Solver() as solver:
        execution = solver.run(program)          # blocking, thread-safe
        execution = await solver.arun(program)   # from asyncio
        executions = solver.map(programs)        # many, in parallel across the cores

Each program runs inside a warm sandboxed worker, as a child forked from a booted
SWI-Prolog there (``executor="fork"``, the default) or as a fresh ``swipl`` process
(``executor="fresh"``), with the same results (see ``pool`` and ``supervisor``);
``Execution`` says what happened.
"""

from .execution import (
    EXECUTORS,
    KILLED,
    STATUSES,
    Execution,
    ExecutorKind,
    Limits,
    SandboxKind,
    Status,
)
from .pool import Solver, run_program

__all__ = [
    "EXECUTORS",
    "KILLED",
    "STATUSES",
    "Execution",
    "ExecutorKind",
    "Limits",
    "SandboxKind",
    "Solver",
    "Status",
    "run_program",
]
