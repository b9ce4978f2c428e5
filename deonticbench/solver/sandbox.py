"""The one sandbox policy: every bubblewrap sandbox of the harness is built here.

Three kinds of sandbox use it, and differ only in the named fields of ``SandboxPolicy``:

* ``worker_policy``: a Prolog worker (``pool``): the supervisor and its jobs, over an
  empty root with a private ``/tmp``, the harness's Python and ``prolog/`` read-only;
* ``shell_policy``: the agents' ``bash`` tool (``shell``): one writable host folder at
  ``/workspace``;
* ``task_policy``: a Harbor task (``integrations.harbor.BwrapEnvironment``): a host folder
  bound as the whole ``/``, writable by the job uid (``/app``, ``/logs``, ``/tests``,
  ``/tmp``...).

What every kind gets, whatever its fields: new PID, network, IPC and UTS namespaces
(cgroup when the kernel allows), ``--die-with-parent``, ``--new-session`` (no terminal
of the harness to push keystrokes into), the host's system folders (``SYSTEM_DIRS``)
read-only and nothing else of the host but the declared binds, an environment cleared
by ``--clearenv`` with only ``PATH``, ``DEONTICBENCH_SANDBOX`` and the policy's own
``setenv``, and bubblewrap itself started with ``HOST_ENV`` (``host_env()``): the
sandbox's first process is a fork of bwrap, so its ``/proc/1/environ`` is whatever bwrap
was started with, and ``--clearenv`` alone would leave the harness's secrets there.

Privileges: when the harness runs as root, every job runs under an unprivileged uid of
its own, claimed here (``claim_uid``: one per worker, shell trial or Harbor environment,
never shared on the machine, and handed out only when nothing runs as it), with no
capability: bwrap keeps only the few capabilities the sandbox's first process needs to
drop to that uid (``keep_caps``), and the drop (``drop_privileges``: ``setpriv``, or the
supervisor for a worker) clears the effective, permitted, inheritable and bounding sets.
Not root: the sandbox is an unprivileged user namespace of the caller's own uid, with no
capability.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .._paths import PROLOG
from ..errors import SandboxError

logger = logging.getLogger(__name__)

SYSTEM_DIRS = ("/usr", "/etc", "/lib", "/lib64", "/lib32", "/bin", "/sbin")
"""Host folders every sandbox sees, read-only (what bash, swipl and Python need)."""
SANDBOX_PATH = "/usr/bin:/bin"
HOST_ENV: Mapping[str, str] = {"PATH": SANDBOX_PATH, "LANG": "C.UTF-8"}
"""The whole environment bubblewrap is started with: nothing of the harness's."""
SANDBOX_PROLOG = "/opt/deonticbench/prolog"
"""Where a worker's sandbox shows the harness's ``prolog/`` folder (read-only)."""
SANDBOX_WORKSPACE = "/workspace"
"""Where the shell's sandbox shows the trial's workspace (its one writable folder)."""
SUPERVISOR_DIR = Path(__file__).parent
"""The folder of the supervisor's package (``supervisor/``), which a worker's sandbox runs
read-only."""

# Unprivileged uids for jobs when we run as root: one per worker (or shell trial, or
# Harbor environment), never shared with another of any process on the machine (each is
# claimed with a lock file held for its life), so that a job's process limit and a kill
# by uid reach only that sandbox's processes.
_UID_RANGE = range(61000, 62000)
# The machine's /tmp, not this process's TMPDIR: two harness processes with different
# temporary folders must still share one allocation.
_UID_LOCKS = Path("/tmp/deonticbench-uids")
CLEAR_UID_S = 10.0
"""How long ``clear_uid`` waits for a uid's last processes to go."""

# What setpriv needs to drop to the job uid with an empty bounding set.
_SETPRIV_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
# What a worker's supervisor needs as root: drop each job to its uid (SETUID, SETGID,
# SETPCAP to empty the job's bounding set), hand it its directory (CHOWN), enter and
# clean that directory whatever the job did to its modes (DAC_OVERRIDE, FOWNER), and
# kill what the job left under its uid (KILL).
_SUPERVISOR_CAPS = (
    "CAP_SETUID",
    "CAP_SETGID",
    "CAP_SETPCAP",
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_KILL",
)


@dataclass(frozen=True)
class Bind:
    """A host folder shown in the sandbox (read-only unless ``writable``)."""

    source: str
    target: str
    writable: bool = False


@dataclass(frozen=True)
class SandboxPolicy:
    """What one kind of sandbox is given; everything else is the same for every kind."""

    kind: str
    """A name for logs: ``worker``, ``shell`` or ``task``."""
    chdir: str
    """Where the sandbox's first process starts."""
    binds: tuple[Bind, ...] = ()
    """The declared host folders, after the system ones (later binds may sit on them)."""
    root: str | None = None
    """A host folder bound as ``/`` (a Harbor task's whole filesystem, which its
    commands may write anywhere in, as in a container); None: bwrap's empty root."""
    private_tmp: bool = True
    """A fresh ``/tmp`` and ``/var/tmp``.  False for a Harbor task: its ``/tmp`` lives
    in its root, kept across its commands (tmux's socket, an agent's files)."""
    harness_code: bool = False
    """The harness's Python base installation, the supervisor package's folder and
    ``prolog/`` read-only: a worker runs the supervisor and the fork server from them."""
    dev_shm: bool = False
    """A writable ``/dev/shm`` (Harbor tasks: Python's multiprocessing needs one)."""
    keep_caps: tuple[str, ...] = _SETPRIV_CAPS
    """The capabilities the sandbox's first process keeps when we are root, only to drop
    each job to the job uid (``drop_privileges``); a worker's supervisor needs more."""
    setenv: tuple[tuple[str, str], ...] = ()
    """Variables set after ``--clearenv`` beyond ``PATH`` and ``DEONTICBENCH_SANDBOX``."""
    extra: tuple[str, ...] = field(default=())
    """bwrap options that go with the kind's own mounts (``--dir`` of a work folder)."""

    def argv(self) -> list[str]:
        """The bubblewrap command line, up to (not including) the command it runs."""
        root = os.geteuid() == 0
        argv = [
            "bwrap",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            # Root on the host: no user namespace (it would map only one uid, and a job
            # needs a uid of its own), so capabilities are dropped explicitly instead.
            *(_cap_options(self.keep_caps) if root else ["--unshare-user"]),
            "--die-with-parent",
            "--new-session",
        ]
        if self.root is not None:
            argv += ["--bind", self.root, "/"]
        if self.private_tmp:
            # The private /tmp first: binds that follow may live under it (a checkout in
            # /tmp), and a tmpfs mounted after them would hide them.
            argv += ["--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
        argv += system_binds()
        if self.harness_code:
            argv += _harness_binds()
        argv += ["--proc", "/proc", "--dev", "/dev"]
        if self.dev_shm:
            argv += ["--perms", "1777", "--tmpfs", "/dev/shm"]
        for bind in self.binds:
            argv += ["--bind" if bind.writable else "--ro-bind", bind.source, bind.target]
        argv += [*self.extra, "--chdir", self.chdir, "--clearenv"]
        for name, value in (("PATH", SANDBOX_PATH), ("DEONTICBENCH_SANDBOX", "bwrap")):
            argv += ["--setenv", name, value]
        for name, value in self.setenv:
            argv += ["--setenv", name, value]
        return argv


def _cap_options(keep: tuple[str, ...]) -> list[str]:
    argv = ["--cap-drop", "ALL"]
    for cap in keep:
        argv += ["--cap-add", cap]
    return argv


def system_binds() -> list[str]:
    """Read-only binds of ``SYSTEM_DIRS`` (a symlink stays a symlink, as on the host)."""
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _harness_binds() -> list[str]:
    """The harness's interpreter, supervisor and Prolog, read-only: no home folder, no
    project files beyond those, no secrets."""
    args: list[str] = []
    for path in {sys.base_prefix, str(SUPERVISOR_DIR), str(PROLOG.resolve())}:
        if not path.startswith(("/usr/", "/etc/")) and os.path.isdir(path):
            args += ["--ro-bind", path, path]
    # prolog/ (the analyser) again at a fixed path whose parents every job uid may
    # traverse (a host path may sit under a private home).
    if PROLOG.is_dir():
        parent = os.path.dirname(SANDBOX_PROLOG)
        args += ["--perms", "0755", "--dir", os.path.dirname(parent)]
        args += ["--perms", "0755", "--dir", parent]
        args += ["--ro-bind", str(PROLOG.resolve()), SANDBOX_PROLOG]
    return args


def worker_policy(workdir: str) -> SandboxPolicy:
    """A Prolog worker: the supervisor runs in ``workdir`` (a fresh folder of the private
    /tmp) and drops each job to the worker's uid itself (``--uid``)."""
    return SandboxPolicy(
        kind="worker",
        chdir="/tmp",
        harness_code=True,
        keep_caps=_SUPERVISOR_CAPS,
        extra=("--dir", workdir),
    )


def shell_policy(workspace: Path, mount: str | None = None) -> SandboxPolicy:
    """The agents' bash tool: ``workspace`` writable at ``mount`` (``/workspace``
    unless told: ``/app`` for DAR's tasks), its home."""
    at = mount or SANDBOX_WORKSPACE
    return SandboxPolicy(
        kind="shell",
        chdir=at,
        binds=(Bind(str(Path(workspace).resolve()), at, writable=True),),
        setenv=(("HOME", at), ("LANG", "C.UTF-8")),
    )


def task_policy(root: Path, binds: tuple[Bind, ...] = ()) -> SandboxPolicy:
    """A Harbor task: ``root`` is its ``/`` (owned by the job uid, see ``own``), with
    ``binds`` (read-only: the exec server) on it."""
    return SandboxPolicy(
        kind="task",
        chdir="/",
        root=str(root),
        private_tmp=False,
        dev_shm=True,
        binds=binds,
    )


def host_env() -> dict[str, str]:
    """The environment to start bubblewrap (or, without it, a supervisor) with."""
    return dict(HOST_ENV)


def drop_privileges(uid: int | None) -> list[str]:
    """The command prefix that runs what follows as ``uid`` with no capability, no
    supplementary group and an empty bounding set (nothing when ``uid`` is None: not
    root, the user namespace already has no capability)."""
    if uid is None:
        return []
    return [
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--",
    ]


def _pids_of(uid: int) -> list[int]:
    """Every process whose real uid is ``uid``, zombies included.  The real uid is read
    from ``status``: the owner of ``/proc/<pid>`` is root for a process that is not
    dumpable, and RLIMIT_NPROC counts by real uid."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _real_uid(entry) == uid:
            found.append(int(entry))
    return found


def _real_uid(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return None


def _kill(pid: int, uid: int) -> None:
    """SIGKILL ``pid`` if it still runs as ``uid``: the pidfd pins the process before its
    uid is read again, so a pid reused in the meantime is never signalled."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if _real_uid(str(pid)) == uid:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(pidfd)


def clear_uid(uid: int, timeout_s: float = CLEAR_UID_S) -> bool:
    """Kill whatever still runs as ``uid`` and wait until the kernel has let go of every
    such process; False if some are still there after ``timeout_s``.

    A shell sandbox's processes outlive the bwrap we wait for by a few milliseconds, more
    on a loaded machine: its PID namespace is torn down after bwrap exits, and a fork
    bomb keeps forking until then.  Until they are reaped they count against the uid's
    process limit, so the uid's next command could not fork at all.  They are all in the
    sandbox's PID namespace, which the kernel reaps; a process that was not (an rlimits
    worker's) would wait for the host's init to reap it."""
    deadline = time.monotonic() + timeout_s
    while pids := _pids_of(uid):
        if time.monotonic() > deadline:
            logger.warning("uid %d still has %d processes after %.0f s", uid, len(pids), timeout_s)
            return False
        for pid in pids:
            _kill(pid, uid)
        time.sleep(0.002)
    return True


def claim_uid() -> tuple[int, IO[bytes]]:
    """Lock and return a uid no other live sandbox on this machine is using and no
    process runs as; the uid is free again when the returned handle is closed.

    A uid whose lock is free may still have processes: its last holder's sandbox is
    being torn down, or its processes wait for a reaper.  They are killed and the uid is
    left for a later claim, not waited for: an rlimits worker's processes are reaped by
    the host's init, which may take seconds."""
    _UID_LOCKS.mkdir(mode=0o700, exist_ok=True)
    for uid in _UID_RANGE:
        handle = open(_UID_LOCKS / str(uid), "wb")  # noqa: SIM115 - held for the sandbox's life
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        left = _pids_of(uid)
        if left:
            for pid in left:
                _kill(pid, uid)
            handle.close()
            logger.debug("sandbox uid %d skipped: %d processes of it left", uid, len(left))
            continue
        logger.debug("claimed sandbox uid %d", uid)
        return uid, handle
    raise SandboxError("no free sandbox uid: over 1000 sandboxes are running on this machine.")


def job_uid() -> tuple[int | None, IO[bytes] | None]:
    """The uid a new sandbox's jobs run as: a claimed one when we are root, else None
    (the caller's own uid, in a user namespace with no capability)."""
    if os.geteuid() != 0:
        return None, None
    return claim_uid()


__all__ = [
    "HOST_ENV",
    "SANDBOX_PROLOG",
    "SANDBOX_WORKSPACE",
    "SYSTEM_DIRS",
    "Bind",
    "SandboxPolicy",
    "claim_uid",
    "clear_uid",
    "drop_privileges",
    "host_env",
    "job_uid",
    "shell_policy",
    "system_binds",
    "task_policy",
    "worker_policy",
]
