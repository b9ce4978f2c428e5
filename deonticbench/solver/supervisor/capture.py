"""Reading a job's stdout and stderr while enforcing the wall clock and the output caps."""

from __future__ import annotations

import os
import select
import time

TYPE_CHECKING = False  # typing costs its import; mypy reads the names below all the same
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

TERM_IGNORED = "timeout_term_ignored"
"""The limit of a job with ``term_grace_s`` whose program outlived its SIGTERM and was
killed (``execution.TIMEOUT_TERM_IGNORED``: this module imports nothing of the package)."""


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
        self.file = anonymous_file(spool) if spool is not None else None

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


def read_outputs(
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
    clock = _WallClock(job, started, terminate)
    captures = _captures(job, spool)
    poller = _poller_of(outputs)
    end = _ExitWatch(exited, poller, watch)
    reading = set(outputs)
    limit: str | None = None
    while reading:
        now = time.monotonic()
        if now >= clock.deadline:
            if clock.open_grace():
                continue
            limit = TERM_IGNORED if clock.terminated else "timeout"
            break
        exited_at = end.seen(now)
        # Once swipl itself has exited, a background process may hold the pipes open:
        # give it a moment to flush, then stop listening (it will be killed).
        if exited_at is not None and now - exited_at > 0.05:
            break
        wait_s = 0.02 if exited_at else min(0.25, clock.deadline - now)
        if _read_ready(poller, wait_s, reading, outputs, captures):
            limit = "output"
            break
    if clock.terminated and limit is None:
        limit = "timeout"  # it ended within the grace: timeout's exit status 124
    return {
        "limit": limit,
        "stdout": captures["stdout"].value(),
        "stderr": captures["stderr"].value(),
    }


def _poller_of(outputs: dict[int, str]) -> select.poll:
    """A poller of the job's output fds.  poll(2), not an epoll selector: nothing to
    create and close per job."""
    poller = select.poll()
    for fd in outputs:
        poller.register(fd, select.POLLIN)
    return poller


class _WallClock:
    """A job's wall clock: its deadline and, for a job with ``term_grace_s`` and a way to
    ``terminate`` it, the grace that SIGTERM opens at the deadline (as ``timeout
    --signal=TERM --kill-after=GRACE`` gives it)."""

    def __init__(
        self, job: dict[str, Any], started: float, terminate: Callable[[], None] | None
    ) -> None:
        self.deadline = started + float(job["timeout_s"])
        self.grace = float(job.get("term_grace_s") or 0.0) if terminate is not None else 0.0
        self.terminate = terminate
        self.terminated = False

    def open_grace(self) -> bool:
        """At the deadline: send SIGTERM and move the deadline on by the grace, once, for
        a job that has one (True); False when the time is up for good."""
        if self.grace > 0 and not self.terminated and self.terminate is not None:
            self.terminate()
            self.terminated, self.deadline = True, self.deadline + self.grace
            return True
        return False


class _ExitWatch:
    """When the program's main process ended, as the read loop learns it: ``exited`` is
    asked until it says so; from then on the ``watch`` fd (the fork server's replies,
    which ``exited`` reads) is no longer polled."""

    def __init__(self, exited: Callable[[], bool], poller: select.poll, watch: int | None) -> None:
        self.exited = exited
        self.poller = poller
        self.watch = watch
        self.at: float | None = None
        if watch is not None:
            poller.register(watch, select.POLLIN)

    def seen(self, now: float) -> float | None:
        """When the program was first seen ended (``now`` if it is this time), or None."""
        if self.at is None and self.exited():
            self.at = now
            if self.watch is not None:
                self.poller.unregister(self.watch)
                self.watch = None
        return self.at


def _read_ready(
    poller: select.poll,
    wait_s: float,
    reading: set[int],
    outputs: dict[int, str],
    captures: dict[str, _Capture],
) -> bool:
    """Wait up to ``wait_s`` for output and keep what each ready fd of ``reading`` holds
    (an fd at its end leaves ``reading``); True when a stream went past its cap."""
    flooded = False
    for fd, _ in poller.poll(wait_s * 1000):
        if fd not in reading:
            continue  # the watched fd: ``exited`` reads it at the top of the loop
        chunk = os.read(fd, 65536)
        if not chunk:
            poller.unregister(fd)
            reading.discard(fd)
            continue
        if captures[outputs[fd]].add(chunk):
            flooded = True
    return flooded


def anonymous_file(folder: str) -> IO[bytes]:
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
