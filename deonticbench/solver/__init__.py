"""Sandboxed execution: SWI-Prolog programs, the agents' shell, and the one sandbox policy.

    with Solver() as solver:
        execution = solver.run(program)          # blocking, thread-safe
        execution = await solver.arun(program)   # from asyncio
        executions = solver.map(programs)        # many, in parallel across the cores

Each program runs inside a warm sandboxed worker, as a child forked from a booted
SWI-Prolog there (``executor="fork"``, the default) or as a fresh ``swipl`` process
(``executor="fresh"``), with the same results (``pool`` and ``supervisor``, which
imports nothing of the package because it runs as a bare script inside the sandbox);
``Execution`` says what happened and ``classify`` reads it from a job's report.
``run_shell`` runs one shell command of an agent over its workspace (``shell``).  Every
bubblewrap command line, its binds, the environment and the job's uid come from one
policy (``sandbox``), which Harbor's ``BwrapEnvironment`` uses too.  Hands ``Execution``
to reading and the agents.
"""

from .classify import classify
from .execution import (
    DEFAULT_TIMEOUT_S,
    EXECUTORS,
    TIMEOUT_TERM_IGNORED,
    Execution,
    ExecutorKind,
    Limits,
    SandboxKind,
    Toplevel,
)
from .pool import Solver, build_job, run_program
from .sandbox import (
    SANDBOX_PROLOG,
    SYSTEM_DIRS,
    Bind,
    claim_uid,
    drop_privileges,
    host_env,
    job_uid,
    task_policy,
)
from .shell import ShellLimits, run_shell

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "EXECUTORS",
    "SANDBOX_PROLOG",
    "SYSTEM_DIRS",
    "TIMEOUT_TERM_IGNORED",
    "Bind",
    "Execution",
    "ExecutorKind",
    "Limits",
    "SandboxKind",
    "ShellLimits",
    "Solver",
    "Toplevel",
    "build_job",
    "claim_uid",
    "classify",
    "drop_privileges",
    "host_env",
    "job_uid",
    "run_program",
    "run_shell",
    "task_policy",
]
