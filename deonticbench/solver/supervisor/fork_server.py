"""The fork server: a booted SWI-Prolog (``prolog/fork_server.pl``) that forks one child
per job, and the run of one program in such a child (``run_forked``)."""

from __future__ import annotations

import os
import resource
import select
import signal
import subprocess
import time

from .capabilities import FORK_SERVER_CAPS, narrow_capabilities
from .capture import anonymous_file, read_outputs
from .jobs import job_dir, job_env, job_report, prepare_job, swipl_argv
from .limits import job_rlimits
from .reaping import clean_job, kill_everything, rmtree, signal_as

TYPE_CHECKING = False  # typing costs its import; mypy reads the names below all the same
if TYPE_CHECKING:
    from collections.abc import Collection
    from typing import IO, Any


class ForkServerDied(Exception):
    """The fork server ended (or stopped answering) while it had a job."""


class ForkServerUnavailable(Exception):
    """The fork server cannot start here: programs run in fresh processes instead."""


# Its start-up must not count against a program's time, nor hang a worker for good.
_FORK_SERVER_START_S = 30.0


class ForkServer:
    """The booted SWI-Prolog (``prolog/fork_server.pl``) that forks one child per job."""

    def __init__(
        self, script: str, workroot: str, preload: str | None = None, drops_uid: bool = False
    ) -> None:
        self.script = script
        self.workroot = workroot
        self.preload = preload
        """A file of the harness's Prolog this server loads before it serves (its
        children then find it loaded), or None: a pristine SWI-Prolog."""
        self.drops_uid = drops_uid
        """Whether jobs drop to a uid of their own (we are root): the server then starts
        with only the capabilities that drop needs."""
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
        self._errors = anonymous_file(self.workroot)
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._errors,
                cwd=self.workroot,
                # The keys of a program's environment, in the same order: a child only
                # changes the values of HOME and TMPDIR.
                env=job_env(job_dir(self.workroot)),
                start_new_session=True,
                close_fds=True,
                preexec_fn=_fork_server_preexec if self.drops_uid else None,
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
    jobdir, program = prepare_job(job, uid, workroot)
    # The child's stdout and stderr: FIFOs in a directory only we can enter, opened by
    # the server (as root) before it forks, so the program cannot reach them by name.
    iodir = os.path.join(workroot, "io")
    if os.path.lexists(iodir):
        rmtree(iodir)
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
        rmtree(iodir)
        clean_job(jobdir, uid)


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
    """Fork ``program``'s child, read its outputs under the job's wall clock (killing what
    it started when a limit stopped it), wait for the server's word on its end, and report
    the job; raises ForkServerDied when the server fails it."""
    started = time.monotonic()
    pid = _fork_child(job, uid, jobdir, program, iodir, server, started)
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

    captured = read_outputs(
        fds,
        job,
        started,
        exited,
        iodir,
        watch=server.fileno(),
        terminate=lambda: signal_as(uid, pid, signal.SIGTERM),
    )
    if captured["limit"] is not None:
        kill_everything(uid, spare=spare)
    if not status:
        status.append(_awaited_end(server, uid, spare))
    if status[0] == "died":
        raise ForkServerDied("it exited while the program ran")
    returncode = _exit_line(status[0])
    wall = time.monotonic() - started
    leftovers = kill_everything(uid, spare=spare)
    return job_report(returncode, captured, wall, leftovers)


def _fork_child(
    job: dict[str, Any],
    uid: int | None,
    jobdir: str,
    program: str,
    iodir: str,
    server: ForkServer,
    started: float,
) -> int:
    """Have the server fork the job's child (held before it runs ``program``), set the
    job's resource limits on it, then let it go; its pid.  Raises ForkServerDied when
    the server does not fork or the child cannot be limited (it is then aborted)."""
    argv = ", ".join(_prolog_string(arg) for arg in swipl_argv(job, program))
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
        for which, values in job_rlimits(job, program_uid):
            resource.prlimit(pid, which, values)
    except OSError as exc:
        server.send("abort.\n")
        raise ForkServerDied(f"could not limit the child: {exc}") from None
    server.send("go.\n")
    return pid


def _awaited_end(server: ForkServer, uid: int | None, spare: Collection[int]) -> str:
    """The server's line on the child's end, once its outputs are closed: waited for a
    second, then once more after killing the job's processes (a child that holds on).
    Raises ForkServerDied when it never comes."""
    line = server.read_line(time.monotonic() + 1.0)
    if line is None:
        kill_everything(uid, spare=spare)
        line = server.read_line(time.monotonic() + _FORK_SERVER_START_S)
    if line is None:
        raise ForkServerDied("it did not report the child's end")
    return line


def _fork_server_preexec() -> None:
    narrow_capabilities(FORK_SERVER_CAPS)
