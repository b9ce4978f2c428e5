"""What running one program produced: ``Execution``, its closed set of statuses, and the
``Limits`` it ran under."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal[
    "ok",  # ran to the end, exit code 0, printed something, no error messages
    "syntax_error",  # the program did not load cleanly
    "runtime_error",  # an error or a failed directive while running, or a non-zero exit
    "timeout",  # killed at the wall-clock limit
    "resource_limit",  # killed at the CPU, memory, file-size, output or process limit
    "no_output",  # ran cleanly but printed nothing on stdout
    "crashed",  # died of a signal we did not send, or the sandbox itself failed
]
STATUSES: tuple[Status, ...] = (
    "ok",
    "syntax_error",
    "runtime_error",
    "timeout",
    "resource_limit",
    "no_output",
    "crashed",
)
# Statuses after which the program was stopped by force: its stdout is not an answer.
KILLED: frozenset[Status] = frozenset({"timeout", "resource_limit", "crashed"})

SandboxKind = Literal["bwrap", "rlimits", "upstream"]
"""``bwrap``: namespaces (no network, read-only system, private /tmp and PIDs) plus the
process limits; ``rlimits``: the process limits, private working directory and scrubbed
environment only (bubblewrap missing or not working here); ``upstream``: not run here,
the output upstream's own ``run_swipl.sh`` recorded (``import-upstream``)."""

ExecutorKind = Literal["fork", "fresh"]
EXECUTORS: tuple[ExecutorKind, ...] = ("fork", "fresh")
"""``fork`` (the default): each program is a child forked from a booted SWI-Prolog in the
worker's sandbox (programs run in fresh processes where that cannot start); ``fresh``:
each program is a new ``swipl`` process.  Results are the same; ``fork`` skips
SWI-Prolog's start-up for every program."""


Toplevel = Literal["halt", "eof"]
TOPLEVELS: tuple[Toplevel, ...] = ("halt", "eof")
"""What a program's process does once its file is loaded (and its initialization goals
ran): ``halt``, the harness's ``swipl -q -f program.pl -t halt``; ``eof``, SWI-Prolog's
interactive toplevel reading end-of-file from stdin (/dev/null) and halting, as
``swipl -q -f FILE < /dev/null`` (upstream's ``run_swipl.sh``) does.  The only difference
a program can see: the toplevel ends the output with a line break (two when the last
line is unterminated), unless the program halted first (``initialization(main, main)``,
``halt/0``).  ``eof`` also stops a program at the wall clock as upstream's ``timeout
--signal=TERM --kill-after=2s`` does (``UPSTREAM_KILL_AFTER_S``).  The paper reader
depends on both (``reading.paper``)."""

UPSTREAM_KILL_AFTER_S = 2.0
"""``run_swipl.sh``'s ``--kill-after``: how long a program of an ``eof`` job may run on
after its SIGTERM at the wall clock before it is killed."""
TIMEOUT_TERM_IGNORED = "timeout_term_ignored"
"""The ``limit`` of a timed-out ``eof`` job that outlived its SIGTERM and was killed (for
upstream: exit status 137, no ``Result: timeout`` line; a timed-out program that ended
on its SIGTERM has the limit ``timeout``: status 124 and the line)."""


UPSTREAM_STACK_MB = 1024
"""The Prolog stack of an ``eof`` job: SWI-Prolog's own default (1 GiB), which upstream's
plain ``swipl -q -f FILE`` runs with (the harness's 512 MB would stop programs upstream
runs to the end).  ``memory_mb`` still bounds the process's address space."""
UPSTREAM_STDOUT_BYTES = 16 * 1024 * 1024
"""The stdout cap of an ``eof`` job (upstream has none): its stdout goes to a file, and
a program printing past 16 MiB, far above any honest trace, is stopped as an
``output`` flood, so its sample abstains where upstream would read on."""
STDERR_TAIL_BYTES = 64 * 1024
"""An ``eof`` job's stderr (upstream discards it): never a limit; the last 64 KiB are
kept for diagnostics."""


DEFAULT_TIMEOUT_S = 20.0
"""The wall clock of one program, paper B.1's 20 s: the default of every command."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float = DEFAULT_TIMEOUT_S
    """Wall clock (paper B.1 uses 20 s).  The whole process tree is killed at the limit."""
    cpu_s: int = 30
    memory_mb: int = 2048
    """Address-space limit of each process."""
    stack_mb: int = 512
    """SWI-Prolog's combined stack limit (a program raising it still meets ``memory_mb``).
    An ``eof`` job has at least ``UPSTREAM_STACK_MB``."""
    file_size_mb: int = 16
    output_bytes: int = 64 * 1024
    """stdout and stderr are each cut at this many bytes; a flood is a resource_limit.
    An answer is one line: 64 KiB leaves room for any honest trace while keeping every
    record of a run small (records keep the output for auditing).  An ``eof`` job (the
    paper reader's) has ``UPSTREAM_STDOUT_BYTES`` and ``STDERR_TAIL_BYTES`` instead."""
    processes: int = 32
    """Processes the program may have at once (RLIMIT_NPROC of its own uid)."""


@dataclass(frozen=True)
class Execution:
    status: Status
    stdout: str
    stderr: str
    exit_code: int | None
    """None when the process was killed by a signal."""
    wall_s: float
    warnings: int
    """Lines of SWI-Prolog warnings on stderr."""
    sandbox: SandboxKind
    limit: str | None = None
    """Which limit stopped the program (timeout, cpu, memory, file_size, output, ...)."""
    signal: int | None = None

    @property
    def killed(self) -> bool:
        return self.status in KILLED

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> Execution:
        return cls(**obj)
