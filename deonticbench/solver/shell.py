"""A shell command in a bubblewrap sandbox over one folder: the agents' ``bash`` tool.

The sandbox is the Prolog workers' (``pool.bwrap_prefix``: no network, read-only
system, private /tmp and PIDs, empty environment) with one writable folder, the
workspace, shown at ``/workspace``.  When we are root, the command runs under an
unprivileged uid of its own (claimed like a worker's), so the process limit applies;
output goes to a file capped by the file-size limit, so a flood cannot fill memory.
When the command ends or its time is up, the sandbox's PID namespace is torn down with
everything in it: background processes and fork bombs do not survive the call.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import SandboxError
from .pool import bwrap_prefix, bwrap_works

SANDBOX_WORKSPACE = "/workspace"


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


def _limits(limits: ShellLimits) -> None:  # runs in the child between fork and exec
    os.setsid()
    size = limits.file_size_mb << 20
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    cpu = int(limits.timeout_s) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))


def shell_argv(workspace: Path, command: str, uid: int | None, limits: ShellLimits) -> list[str]:
    """The full command line: the sandbox, the uid drop, the memory limit, bash."""
    mounts = ["--bind", str(Path(workspace).resolve()), SANDBOX_WORKSPACE]
    argv = [*bwrap_prefix(mounts, chdir=SANDBOX_WORKSPACE), "--setenv", "HOME", SANDBOX_WORKSPACE]
    argv += ["--setenv", "LANG", "C.UTF-8"]
    if uid is not None:
        argv += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        argv += ["--inh-caps=-all", "--bounding-set=-all"]
    # The address-space limit only inside: bwrap itself needs none.
    argv += ["prlimit", f"--as={limits.memory_mb << 20}", "--", "bash", "-c", command]
    return argv


def run_shell(
    workspace: Path, command: str, *, uid: int | None, limits: ShellLimits | None = None
) -> ShellResult:
    """Run ``command`` with ``workspace`` as its only writable folder; never raises for
    what the command does (only when no sandbox can be made here)."""
    limits = limits or ShellLimits()
    if not bwrap_works():
        raise SandboxError("the bash tool needs bubblewrap (bwrap), which cannot run here.")
    if uid is None and os.geteuid() == 0:
        raise SandboxError("the bash tool needs an unprivileged uid when run as root.")
    argv = shell_argv(workspace, command, uid, limits)
    start = time.monotonic()
    with tempfile.TemporaryFile() as sink:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={"PATH": "/usr/bin:/bin"},
            preexec_fn=lambda: _limits(limits),
        )
        timed_out = False
        try:
            proc.wait(timeout=limits.timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            # bwrap's own children die with it (--die-with-parent): the PID namespace and
            # whatever was left running in it go too.
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        wall = time.monotonic() - start
        sink.seek(0)
        data = sink.read(limits.output_bytes + 1)
    return ShellResult(
        exit_code=None if timed_out else proc.returncode,
        output=data[: limits.output_bytes].decode("utf-8", errors="replace"),
        timed_out=timed_out,
        wall_s=wall,
    )
