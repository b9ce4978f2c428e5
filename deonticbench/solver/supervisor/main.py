"""The warm worker: runs inside the sandbox and executes one program at a time.

Started once per worker, inside bubblewrap when it works, by a bare interpreter that
imports this module and calls ``main()`` with ``--uid U --workdir D`` and the executor's
options (``pool.supervisor_command``), it reads one JSON job per line on stdin and answers
one JSON result per line on stdout.  Starting the sandbox once per worker instead of once per
program is what makes the pool fast; what keeps programs apart is done here per job:

* a fresh ``swipl`` process in a new session, in a fresh private directory;
* an unprivileged uid of its own when we are root (so RLIMIT_NPROC applies, and the
  program cannot touch the supervisor), and rlimits for CPU, address space, file size,
  open files and processes; stdin is /dev/null; the environment is empty but for PATH;
* the wall clock and the output size enforced here, by killing;
* after every job, *every* process the job left behind is killed (this process is a
  child subreaper, so even processes that escaped into a new session stay our
  descendants; as root we also kill everything running under the job's uid), and every
  file it left in the writable places is removed.

With ``--executor fork`` (the default of the pool) the fresh ``swipl`` is replaced by a
child forked from a booted SWI-Prolog, the fork server (``prolog/fork_server.pl``), that
this supervisor starts once and keeps running beside it: the child takes the job's uid,
FIFOs for stdout and stderr, its directory and flags, waits while this supervisor applies
its rlimits with prlimit(2), and then runs the program exactly as
``swipl -q -f program.pl -t halt`` would.  Everything else (the deadline, the output cap,
killing every process the job left, removing its files) is the same code for both
executors.  If the fork server dies it is restarted and the job retried once; if it
cannot start at all, programs run in fresh processes.

Standard library only, and no import of the package: it starts with ``-I -S`` in a bare
sandbox.  Its start is on the way to a pool's first program, so it imports only what a job
needs (no argparse, typing or tempfile: together they doubled its start-up).
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import subprocess
import sys
import time

TYPE_CHECKING = False  # typing costs its import; mypy reads the names below all the same
if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from typing import IO, Any

PR_SET_CHILD_SUBREAPER = 36
SCRATCH_DIRS = ("/dev/shm", "/var/tmp", "/dev/mqueue")


def _set_subreaper() -> None:
    try:
        import ctypes  # here: imported while the fork server boots, not before

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except OSError:
        pass


def _process_table() -> dict[int, tuple[int, str, int]]:
    """Every process we can see, as pid -> (parent pid, state, owner uid)."""
    table: dict[int, tuple[int, str, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
                owner = os.fstat(fh.fileno()).st_uid
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields resume after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), fields[0].decode(), owner)
    return table


def _descendants(
    root: int, table: dict[int, tuple[int, str, int]] | None = None
) -> dict[int, tuple[int, str]]:
    """Every process whose ancestry reaches ``root``, as pid -> (parent pid, state)."""
    if table is None:
        table = _process_table()
    found: dict[int, tuple[int, str]] = {}
    frontier = {root}
    while frontier:
        nxt = {pid for pid, (ppid, _, _) in table.items() if ppid in frontier and pid not in found}
        found.update({pid: table[pid][:2] for pid in nxt})
        frontier = nxt
    return found


def _kill_uid(uid: int) -> None:
    """Kill every process of ``uid``: a child takes the uid and signals -1."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def kill_everything(uid: int | None, keep: int | None = None, spare: Collection[int] = ()) -> int:
    """Kill all the job's processes until none is left; returns how many were killed.

    Zombies that are our children are reaped, except ``keep`` (the job's main process,
    whose exit status its ``Popen`` collects).  ``spare`` are the fork servers:
    descendants of ours, but not the job's (they run as root, so the kill by uid misses
    them).
    """
    me = os.getpid()
    killed = 0
    for _ in range(200):
        table = _process_table()
        # Killing by uid takes a fork: only when a process of the uid is there to kill.
        if uid is not None and any(u == uid and st != "Z" for _, st, u in table.values()):
            _kill_uid(uid)
            table = _process_table()
        procs = _descendants(me, table)
        live = [pid for pid, (_, state) in procs.items() if state != "Z" and pid not in spare]
        zombies = [pid for pid, (ppid, state) in procs.items() if state == "Z" and ppid == me]
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        for pid in zombies:
            if pid != keep:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        if not live and all(pid == keep or pid in spare for pid in zombies):
            return killed
        time.sleep(0.002)
    return killed


def _rlimits(job: dict[str, Any], program_uid: int) -> list[tuple[int, tuple[int, int]]]:
    """The job's rlimits, as (resource, (soft, hard)): one table for both executors."""
    mb = 1024 * 1024
    cpu = int(job["cpu_s"])
    mem = int(job["memory_mb"]) * mb
    fsize = int(job["file_size_mb"]) * mb
    limits = [
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_FSIZE, (fsize, fsize)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NOFILE, (256, 256)),
    ]
    if program_uid != 0:  # root is not bound by RLIMIT_NPROC
        nproc = int(job["processes"])
        limits.append((resource.RLIMIT_NPROC, (nproc, nproc)))
    return limits


# Capabilities (linux/capability.h).  As root, the sandbox's policy (pool.py, sandbox.py)
# leaves this supervisor only the few it needs; a job must end with none at all, bounding
# set included (bwrap, started as root, does not narrow that set).
_PR_CAPBSET_DROP = 24
_CAP_VERSION_3 = 0x20080522
# What the fork server keeps, as root, for the part of a child's set-up that precedes
# its drop to the job's uid: entering the job's own directory (DAC_OVERRIDE), signalling
# its children (KILL), and the drop itself (SETUID, SETGID).
_FORK_SERVER_CAPS = (1 << 1) | (1 << 5) | (1 << 6) | (1 << 7)
_LIBC: Any = None


def _libc() -> Any:
    # Imported only by a supervisor that drops jobs to a uid (as root): ctypes costs
    # start-up time that an unprivileged worker does not need to pay.
    global _LIBC
    if _LIBC is None:
        import ctypes  # as root only (see above)

        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


def _narrow_capabilities(inheritable: int) -> None:
    """In a child before its exec: empty the bounding set (no exec can regain a
    capability) and set the inheritable set to ``inheritable``; for a root process,
    what it keeps across the exec is then exactly that set."""
    import ctypes  # as root only: an unprivileged worker never narrows capabilities

    libc = _libc()
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    if libc.capget(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    data[2] = inheritable & data[1]
    data[5] = 0
    if libc.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as fh:
        last = int(fh.read())
    for cap in range(last + 1):
        libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)


def _job_preexec(job: dict[str, Any], uid: int | None) -> Any:
    """A fresh job's set-up in its child: no capability, then its uid, then its rlimits
    (RLIMIT_NPROC binds the uid it is set under)."""

    def apply() -> None:
        if uid is not None:
            _narrow_capabilities(0)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        for which, values in _rlimits(job, os.getuid()):
            resource.setrlimit(which, values)

    return apply


def _read_capped(
    proc: subprocess.Popen[bytes],
    job: dict[str, Any],
    started: float,
    uid: int | None,
    spool: str,
) -> dict[str, Any]:
    """Collect stdout/stderr up to the cap while enforcing the wall clock."""
    assert proc.stdout is not None and proc.stderr is not None
    outputs = {proc.stdout.fileno(): "stdout", proc.stderr.fileno(): "stderr"}
    return _read_outputs(
        outputs,
        job,
        started,
        lambda: proc.poll() is not None,
        spool,
        terminate=lambda: _signal_as(uid, proc.pid, signal.SIGTERM),
    )


TERM_IGNORED = "timeout_term_ignored"
"""The limit of a job with ``term_grace_s`` whose program outlived its SIGTERM and was
killed (``execution.TIMEOUT_TERM_IGNORED``: this module imports nothing of the package)."""


def _signal_as(uid: int | None, pid: int, sig: int) -> None:
    """Send ``sig`` to the job's process ``pid``, as the job's uid when it has one (the
    same way ``_kill_uid`` reaches it)."""
    if uid is None:
        try:
            os.kill(pid, sig)
        except OSError:
            pass
        return
    child = os.fork()
    if child == 0:  # pragma: no cover - child
        try:
            os.setgid(uid)
            os.setuid(uid)
            os.kill(pid, sig)
        except OSError:
            pass
        os._exit(0)
    os.waitpid(child, 0)


class _Capture:
    """One output stream of a job.  By default it is kept in memory up to the cap and
    a flood past it is the ``output`` limit; ``spool`` keeps it in a nameless file
    instead (a cap far above any program's output, the paper reader's stdout);
    ``tail`` keeps only its last bytes and is never a limit (stderr, which upstream
    discards)."""

    def __init__(self, cap: int, spool: str | None = None, tail: bool = False) -> None:
        self.cap = cap
        self.tail = tail
        self.size = 0
        self.memory = bytearray()
        self.file = _anonymous_file(spool) if spool is not None else None

    def add(self, chunk: bytes) -> bool:
        """Keep ``chunk``; True when the stream is now past its cap (a flood)."""
        self.size += len(chunk)
        if self.file is not None:
            self.file.write(chunk[: max(0, self.cap + 1 - (self.size - len(chunk)))])
        else:
            self.memory += chunk
            if self.tail and len(self.memory) > self.cap:
                del self.memory[: len(self.memory) - self.cap]
        return not self.tail and self.size > self.cap

    def value(self) -> bytes:
        if self.file is None:
            return bytes(self.memory[-self.cap :] if self.tail else self.memory[: self.cap])
        self.file.seek(0)
        data = self.file.read(self.cap)
        self.file.close()
        return data


def _captures(job: dict[str, Any], spool: str) -> dict[str, _Capture]:
    cap = int(job["output_bytes"])
    tail = job.get("stderr_tail")
    return {
        "stdout": _Capture(cap, spool if job.get("stdout_file") else None),
        "stderr": _Capture(int(tail), tail=True) if tail else _Capture(cap),
    }


def _read_outputs(
    outputs: dict[int, str],
    job: dict[str, Any],
    started: float,
    exited: Callable[[], bool],
    spool: str,
    watch: int | None = None,
    terminate: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Read the program's stdout and stderr (``outputs``: fd -> name) into their
    ``_Capture`` (a stdout file goes in ``spool``) while enforcing the wall clock.
    ``exited`` says whether the program's main process has ended; ``watch`` is one more
    fd that may say so (the fork server's replies): when it is readable, ``exited`` is
    asked at once.

    A job with ``term_grace_s`` is stopped at the wall clock as ``timeout
    --signal=TERM --kill-after=GRACE`` stops it (upstream's run_swipl.sh): ``terminate``
    sends SIGTERM and the output is read on for up to the grace; the limit is then
    ``timeout`` if the program ended, ``TERM_IGNORED`` if it must be killed (SWI-Prolog
    defers SIGTERM while it loads its file: a loop in a directive outlives it)."""
    deadline = started + float(job["timeout_s"])
    grace = float(job.get("term_grace_s") or 0.0) if terminate is not None else 0.0
    terminated = False
    captures = _captures(job, spool)
    # poll(2), not an epoll selector: nothing to create and close per job.
    poller = select.poll()
    for fd in outputs:
        poller.register(fd, select.POLLIN)
    if watch is not None:
        poller.register(watch, select.POLLIN)
    reading = set(outputs)
    limit: str | None = None
    exited_at: float | None = None
    while reading:
        now = time.monotonic()
        if now >= deadline:
            if grace > 0 and not terminated and terminate is not None:
                terminate()
                terminated, deadline = True, deadline + grace
                continue
            limit = TERM_IGNORED if terminated else "timeout"
            break
        if exited_at is None and exited():
            exited_at = now
            if watch is not None:
                poller.unregister(watch)
                watch = None
        # Once swipl itself has exited, a background process may hold the pipes open:
        # give it a moment to flush, then stop listening (it will be killed).
        if exited_at is not None and now - exited_at > 0.05:
            break
        wait_s = 0.02 if exited_at else min(0.25, deadline - now)
        for fd, _ in poller.poll(wait_s * 1000):
            if fd not in reading:
                continue  # the watched fd: ``exited`` reads it at the top of the loop
            chunk = os.read(fd, 65536)
            if not chunk:
                poller.unregister(fd)
                reading.discard(fd)
                continue
            if captures[outputs[fd]].add(chunk):
                limit = "output"
        if limit:
            break
    if terminated and limit is None:
        limit = "timeout"  # it ended within the grace: timeout's exit status 124
    return {
        "limit": limit,
        "stdout": captures["stdout"].value(),
        "stderr": captures["stderr"].value(),
    }


def _prepare(job: dict[str, Any], uid: int | None, workroot: str) -> tuple[str, str]:
    """The job's private directory with its program in it: (directory, program path).

    Its path is the same for every job of a worker (a worker runs one job at a time, and
    the directory is new each time): so is a program's environment (HOME and TMPDIR name
    it), which the fork server therefore starts with, and a forked child's
    /proc/self/environ reads as a fresh process's does."""
    jobdir = _jobdir(workroot)
    if os.path.lexists(jobdir):
        _rmtree(jobdir)  # what a job that crashed the supervisor left
    os.mkdir(jobdir, 0o700)
    program = os.path.join(jobdir, "program.pl")
    with open(program, "w", encoding="utf-8") as fh:
        fh.write(job["program"])
    if uid is not None:
        os.chown(jobdir, uid, uid)
        os.chown(program, uid, uid)
    return jobdir, program


def _jobdir(workroot: str) -> str:
    return os.path.join(workroot, "job")


def _swipl_argv(job: dict[str, Any], program: str) -> list[str]:
    """The command a program runs as; a forked child takes it as its ``os_argv`` flag
    (and, without ``-t``, runs the interactive toplevel: ``"toplevel": "eof"``, which
    reads end-of-file from stdin, /dev/null, as ``swipl -q -f FILE < /dev/null`` does)."""
    toplevel = [] if job.get("toplevel") == "eof" else ["-t", "halt"]
    return [
        job.get("swipl", "swipl"),
        f"--stack-limit={int(job['stack_mb'])}m",
        "--no-packs",  # add-ons are not part of the benchmark's Prolog, and scanning costs
        "-q",
        "-f",
        program,
        *toplevel,
    ]


def _env(jobdir: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": jobdir, "TMPDIR": jobdir, "LANG": "C.UTF-8"}


def _report(
    returncode: int, captured: dict[str, Any], wall: float, leftovers: int
) -> dict[str, Any]:
    return {
        "exit_code": returncode if returncode >= 0 else None,
        "signal": -returncode if returncode < 0 else None,
        "limit": captured["limit"],
        "stdout": captured["stdout"].decode("utf-8", "replace"),
        "stderr": captured["stderr"].decode("utf-8", "replace"),
        "wall_s": round(wall, 6),
        "leftover_processes": leftovers,
    }


def run_job(job: dict[str, Any], uid: int | None, workroot: str) -> dict[str, Any]:
    """Run one program in a fresh ``swipl`` process."""
    jobdir, program = _prepare(job, uid, workroot)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            _swipl_argv(job, program),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=jobdir,
            env=_env(jobdir),
            start_new_session=True,
            preexec_fn=_job_preexec(job, uid),
            close_fds=True,
        )
    except OSError as exc:
        _rmtree(jobdir)
        return {"error": f"could not start swipl: {exc}", "wall_s": 0.0}
    captured = _read_capped(proc, job, started, uid, workroot)
    if captured["limit"] is not None:
        kill_everything(uid, keep=proc.pid)
    try:
        returncode = proc.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        kill_everything(uid, keep=proc.pid)
        returncode = proc.wait()
    wall = time.monotonic() - started
    leftovers = kill_everything(uid)
    _clean(jobdir, uid)
    return _report(returncode, captured, wall, leftovers)


class ForkServerDied(Exception):
    """The fork server ended (or stopped answering) while it had a job."""


class ForkServerUnavailable(Exception):
    """The fork server cannot start here: programs run in fresh processes instead."""


# Its start-up must not count against a program's time, nor hang a worker for good.
_FORK_SERVER_START_S = 30.0


class ForkServer:
    """The booted SWI-Prolog (``prolog/fork_server.pl``) that forks one child per job."""

    def __init__(self, script: str, workroot: str, preload: str | None = None) -> None:
        self.script = script
        self.workroot = workroot
        self.preload = preload
        """A file of the harness's Prolog this server loads before it serves (its
        children then find it loaded), or None: a pristine SWI-Prolog."""
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        self._pending = b""
        self._errors: IO[bytes] | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        self.launch()
        self.await_ready()

    def launch(self) -> None:
        """Start the server's process; it boots while the caller goes on."""
        self.stop()
        load = f"load_files({_prolog_atom(self.script)}, [silent(true), imports([])])"
        argv = [
            "swipl",
            "--stack-limit=512m",
            "--no-packs",
            "-q",
            "-f",
            "none",
            "-t",
            "halt",
            "-g",
            load,
            *(
                ["-g", f"load_files({_prolog_atom(self.preload)}, [silent(true)])"]
                if self.preload
                else []
            ),
            "-g",
            "fork_server:serve",
        ]
        self._errors = _anonymous_file(self.workroot)
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                cwd=self.workroot,
                # The keys of a program's environment, in the same order: a child only
                # changes the values of HOME and TMPDIR.
                env=_env(_jobdir(self.workroot)),
                start_new_session=True,
                close_fds=True,
                preexec_fn=_fork_server_preexec if _DROPS_UID else None,
            )
        except OSError as exc:
            self.stop()
            raise ForkServerUnavailable(f"could not start swipl: {exc}") from None

    def await_ready(self) -> None:
        """Wait until the launched server says it is ready (raises if it cannot be)."""
        try:
            hello = self.read_line(time.monotonic() + _FORK_SERVER_START_S)
        except ForkServerDied:
            hello = None
        if hello is None or not hello.startswith("ready "):
            reason = self._said() or "it did not say it was ready"
            self.stop()
            raise ForkServerUnavailable(reason)
        self.pid = int(hello.split()[1])

    def _said(self) -> str:
        if self._errors is None:
            return ""
        self._errors.seek(0)
        lines = self._errors.read().decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else ""

    def send(self, text: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(text.encode("utf-8"))
            self.proc.stdin.flush()
        except OSError as exc:
            raise ForkServerDied(f"it stopped reading: {exc}") from None

    def fileno(self) -> int:
        assert self.proc is not None and self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def poll_line(self) -> str | None:
        """A complete reply if one is waiting, without blocking; raises on end-of-file."""
        line = self._take_line()
        if line is not None:
            return line
        while _readable(self.fileno(), 0.0):
            chunk = os.read(self.fileno(), 4096)
            if not chunk:
                raise ForkServerDied("it exited")
            self._pending += chunk
            line = self._take_line()
            if line is not None:
                return line
        return None

    def read_line(self, deadline: float) -> str | None:
        """The next reply, or None at the deadline; raises when the server ends."""
        while True:
            line = self.poll_line()
            if line is not None:
                return line
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            _readable(self.fileno(), left)

    def _take_line(self) -> str | None:
        if b"\n" not in self._pending:
            return None
        line, self._pending = self._pending.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def stop(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()
            except OSError:
                pass
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
        if self._errors is not None:
            self._errors.close()
        self.proc, self.pid, self._pending, self._errors = None, None, b"", None


def _anonymous_file(folder: str) -> IO[bytes]:
    """A file with no name in ``folder`` (the fork server's stderr, read if it fails to
    start; a job's spooled stdout): named only for the instant between creating and
    unlinking it."""
    path = os.path.join(folder, f".nameless-{os.getpid()}")
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    os.unlink(path)
    return open(fd, "w+b")


def _readable(fd: int, timeout: float) -> bool:
    return bool(select.select([fd], [], [], max(0.0, timeout))[0])


def _prolog_atom(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _prolog_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _exit_line(line: str) -> int:
    """The fork server's "exited N" / "signaled S" as a Popen-style return code."""
    kind, _, value = line.partition(" ")
    if kind == "exited":
        return int(value)
    if kind == "signaled":
        return -int(value)
    # "failed ...": the child could not become the job before the program ran (the
    # server knows it from a pipe the program never holds, so no program can say so).
    raise ForkServerDied(f"the child {value}" if kind == "failed" else f"it said {line!r}")


def run_forked(
    job: dict[str, Any],
    uid: int | None,
    workroot: str,
    server: ForkServer,
    spare: Collection[int] = (),
) -> dict[str, Any]:
    """Run one program in a child of the fork server; raises ForkServerDied.  ``spare``
    are this worker's fork servers (never killed with a job's processes)."""
    spare = {*spare, *([server.pid] if server.pid else [])}  # this one at least
    jobdir, program = _prepare(job, uid, workroot)
    # The child's stdout and stderr: FIFOs in a directory only we can enter, opened by
    # the server (as root) before it forks, so the program cannot reach them by name.
    iodir = os.path.join(workroot, "io")
    if os.path.lexists(iodir):
        _rmtree(iodir)
    os.mkdir(iodir, 0o700)
    fds: dict[int, str] = {}
    try:
        for name in ("stdout", "stderr"):
            path = os.path.join(iodir, name)
            os.mkfifo(path, 0o600)
            fds[os.open(path, os.O_RDONLY | os.O_NONBLOCK)] = name
        return _fork_and_collect(job, uid, jobdir, program, iodir, fds, server, spare)
    except ForkServerDied:
        # The orphaned child and whatever it started (and this server, which failed).
        kill_everything(uid, spare=spare - {server.pid})
        raise
    finally:
        for fd in fds:
            os.close(fd)
        _rmtree(iodir)
        _clean(jobdir, uid)


def _fork_and_collect(
    job: dict[str, Any],
    uid: int | None,
    jobdir: str,
    program: str,
    iodir: str,
    fds: dict[int, str],
    server: ForkServer,
    spare: Collection[int],
) -> dict[str, Any]:
    started = time.monotonic()
    argv = ", ".join(_prolog_string(arg) for arg in _swipl_argv(job, program))
    stack = int(job["stack_mb"]) * 1024 * 1024
    server.send(
        f"job({_prolog_string(jobdir)}, {_prolog_string(program)}, "
        f"{_prolog_string(os.path.join(iodir, 'stdout'))}, "
        f"{_prolog_string(os.path.join(iodir, 'stderr'))}, "
        f"{'none' if uid is None else uid}, {stack}, [{argv}]).\n"
    )
    reply = server.read_line(started + _FORK_SERVER_START_S)
    if reply is None:
        raise ForkServerDied("it did not fork")
    if not reply.startswith("started "):
        raise ForkServerDied(f"it could not fork: {reply}")
    pid = int(reply.split()[1])
    program_uid = os.getuid() if uid is None else uid
    try:
        for which, values in _rlimits(job, program_uid):
            resource.prlimit(pid, which, values)
    except OSError as exc:
        server.send("abort.\n")
        raise ForkServerDied(f"could not limit the child: {exc}") from None
    server.send("go.\n")
    status: list[str] = []

    def exited() -> bool:
        if not status:
            try:
                line = server.poll_line()
            except ForkServerDied:
                line = "died"
            if line is not None:
                status.append(line)
        return bool(status)

    captured = _read_outputs(
        fds,
        job,
        started,
        exited,
        iodir,
        watch=server.fileno(),
        terminate=lambda: _signal_as(uid, pid, signal.SIGTERM),
    )
    if captured["limit"] is not None:
        kill_everything(uid, spare=spare)
    if not status:
        line = server.read_line(time.monotonic() + 1.0)
        if line is None:
            kill_everything(uid, spare=spare)
            line = server.read_line(time.monotonic() + _FORK_SERVER_START_S)
        if line is None:
            raise ForkServerDied("it did not report the child's end")
        status.append(line)
    if status[0] == "died":
        raise ForkServerDied("it exited while the program ran")
    returncode = _exit_line(status[0])
    wall = time.monotonic() - started
    leftovers = kill_everything(uid, spare=spare)
    return _report(returncode, captured, wall, leftovers)


# Failed starts in a row after which a worker stops trying its fork server.
_FORK_SERVER_STARTS = 3


class Executor:
    """Runs each job in a forked child when the fork server works, else in a fresh
    process; restarts a dead fork server and retries its job once.

    A job may name a file of the harness's own Prolog (``"preload": "analyse.pl"``, a
    plain name in ``prolog_dir``): it then runs in a child of a second fork server that
    loaded that file before serving, started on the first such job and kept, so a job
    that begins by loading the file finds it loaded.  Programs never run there (their
    jobs name no file), and if that server cannot start or dies, such jobs run in the
    plain server, which loads the file in each child as before."""

    def __init__(
        self,
        kind: str,
        script: str | None,
        uid: int | None,
        workroot: str,
        prolog_dir: str | None = None,
    ) -> None:
        self.uid = uid
        self.workroot = workroot
        self.script = script
        self.prolog_dir = prolog_dir
        self.preloaded: dict[str, ForkServer | None] = {}
        """Fork servers by the file they preloaded; None once one could not serve."""
        self.restarts = 0
        self.failed_starts = 0
        self.fallback: str | None = None
        self.server = ForkServer(script, workroot) if kind == "fork" and script else None
        self._awaited = False
        if self.server is not None:
            self._or_fall_back(self.server.launch)

    def await_ready(self) -> None:
        """Wait for the fork server launched by the constructor (if it cannot start,
        programs run in fresh processes)."""
        self._awaited = True
        if self.server is not None:
            self._or_fall_back(self.server.await_ready)

    def _or_fall_back(self, step: Callable[[], None]) -> None:
        try:
            step()
        except ForkServerUnavailable as exc:
            self._fall_back(str(exc))

    @property
    def kind(self) -> str:
        return "fork" if self.server is not None else "fresh"

    def _fall_back(self, reason: str) -> None:
        if self.server is not None:
            self.server.stop()
        self.server, self.fallback = None, reason

    def server_pids(self) -> set[int]:
        """Every running fork server of this worker (spared when a job's processes are
        killed)."""
        servers = [self.server, *self.preloaded.values()]
        return {s.pid for s in servers if s is not None and s.pid is not None}

    def _preloaded_server(self, name: object) -> ForkServer | None:
        if self.server is None or not self.prolog_dir or not self.script:
            return None
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            return None
        if name not in self.preloaded:
            path = os.path.join(self.prolog_dir, name)
            server: ForkServer | None = None
            if os.path.isfile(path):
                server = ForkServer(self.script, self.workroot, preload=path)
                try:
                    server.start()
                except ForkServerUnavailable:
                    server = None
            self.preloaded[name] = server
        return self.preloaded[name]

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        """Run one job: a dead fork server is restarted and the job retried once; a
        second death is reported as the job's result."""
        if not self._awaited:
            self.await_ready()
        name = job.get("preload")
        preloaded = self._preloaded_server(name) if name is not None else None
        if preloaded is not None:
            try:
                if not preloaded.running:
                    preloaded.start()
                return self._forked(job, preloaded)
            except (ForkServerDied, ForkServerUnavailable):
                preloaded.stop()  # from now on such jobs run in the plain server
                self.preloaded[str(name)] = None
        died: list[str] = []
        while self.server is not None and len(died) < 2:
            try:
                if not self.server.running:
                    self._restart()
                return self._forked(job, self.server)
            except (ForkServerDied, ForkServerUnavailable) as exc:
                died.append(str(exc))
                if self.server is not None:
                    self.server.stop()
        if died and self.server is not None:
            return self._tag(
                {"error": f"the fork server died twice running this program: {died[-1]}"}
            )
        return self._tag(run_job(job, self.uid, self.workroot))

    def _forked(self, job: dict[str, Any], server: ForkServer) -> dict[str, Any]:
        return self._tag(run_forked(job, self.uid, self.workroot, server, self.server_pids()))

    def _restart(self) -> None:
        """Start the fork server again; after several failed starts in a row, give up on
        it and run programs in fresh processes (same results, slower)."""
        assert self.server is not None
        self.restarts += 1
        try:
            self.server.start()
        except ForkServerUnavailable as exc:
            self.failed_starts += 1
            if self.failed_starts >= _FORK_SERVER_STARTS:
                self._fall_back(str(exc))
            raise
        self.failed_starts = 0

    def _tag(self, result: dict[str, Any]) -> dict[str, Any]:
        result.setdefault("wall_s", 0.0)
        result["executor"] = self.kind
        result["fork_restarts"] = self.restarts
        return result

    def stop(self) -> None:
        for server in (self.server, *self.preloaded.values()):
            if server is not None:
                server.stop()


def _clean(jobdir: str, uid: int | None) -> None:
    """Remove the job's directory and anything the job left in shared scratch places."""
    _rmtree(jobdir)
    for scratch in SCRATCH_DIRS:
        try:
            entries = os.listdir(scratch)
        except OSError:
            continue
        for name in entries:
            path = os.path.join(scratch, name)
            try:
                owner = os.lstat(path).st_uid
            except OSError:
                continue
            # In our own sandbox everything there is the job's; outside it, only the
            # job uid's files are (when we have one).
            if (uid is not None and owner == uid) or (uid is None and _in_sandbox()):
                _rmtree(path)


def _rmtree(path: str) -> None:
    def unlock(func: Any, target: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            func(target)
        except OSError:
            pass

    if os.path.isdir(path) and not os.path.islink(path):
        import shutil  # on the first job, not on the way to the pool's first program

        shutil.rmtree(path, onerror=unlock)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def _in_sandbox() -> bool:
    return os.environ.get("DEONTICBENCH_SANDBOX") == "bwrap"


_OPTIONS = {
    "--uid": "uid",
    "--workdir": "workdir",
    "--executor": "executor",
    "--fork-server": "fork_server",
    "--prolog-dir": "prolog_dir",
}


class Arguments:
    """The command line the pool starts a supervisor with (pool.py writes it)."""

    def __init__(self, argv: list[str]) -> None:
        self.uid: int | None = None
        self.workdir = ""
        self.executor = "fresh"
        self.fork_server: str | None = None
        self.prolog_dir: str | None = None
        self.check = False
        words = iter(argv)
        for word in words:
            if word == "--check":
                self.check = True
                continue
            name = _OPTIONS.get(word)
            value = next(words, None)
            if name is None or value is None:
                sys.exit(f"supervisor: unknown argument or missing value: {word}")
            setattr(self, name, int(value) if name == "uid" else value)
        if self.executor not in ("fork", "fresh"):
            sys.exit(f"supervisor: unknown executor {self.executor!r}")
        if not self.check and not self.workdir:
            sys.exit("supervisor: --workdir is required")


# Whether jobs drop to a uid of their own (we are root): the fork server is then started
# with only the capabilities that drop needs (set by main()).
_DROPS_UID = False


def _fork_server_preexec() -> None:
    _narrow_capabilities(_FORK_SERVER_CAPS)


def main() -> None:
    global _DROPS_UID
    args = Arguments(sys.argv[1:])
    if args.check:
        return
    _DROPS_UID = args.uid is not None
    os.makedirs(args.workdir, mode=0o711, exist_ok=True)
    if args.uid is not None:
        kill_everything(args.uid)  # a previous worker's leftovers under our uid
    executor = Executor(args.executor, args.fork_server, args.uid, args.workdir, args.prolog_dir)
    # While the fork server boots: no job runs before this, so every process a job
    # starts, even one that escapes into a new session, stays our descendant.
    _set_subreaper()
    executor.await_ready()
    out = sys.stdout
    hello = {"ready": True, "pid": os.getpid(), "executor": executor.kind}
    if executor.fallback:
        hello["fallback"] = executor.fallback
    out.write(json.dumps(hello) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            result = executor.run(json.loads(line))
        except Exception as exc:  # the supervisor must survive any one job
            kill_everything(args.uid, spare=executor.server_pids())
            result = {"error": f"supervisor: {type(exc).__name__}: {exc}", "wall_s": 0.0}
        out.write(json.dumps(result) + "\n")
        out.flush()
    executor.stop()


if __name__ == "__main__":
    main()
