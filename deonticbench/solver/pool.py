"""A bounded pool of warm sandboxed workers.

Each worker is one long-lived supervisor process (the ``supervisor`` package), started inside
bubblewrap when bubblewrap works here (the sandbox is ``sandbox.worker_policy``: the one
policy every sandbox of the harness is built from), that runs one program at a time.  Starting the
sandbox costs ~10 ms and ``swipl`` ~15 ms: with the ``fork`` executor (the default) both
are paid once per worker, because the supervisor keeps a booted SWI-Prolog (the fork
server, ``prolog/fork_server.pl``) that forks one child per program; with ``fresh`` each
program gets a new ``swipl`` process.  Both give the same results.  Isolation between
consecutive programs of a worker is the supervisor's job (fresh directory, own uid,
everything killed and removed after each program).

The pool is thread-safe: ``run`` blocks until a worker is free; ``map`` and ``arun``
spread work across all workers.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import math
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from queue import Queue
from typing import IO, Any, Literal

from .._paths import PROLOG
from ..errors import SandboxError
from .classify import classify
from .execution import (
    EXECUTORS,
    STDERR_TAIL_BYTES,
    UPSTREAM_KILL_AFTER_S,
    UPSTREAM_STACK_MB,
    UPSTREAM_STDOUT_BYTES,
    Execution,
    ExecutorKind,
    Limits,
    SandboxKind,
    Toplevel,
)
from .sandbox import SANDBOX_PROLOG, claim_uid, host_env, worker_policy

logger = logging.getLogger(__name__)

SandboxChoice = Literal["auto", "bwrap", "rlimits"]

_SUPERVISOR = Path(__file__).with_name("supervisor")
"""The supervisor's package: standard-library modules only, imported by a bare
interpreter with this folder's parent on its path."""


@cache
def supervisor_command() -> list[str]:
    """How a sandbox starts the supervisor: its package imported by a bare interpreter,
    so that its compiled bytecode is read from ``__pycache__`` (compiled here once if it
    is not there) instead of compiling the sources at every worker's start."""
    for module in sorted(_SUPERVISOR.glob("*.py")):
        if not os.path.exists(importlib.util.cache_from_source(str(module))):
            import py_compile  # rarely needed: installs and earlier runs leave the bytecode

            with contextlib.suppress(OSError, py_compile.PyCompileError):
                py_compile.compile(str(module), doraise=True)
    folder = str(_SUPERVISOR.parent)
    load = f"import sys; sys.path.insert(0, {folder!r}); import supervisor; supervisor.main()"
    return [_PYTHON, "-I", "-S", "-c", load]


_FORK_SERVER = PROLOG / "fork_server.pl"
# The interpreter itself, not a virtualenv's symlink to it: only the base installation
# is visible inside the sandbox.
_PYTHON = os.path.realpath(sys.executable)

# How much longer than a program's own timeout we wait for its supervisor's answer
# before declaring the worker dead and restarting it.
_WATCHDOG_GRACE_S = 10.0


def _bwrap_argv(workdir: str) -> list[str]:
    """A worker's sandbox (``sandbox.worker_policy``), up to the supervisor's command."""
    return worker_policy(workdir).argv()


# Whether bubblewrap works here, once known: learnt from a probe, or from a worker that
# started in it (then no probe is ever run).
_BWRAP_WORKS: bool | None = None
_BWRAP_LOCK = threading.Lock()


def bwrap_works() -> bool:
    """Whether bubblewrap can start a sandbox here (it needs namespaces): the first call
    starts one (unless a worker already has), later calls remember the answer."""
    global _BWRAP_WORKS
    with _BWRAP_LOCK:
        if _BWRAP_WORKS is None:
            _BWRAP_WORKS = _probe_bwrap()
        return _BWRAP_WORKS


def _probe_bwrap() -> bool:
    if shutil.which("bwrap") is None:
        return False
    try:
        probe = subprocess.run(
            [*_bwrap_argv("/tmp/probe"), *supervisor_command(), "--check"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.info("bubblewrap probe could not run: %s", exc)
        return False
    if probe.returncode != 0:
        said = probe.stderr.decode("utf-8", "replace").strip()
        logger.info("bubblewrap probe failed (exit %d): %s", probe.returncode, said[-300:])
    return probe.returncode == 0


def _bwrap_started() -> None:
    """A worker started in bubblewrap: it works here, no probe needed."""
    global _BWRAP_WORKS
    with _BWRAP_LOCK:
        _BWRAP_WORKS = True


def require_swipl() -> None:
    if shutil.which("swipl") is None:
        raise SandboxError(
            "swipl is not installed: install SWI-Prolog (Debian: apt-get install swi-prolog-nox)."
        )


def resolve_sandbox(choice: SandboxChoice) -> SandboxKind:
    require_swipl()
    if choice == "rlimits":
        return "rlimits"
    if bwrap_works():
        return "bwrap"
    if choice == "bwrap":
        raise SandboxError("bubblewrap (bwrap) is not installed or cannot create namespaces here.")
    _warn_once()
    return "rlimits"


@cache
def _warn_fork_fallback(reason: str) -> None:
    logger.info("fork server unavailable, fresh swipl processes instead: %s", reason)
    warnings.warn(
        f"the fork server cannot start here ({reason}): programs run in fresh swipl "
        "processes (same results, slower).",
        RuntimeWarning,
        stacklevel=4,
    )


@cache
def _warn_once() -> None:
    logger.info("bubblewrap unavailable: programs run with process limits only")
    warnings.warn(
        "bubblewrap is unavailable: programs run with process limits, a private directory and "
        "an empty environment, but with network access and a writable view of the system.",
        RuntimeWarning,
        stacklevel=3,
    )


_LAUNCHER: ThreadPoolExecutor | None = None
_LAUNCHER_LOCK = threading.Lock()


def _launch(argv: list[str], **options: Any) -> subprocess.Popen[bytes]:
    """Start a worker from one long-lived thread.  bubblewrap's --die-with-parent kills
    the sandbox when the *thread* that started it ends (Linux ties the parent-death signal
    to the thread), and workers are started from whatever thread first needs them (a
    ``map`` pool, ``warm_up``): those end long before the worker should."""
    global _LAUNCHER
    with _LAUNCHER_LOCK:
        if _LAUNCHER is None:
            _LAUNCHER = ThreadPoolExecutor(1, thread_name_prefix="deonticbench-launcher")
        launcher = _LAUNCHER

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(argv, **options)

    return launcher.submit(start).result()


def _forget_launcher_in_child() -> None:
    # A forked child has none of its parent's threads: the launcher it inherited would
    # never run a job, and its locks may have been held by a parent thread at the fork.
    global _LAUNCHER, _LAUNCHER_LOCK, _BWRAP_LOCK
    _LAUNCHER = None
    _LAUNCHER_LOCK = threading.Lock()
    _BWRAP_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_launcher_in_child)


def default_workers() -> int:
    """A pool's size when its caller names none: one worker more than cores.  A worker's
    core idles while each job is handed on (pool thread, supervisor, fork server and
    back); with one worker per core that time is lost, and a third worker on two cores
    fills it (``validate --split hard`` about a tenth faster, docs/performance.md)."""
    return (os.cpu_count() or 1) + 1


class SandboxDecision:
    """Which sandbox a pool's workers use.

    ``bwrap`` and ``rlimits`` are decided at once.  ``auto`` is decided by the first
    worker that starts, without a separate probe on the way to the first program: it
    starts in bubblewrap, and if it does, bubblewrap works.  If it does not, the probe
    tells a machine where bubblewrap cannot create namespaces (then process limits, with
    the same warning as ever) from a worker that failed for another reason (its error
    is raised).  ``kind`` waits for a start under way, else probes."""

    def __init__(self, choice: SandboxChoice) -> None:
        self._changed = threading.Condition()
        self._trying = 0
        self._kind: SandboxKind | None = None
        if choice != "auto" or _BWRAP_WORKS is not None or shutil.which("bwrap") is None:
            self._kind = resolve_sandbox(choice)
        else:
            require_swipl()

    def to_try(self) -> tuple[SandboxKind, bool]:
        """The sandbox a worker starts in, and whether its start decides (a trial)."""
        with self._changed:
            if self._kind is not None:
                return self._kind, False
            self._trying += 1
            return "bwrap", True

    def tried(self, started: bool) -> SandboxKind | None:
        """A trial's outcome; after a failed one, the sandbox to start in instead
        (``rlimits`` when bubblewrap cannot work here), or None (the failure stands)."""
        if started:
            _bwrap_started()
            kind: SandboxKind = "bwrap"
        else:
            kind = resolve_sandbox("auto")  # probes; warns when it falls back
        with self._changed:
            self._trying -= 1
            if self._kind is None:
                self._kind = kind
            self._changed.notify_all()
            return None if started or self._kind == "bwrap" else self._kind

    @property
    def kind(self) -> SandboxKind:
        with self._changed:
            while self._kind is None and self._trying:
                self._changed.wait()
            if self._kind is not None:
                return self._kind
        kind = resolve_sandbox("auto")
        with self._changed:
            if self._kind is None:
                self._kind = kind
            return self._kind


def upstream_cpu_s(limits: Limits) -> int:
    """The CPU limit of an ``eof`` job: above all the CPU time its process tree can use
    on every core of this machine before its wall clock, SIGTERM and grace have run.
    Upstream's ``timeout`` has no CPU limit, and which of two limits fires first depends
    on the machine's load (an idle core lets a looping program reach a CPU limit equal
    to its wall clock first): only the wall clock may decide how such a program ends."""
    cores = os.cpu_count() or 1
    reach = (limits.timeout_s + UPSTREAM_KILL_AFTER_S) * cores
    return max(limits.cpu_s, math.ceil(reach) + 1)


def build_job(program: str, limits: Limits, toplevel: Toplevel = "halt") -> dict[str, object]:
    """The supervisor's job for one program.  An ``eof`` job runs as upstream's
    ``run_swipl.sh`` runs a program wherever that can decide a reading (its toplevel,
    only the wall clock and the SIGTERM grace ending it, SWI-Prolog's default stack,
    stdout spooled to a file under a far cap, stderr not a limit and kept as a tail);
    the other limits stay the caller's."""
    eof = toplevel == "eof"
    job: dict[str, object] = {
        "program": program,
        "timeout_s": limits.timeout_s,
        "cpu_s": upstream_cpu_s(limits) if eof else limits.cpu_s,
        "memory_mb": limits.memory_mb,
        "stack_mb": max(limits.stack_mb, UPSTREAM_STACK_MB) if eof else limits.stack_mb,
        "file_size_mb": limits.file_size_mb,
        "output_bytes": max(limits.output_bytes, UPSTREAM_STDOUT_BYTES)
        if eof
        else limits.output_bytes,
        "processes": limits.processes,
    }
    if eof:
        job["toplevel"] = toplevel
        job["term_grace_s"] = UPSTREAM_KILL_AFTER_S
        job["stdout_file"] = True
        job["stderr_tail"] = STDERR_TAIL_BYTES
    return job


class _Worker:
    """One supervisor process; restarted when it dies or stops answering."""

    def __init__(
        self, slot: int, sandboxes: SandboxDecision, executor: ExecutorKind = "fresh"
    ) -> None:
        self.slot = slot
        self._sandboxes = sandboxes
        self.sandbox: SandboxKind | None = None
        """The sandbox the running supervisor is in (None before it starts)."""
        self.requested: ExecutorKind = executor
        self.executor: ExecutorKind | None = None
        """What the running supervisor uses (None before it starts)."""
        self.last_report: dict[str, Any] = {}
        self.uid: int | None = None
        self._uid_lock: IO[bytes] | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._pending = b""
        self._hostdir: str | None = None

    def start(self) -> None:
        kind, trial = self._sandboxes.to_try()
        try:
            self._start_in(kind)
        except Exception as exc:
            instead = self._sandboxes.tried(started=False) if trial else None
            if instead is None:
                raise
            logger.info("worker %d: %s; starting in %s instead", self.slot, exc, instead)
            self._start_in(instead)
        else:
            if trial:
                self._sandboxes.tried(started=True)

    def _start_in(self, sandbox: SandboxKind) -> None:
        self.sandbox = sandbox
        env = host_env()  # no secrets reach the sandbox, nor bwrap's own process
        argv = self._supervisor_argv(sandbox)
        if os.geteuid() == 0 and self.uid is None:
            self.uid, self._uid_lock = claim_uid()
        if self.uid is not None:
            argv += ["--uid", str(self.uid)]
        # The supervisor's stderr goes to a file, read only to explain a failed start.
        with tempfile.TemporaryFile() as errors:
            self.proc = _launch(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                env=env,
                start_new_session=True,
                bufsize=0,
            )
            self._pending = b""
            hello = self._read_line(timeout=60.0)
            said = json.loads(hello) if hello else {}
            if said.get("ready"):
                self.executor = said.get("executor", "fresh")
                logger.debug(
                    "worker %d started: sandbox %s, executor %s, uid %s",
                    self.slot, sandbox, self.executor, self.uid,
                )  # fmt: skip
                if said.get("fallback"):
                    _warn_fork_fallback(str(said["fallback"]))
                return
            self.stop()
            errors.seek(0)
            said = errors.read().decode("utf-8", "replace").strip().splitlines()
        reason = f": {said[-1]}" if said else ""
        raise SandboxError(f"the {sandbox} sandbox worker did not start{reason}.")

    def _supervisor_argv(self, sandbox: SandboxKind) -> list[str]:
        """The supervisor's command line in ``sandbox`` with the requested executor (its
        job uid aside).  Outside bwrap, the worker's host work folder is made here."""
        if sandbox == "bwrap":
            workdir = "/tmp/jobs"
            argv = _bwrap_argv(workdir)
        else:
            self._hostdir = tempfile.mkdtemp(prefix="deonticbench-")
            os.chmod(self._hostdir, 0o711)
            workdir = self._hostdir
            argv = []
        argv += [*supervisor_command(), "--workdir", workdir]
        argv += ["--executor", self.requested]
        if self.requested == "fork" and sandbox == "bwrap":
            # The harness's Prolog by the one path jobs see it at: SWI-Prolog names a
            # folder by the first path it met it under, and a job that loads a file
            # its preloaded fork server loaded must name it the same way.
            argv += ["--fork-server", f"{SANDBOX_PROLOG}/{_FORK_SERVER.name}"]
            argv += ["--prolog-dir", SANDBOX_PROLOG]
        elif self.requested == "fork":
            argv += ["--fork-server", str(_FORK_SERVER.resolve())]
        return argv

    def _read_line(self, timeout: float) -> str | None:
        """The supervisor's next line, or None if it ends or says nothing in time."""
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            try:
                chunk = os.read(fd, 1 << 20)
            except OSError:
                return None
            if not chunk:
                return None
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line.decode("utf-8")

    def execute(
        self,
        program: str,
        limits: Limits,
        preload: str | None = None,
        toplevel: Toplevel = "halt",
    ) -> Execution:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        job = build_job(program, limits, toplevel)
        if preload is not None:
            job["preload"] = preload
        try:
            data = memoryview(json.dumps(job).encode("utf-8") + b"\n")
            while data:
                data = data[self.proc.stdin.write(data) or 0 :]
            grace = float(job.get("term_grace_s", 0.0))  # type: ignore[arg-type]
            line = self._read_line(timeout=limits.timeout_s + grace + _WATCHDOG_GRACE_S)
        except (BrokenPipeError, OSError):
            line = None
        if line is None:
            logger.info("worker %d died or stopped answering: restarted at its next job", self.slot)
            self.stop()
            report: dict[str, Any] = {"error": "the sandbox worker died or stopped answering"}
        else:
            report = json.loads(line)
        self.last_report = report
        assert self.sandbox is not None
        return classify(report, self.sandbox)

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    stream.close()
            self.proc = None
        if self._hostdir:
            shutil.rmtree(self._hostdir, ignore_errors=True)
            self._hostdir = None
        if self._uid_lock is not None:
            self._uid_lock.close()
            self._uid_lock, self.uid = None, None


class Solver:
    """Run Prolog programs in sandboxed workers, ``workers`` at a time."""

    def __init__(
        self,
        workers: int | None = None,
        limits: Limits | None = None,
        sandbox: SandboxChoice = "auto",
        executor: ExecutorKind = "fork",
    ) -> None:
        if executor not in EXECUTORS:
            raise SandboxError(
                f"unknown executor {executor!r}; choose from {', '.join(EXECUTORS)}."
            )
        self.limits = limits or Limits()
        self._sandboxes = SandboxDecision(sandbox)
        logger.debug("solver: %s workers, sandbox %s, executor %s", workers, sandbox, executor)
        self.requested_executor: ExecutorKind = executor
        self.size = max(1, workers or default_workers())
        self._idle: Queue[_Worker] = Queue()
        self._all = [_Worker(slot, self._sandboxes, executor) for slot in range(self.size)]
        for worker in self._all:
            self._idle.put(worker)
        self._closed = False
        self._warming: list[threading.Thread] = []

    @property
    def sandbox(self) -> SandboxKind:
        """The sandbox the workers use (``auto``: bwrap where it works, else rlimits)."""
        return self._sandboxes.kind

    def warm_up(self) -> None:
        """Start every worker now, in the background, and return at once: the first
        programs then need not wait for sandboxes and fork servers to boot (``validate``
        loads its cases meanwhile)."""

        def start_one() -> None:
            worker = self._idle.get()
            try:
                if not self._closed and (worker.proc is None or worker.proc.poll() is not None):
                    worker.start()
            except SandboxError:
                pass  # the first run() starts it again and reports why it cannot
            finally:
                self._idle.put(worker)

        for _ in self._all:
            thread = threading.Thread(target=start_one, daemon=True)
            thread.start()
            self._warming.append(thread)

    @property
    def executor(self) -> ExecutorKind:
        """The executor in use: the one asked for, unless a worker had to fall back."""
        if any(w.executor == "fresh" for w in self._all):
            return "fresh"
        return self.requested_executor

    def run(
        self,
        program: str,
        limits: Limits | None = None,
        *,
        preload: str | None = None,
        toplevel: Toplevel = "halt",
    ) -> Execution:
        """Run one program.  ``preload`` names a file of the harness's ``prolog/`` that
        a program of the harness's own (the analyser's driver) loads first: under
        bubblewrap with the fork executor it then runs in a child of a SWI-Prolog that
        loaded the file once for this worker, not in each job (elsewhere the name is
        ignored).  Models' programs never pass it: they run in a pristine SWI-Prolog.
        ``toplevel``: what the process does after loading (``Toplevel``; a reader says
        which it reads)."""
        if self._closed:
            raise RuntimeError("the solver is closed")
        worker = self._idle.get()
        try:
            return worker.execute(program, limits or self.limits, preload, toplevel)
        finally:
            self._idle.put(worker)

    async def arun(
        self, program: str, limits: Limits | None = None, *, toplevel: Toplevel = "halt"
    ) -> Execution:
        import asyncio  # only asyncio callers pay for importing it

        return await asyncio.to_thread(lambda: self.run(program, limits, toplevel=toplevel))

    def start_all(self) -> None:
        """Start every worker that is not running and return once all are up (for a
        caller that hands out all its jobs at once, or measures a warm pool).  Any
        thread may call it: the launcher thread owns the sandboxes."""
        workers = [self._idle.get() for _ in range(self.size)]
        try:
            for worker in workers:
                if worker.proc is None or worker.proc.poll() is not None:
                    worker.start()
        finally:
            for worker in workers:
                self._idle.put(worker)

    def map(
        self, programs: Iterable[str], limits: Limits | None = None, *, toplevel: Toplevel = "halt"
    ) -> list[Execution]:
        # No start_all() first: each worker takes programs as soon as it is up (the
        # launcher thread keeps it alive), not once the slowest worker is.
        with ThreadPoolExecutor(self.size) as pool:
            return list(pool.map(lambda p: self.run(p, limits, toplevel=toplevel), programs))

    def close(self) -> None:
        self._closed = True
        for thread in self._warming:
            thread.join()
        for worker in self._all:
            worker.stop()

    def __enter__(self) -> Solver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_program(
    program: str, limits: Limits | None = None, executor: ExecutorKind = "fork"
) -> Execution:
    """Run one program in a one-worker pool (convenient; a pool is faster for many)."""
    with Solver(workers=1, limits=limits, executor=executor) as solver:
        return solver.run(program)
