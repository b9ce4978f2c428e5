"""Sandboxed SWI-Prolog execution.

    with Solver() as solver:
        execution = solver.run(program)          # blocking, thread-safe
        execution = await solver.arun(program)   # from asyncio
        executions = solver.map(programs)        # many, in parallel across the cores

Each program runs in a fresh ``swipl`` process inside a warm sandboxed worker (see
``pool`` and ``supervisor``); ``Execution`` says what happened.
"""

from .execution import KILLED, STATUSES, Execution, Limits, SandboxKind, Status
from .pool import Solver, run_program

__all__ = [
    "KILLED",
    "STATUSES",
    "Execution",
    "Limits",
    "SandboxKind",
    "Solver",
    "Status",
    "run_program",
]
