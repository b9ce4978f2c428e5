"""Reaping: every process a job left is killed, every file it left removed.

This process is a child subreaper (``set_subreaper``), so even processes of a job that
escaped into a new session stay its descendants; as root, everything running under the
job's uid is killed too."""

from __future__ import annotations

import os
import signal
import time

TYPE_CHECKING = False  # typing costs its import; mypy reads the names below all the same
if TYPE_CHECKING:
    from collections.abc import Collection
    from typing import Any

PR_SET_CHILD_SUBREAPER = 36
SCRATCH_DIRS = ("/dev/shm", "/var/tmp", "/dev/mqueue")


def set_subreaper() -> None:
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


def signal_as(uid: int | None, pid: int, sig: int) -> None:
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


def clean_job(jobdir: str, uid: int | None) -> None:
    """Remove the job's directory and anything the job left in shared scratch places."""
    rmtree(jobdir)
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
                rmtree(path)


def rmtree(path: str) -> None:
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
