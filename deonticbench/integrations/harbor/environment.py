"""``BwrapEnvironment``: a Harbor environment on bubblewrap, for hosts without Docker.

    harbor run -p tasks/ -a oracle -e deonticbench.integrations.harbor:BwrapEnvironment

The sandbox is the harness's one sandbox policy (``solver.sandbox.task_policy``): each
environment is a folder on the host (its root) mounted as the sandbox's ``/``; the
host's system folders (``/usr``, ``/etc``, ``/lib``...) are bound over it read-only, so
the only writable places are the root's (``/app``, ``/logs``, ``/tests``, ``/tmp``...),
and nothing else of the host (no home folder, no project, no data) is visible.  There
is no network.  One sandbox runs per environment, started by ``start`` and killed by
``stop`` with every process in it (its PID namespace ends), so a tmux server started by
one command is there for the next, as in a container.

Nothing of the harness's environment reaches a trial: bubblewrap is started with
``sandbox.HOST_ENV`` and clears the sandbox's environment, and every command gets only
``_exec_server.BASE_ENV`` and the ``env`` Harbor passes to ``exec`` (the task's and the
agent's variables).  When the harness runs as root, the whole sandbox but bubblewrap's
own first process runs as an unprivileged uid claimed for the environment, with no
capability: the exec server is started under it, so every command Harbor sends (the
oracle, the verifier's ``tests/test.sh``, terminus-2's tmux) is that uid's, and it can
read no root process's ``/proc/*/environ``.  Running the server itself as that uid, not
dropping per command, leaves no root process in the sandbox for a command to reach.
What Harbor needs to write is granted by ownership: the root folder and every file
seeded into it or uploaded (``/app``, ``/logs/...``, ``/tests``, ``/solution``) belong
to that uid, and ``/tmp`` (tmux's socket) is world-writable with the sticky bit.  Run
against it: the ``oracle`` agent and ``terminus-2`` (a scripted model on a loopback
server), with Harbor's verifier, in ``tests/integrations/test_harbor_run.py`` and
``test_harbor_environment.py``.

The Dockerfile is not built: its ``COPY`` and ``WORKDIR`` lines are honoured, its
``FROM`` and ``RUN`` lines ignored, so the host must have what the task needs (for the
DeonticBench tasks: ``swipl``, ``python3`` and ``bash``; ``tmux`` for terminus-2), and
``start`` says in one sentence what is missing.  The task's CPU count becomes an
affinity mask and its memory an address-space limit of every process.  Commands run as
the sandbox's one unprivileged user whatever user Harbor asks for.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import IO, Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

from ...errors import DeonticBenchError
from ...solver import SYSTEM_DIRS, Bind, drop_privileges, host_env, job_uid, task_policy

logger = logging.getLogger(__name__)
REQUIRED_TOOLS = ("bash", "swipl", "python3")
"""What the DeonticBench tasks need on the host (their Dockerfile installs them)."""
FALLBACK_WORKDIR = "/app"
"""Where a task works when neither its task.toml nor its Dockerfile names a directory
(the harness's tasks and DAR's both name ``/app``, each for its own reason:
``verifier.TASK_WORKDIR``, ``reading.dar_verifier.DAR_MOUNT``)."""
_SERVER = Path(__file__).with_name("_exec_server.py")
_SERVER_DIR = "/.deonticbench-exec"
_SOCKET = ".exec.sock"
_START_TIMEOUT_S = 30.0


class EnvironmentStartError(DeonticBenchError):
    """The host lacks what a BwrapEnvironment needs."""


def missing_tools(tools: tuple[str, ...] = REQUIRED_TOOLS) -> list[str]:
    return [tool for tool in ("bwrap", *tools) if shutil.which(tool) is None]


_SAID: set[str] = set()


def _said(error: EnvironmentStartError) -> EnvironmentStartError:
    """The error, its sentence also printed once per process: Harbor's summary shows
    only the exception's type ("EnvironmentStartError 1") and keeps the sentence in
    each trial's exception.txt, where nobody looks first."""
    text = str(error)
    if text not in _SAID:
        _SAID.add(text)
        print(f"deonticbench: {text}", file=sys.stderr, flush=True)
    return error


def _python() -> str:
    """An interpreter visible inside the sandbox (the system's, under /usr)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    raise EnvironmentStartError(
        "BwrapEnvironment needs a python3 under /usr/bin or /usr/local/bin on the host."
    )


class BwrapEnvironment(BaseEnvironment):
    """Harbor's ``BaseEnvironment`` on bubblewrap: see the module's docstring."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._root = Path(tempfile.mkdtemp(prefix="dbh-"))
        self._proc: asyncio.subprocess.Process | None = None
        self._sandbox_pid: int | None = None
        self._workdir = self.task_env_config.workdir or FALLBACK_WORKDIR
        self._uid: int | None = None
        self._uid_lock: IO[bytes] | None = None

    @staticmethod
    def type() -> str:
        return "deonticbench-bwrap"

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(disable_internet=True)

    def _validate_definition(self) -> None:
        """Nothing to build: the Dockerfile's COPY and WORKDIR are read at start."""

    # --- paths ----------------------------------------------------------------------

    def _host(self, path: str) -> Path:
        """Where a sandbox path lives on the host: in the root unless it is a system one."""
        posix = PurePosixPath(path if path.startswith("/") else f"{self._workdir}/{path}")
        if any(posix.is_relative_to(d) for d in SYSTEM_DIRS):
            return Path(posix)
        host = self._root.joinpath(*posix.parts[1:])
        # The task's files are the job uid's, symlinks included, and the host resolves
        # them: one pointing out of the root (at the host's /etc, say) must not let an
        # upload write, or a download read, a host file as root.
        if not host.resolve().is_relative_to(self._root.resolve()):
            raise PermissionError(f"{path} leads out of the BwrapEnvironment's root")
        return host

    def _writable(self, path: str) -> Path:
        host = self._host(path)
        if not host.is_relative_to(self._root):
            raise PermissionError(f"{path} is read-only in a BwrapEnvironment")
        return host

    def _seed_from_dockerfile(self) -> None:
        """Honour the Dockerfile's WORKDIR and plain ``COPY src dst`` lines."""
        dockerfile = self.environment_dir / "Dockerfile"
        if not dockerfile.is_file():
            return
        workdir = "/"
        for raw in dockerfile.read_text(encoding="utf-8").splitlines():
            words = raw.split()
            if not words or words[0].startswith("#"):
                continue
            keyword = words[0].upper()
            if keyword == "WORKDIR" and len(words) == 2:
                workdir = str(PurePosixPath(workdir, words[1]))
                self._writable(workdir).mkdir(parents=True, exist_ok=True)
            elif keyword == "COPY" and len(words) == 3 and not words[1].startswith("--"):
                source = self.environment_dir / words[1]
                target = words[2] if words[2].startswith("/") else f"{workdir}/{words[2]}"
                host = self._writable(target)
                if source.is_dir():
                    shutil.copytree(source, host, dirs_exist_ok=True)
                elif source.is_file():
                    if target.endswith("/"):
                        host = host / source.name
                    host.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, host)
        if not self.task_env_config.workdir:
            self._workdir = workdir if workdir != "/" else self._workdir

    # --- life cycle -----------------------------------------------------------------

    def _bwrap_argv(self) -> list[str]:
        """The sandbox: the one policy's ``task_policy``, the exec server read-only."""
        return task_policy(self._root, (Bind(str(_SERVER.parent), _SERVER_DIR),)).argv()

    def _own(self, path: Path) -> None:
        """Give ``path`` (and all under it) to the job uid: what the trial is given to
        write is granted by ownership, never by running as root."""
        if self._uid is None:
            return
        os.lchown(path, self._uid, self._uid)
        if path.is_dir() and not path.is_symlink():
            for folder, dirs, files in os.walk(path):
                for name in (*dirs, *files):
                    os.lchown(os.path.join(folder, name), self._uid, self._uid)

    def _make_dirs(self, host: Path) -> None:
        """``mkdir -p`` in the root, every folder it makes owned by the job uid."""
        missing = [
            p for p in (host, *host.parents) if p.is_relative_to(self._root) and not p.exists()
        ]
        host.mkdir(parents=True, exist_ok=True)
        for folder in missing:
            if folder != self._root:
                self._own_one(folder)

    def _own_one(self, path: Path) -> None:
        if self._uid is not None:
            os.lchown(path, self._uid, self._uid)

    async def start(self, force_build: bool) -> None:
        missing = missing_tools()
        if missing:
            raise _said(
                EnvironmentStartError(
                    "BwrapEnvironment runs the task on this host, which lacks "
                    f"{', '.join(missing)}: install them (the task's Dockerfile is not built)."
                )
            )
        self._lay_out_root()
        info_read, info_write = os.pipe()
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self._server_argv(info_write),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(info_write,),
                start_new_session=True,
                # bwrap's own process (the sandbox's PID 1) keeps the environment it is
                # started with in /proc/1/environ: nothing of the harness's.
                env=host_env(),
            )
        finally:
            os.close(info_write)
        with os.fdopen(info_read, "rb") as info:
            raw = await asyncio.to_thread(info.read)
        with contextlib.suppress(ValueError):
            self._sandbox_pid = int(json.loads(raw or b"{}").get("child-pid") or 0) or None
        await self._await_ready()
        logger.debug(
            "bwrap environment %s started in %s (uid %s)", self.session_id, self._root, self._uid
        )

    def _lay_out_root(self) -> None:
        """Claim the job uid (once) and lay out the task's root: its standard folders, the
        workdir and what the task's Dockerfile copies in, all of it owned by the job uid
        (the task's commands run as that uid)."""
        if self._uid_lock is None:
            self._uid, self._uid_lock = job_uid()
        for name in ("tmp", "root", "logs/agent", "logs/verifier", "logs/artifacts"):
            (self._root / name).mkdir(parents=True, exist_ok=True)
        os.chmod(self._root / "tmp", 0o1777)
        self._writable(self._workdir).mkdir(parents=True, exist_ok=True)
        self._seed_from_dockerfile()
        # The whole root is the task's: its commands run as the job uid.
        os.chmod(self._root, 0o755)
        self._own(self._root)

    def _server_argv(self, info_fd: int) -> list[str]:
        """The exec server's command line in the sandbox: bwrap (telling its sandbox's pid
        on ``info_fd``), the drop to the job uid, then the server on its socket with the
        task's cpu and memory limits (0: none)."""
        cpus = int(self.task_env_config.cpus or 0)
        memory = int(self.task_env_config.memory_mb or 0)
        return [
            *self._bwrap_argv(),
            "--info-fd",
            str(info_fd),
            *drop_privileges(self._uid),
            _python(),
            "-I",
            "-S",
            f"{_SERVER_DIR}/{_SERVER.name}",
            f"/{_SOCKET}",
            str(cpus),
            str(memory),
        ]

    async def _await_ready(self) -> None:
        """Wait for the exec server's ``ready``; when it does not come in time, stop the
        environment and raise EnvironmentStartError with what the server said."""
        assert self._proc is not None and self._proc.stdout is not None
        try:
            line = await asyncio.wait_for(self._proc.stdout.readline(), _START_TIMEOUT_S)
        except TimeoutError:
            line = b""
        if line.strip() != b"ready":
            err = b""
            if self._proc.stderr is not None and self._proc.returncode is not None:
                err = await self._proc.stderr.read()
            await self.stop(delete=True)
            raise _said(
                EnvironmentStartError(
                    f"the bubblewrap sandbox did not start: {err.decode(errors='replace').strip()}"
                )
            )

    async def stop(self, delete: bool) -> None:
        """Kill the sandbox's first process: the kernel then kills every process in its
        PID namespace (a tmux server, anything left in the background)."""
        for pid in (self._sandbox_pid, self._proc.pid if self._proc else None):
            if pid:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        if self._proc is not None and self._proc.returncode is None:
            await self._proc.wait()
        self._proc = None
        self._sandbox_pid = None
        if self._uid_lock is not None:
            # Every process of the uid was in the PID namespace that just ended.
            self._uid_lock.close()
            self._uid, self._uid_lock = None, None
        if delete:
            shutil.rmtree(self._root, ignore_errors=True)
        logger.debug("bwrap environment %s stopped", self.session_id)

    # --- files ----------------------------------------------------------------------

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = self._writable(target_path)
        self._make_dirs(target.parent)
        shutil.copy2(source_path, target)
        self._own_one(target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        target = self._writable(target_dir)
        self._make_dirs(target.parent)
        shutil.copytree(source_dir, target, dirs_exist_ok=True)
        self._own(target)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self._host(source_path), target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        source = self._host(source_dir)
        if not source.exists() and self._proc is None:
            # Never started (Harbor still collects the logs of a trial whose start
            # failed): nothing to download, and no second traceback over the first.
            Path(target_dir).mkdir(parents=True, exist_ok=True)
            return
        shutil.copytree(source, target_dir, dirs_exist_ok=True, symlinks=True)

    # --- commands -------------------------------------------------------------------

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResult:
        if self._proc is None:
            raise RuntimeError("the BwrapEnvironment is not started")
        merged = self._merge_env(env) or {}
        request = {
            "command": command,
            "cwd": cwd or self._workdir,
            "env": merged,
            "timeout": timeout_sec,
        }
        reader, writer = await asyncio.open_unix_connection(str(self._root / _SOCKET))
        try:
            writer.write(json.dumps(request).encode() + b"\n")
            await writer.drain()
            raw = await reader.readline()
        finally:
            writer.close()
            with contextlib.suppress(OSError, RuntimeError):
                await writer.wait_closed()
        if not raw:
            raise RuntimeError(f"the sandbox ended while running {command[:80]!r}")
        reply = json.loads(raw)
        if reply.get("timed_out"):
            raise RuntimeError(f"Command timed out after {timeout_sec} seconds")
        return ExecResult(stdout=reply["stdout"], stderr=reply["stderr"], return_code=reply["rc"])


__all__ = ["REQUIRED_TOOLS", "BwrapEnvironment", "EnvironmentStartError", "missing_tools"]
