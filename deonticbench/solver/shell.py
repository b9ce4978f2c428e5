"""A shell command in a bubblewrap sandbox over one folder: the agents' ``bash`` tool.

The sandbox is ``sandbox.shell_policy`` of the one policy (no network, read-only
system, private /tmp and PIDs, empty environment) with one writable folder, the
workspace, shown at ``/workspace``.  When we are root, the command runs under an
unprivileged uid of its own (``sandbox.claim_uid``) with no capability
(``sandbox.drop_privileges``), so the process limit applies;
output goes to a file capped by the file-size limit, so a flood cannot fill memory.
When the command ends or its time is up, the sandbox's PID namespace is torn down with
everything in it: background processes and fork bombs do not survive the call, which
returns only once the last of them is gone (``sandbox.clear_uid``), so the uid's next
command starts with its whole process limit.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import SandboxError
from .pool import bwrap_works
from .sandbox import clear_uid, drop_privileges, host_env, shell_policy

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShellLimits:
    timeout_s: float = 20.0
    output_bytes: int = 1 << 20
    """Bytes of stdout+stderr kept; a command writing more is stopped (file-size limit)."""
    file_size_mb: int = 16
    processes: int = 64
    memory_mb: int = 2048


@dataclass(frozen=True)
class ShellResult:
    exit_code: int | None
    """None when the command was killed (time limit)."""
    output: str
    """stdout and stderr interleaved, as a terminal shows them."""
    timed_out: bool
    wall_s: float


def shell_argv(
    workspace: Path,
    command: str,
    uid: int | None,
    limits: ShellLimits,
    mount: str | None = None,
) -> list[str]:
    """The full command line: the limits (``prlimit``, inherited by everything the
    command starts), the sandbox, the uid drop, bash.  No Python between fork and exec,
    so the command starts by vfork, not by copying the harness's memory."""
    size = limits.file_size_mb << 20
    argv = [
        "prlimit",
        f"--fsize={size}",
        f"--nproc={limits.processes}",
        "--core=0",
        "--nofile=256",
        f"--cpu={int(limits.timeout_s) + 2}",
        f"--as={limits.memory_mb << 20}",
        "--",
    ]
    # RLIMIT_NPROC binds only a uid that is not root: each trial has its own.
    argv += [*shell_policy(workspace, mount).argv(), *drop_privileges(uid)]
    return [*argv, "bash", "-c", command]


def _exits_within(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait for the process to end, at most ``timeout_s``.  A pidfd wakes us the moment it
    ends (``Popen.wait(timeout)`` polls with sleeps of up to 50 ms, which would be most of
    a short command's cost)."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        ready, _, _ = select.select([pidfd], [], [], timeout_s)
    finally:
        os.close(pidfd)
    if ready:
        proc.wait()
    return bool(ready)


def run_shell(
    workspace: Path,
    command: str,
    *,
    uid: int | None,
    limits: ShellLimits | None = None,
    mount: str | None = None,
) -> ShellResult:
    """Run ``command`` with ``workspace`` as its only writable folder, shown at ``mount``
    (default ``/workspace``); never raises for what the command does (only when no
    sandbox can be made here)."""
    limits = limits or ShellLimits()
    if not bwrap_works():
        raise SandboxError("the bash tool needs bubblewrap (bwrap), which cannot run here.")
    if uid is None and os.geteuid() == 0:
        raise SandboxError("the bash tool needs an unprivileged uid when run as root.")
    argv = shell_argv(workspace, command, uid, limits, mount)
    start = time.monotonic()
    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=host_env(),
            start_new_session=True,
        )
        timed_out = not _exits_within(proc, limits.timeout_s)
        if timed_out:
            logger.debug("shell command timed out after %.1f s: killed", limits.timeout_s)
            # bwrap's own children die with it (--die-with-parent): the PID namespace and
            # whatever was left running in it go too.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if uid is not None:
            clear_uid(uid)
        wall = time.monotonic() - start
        sink.seek(0)
        data = sink.read(limits.output_bytes + 1)
    return ShellResult(
        exit_code=None if timed_out else proc.returncode,
        output=data[: limits.output_bytes].decode("utf-8", errors="replace"),
        timed_out=timed_out,
        wall_s=wall,
    )
