"""``BwrapEnvironment``: a Harbor environment on bubblewrap, for hosts without Docker.

    harbor run -p tasks/ -a oracle -e deonticbench.integrations.harbor:BwrapEnvironment

Each environment is a folder on the host (its root) mounted as the sandbox's ``/``; the
host's system folders (``/usr``, ``/etc``, ``/lib``...) are bound over it read-only, so
the only writable places are the root's (``/app``, ``/logs``, ``/tests``, ``/tmp``...),
and nothing else of the host (no home folder, no project, no data) is visible.  There
is no network.  One sandbox runs per environment, started by ``start`` and killed by
``stop`` with every process in it (its PID namespace ends), so a tmux server started by
one command is there for the next, as in a container.

The Dockerfile is not built: its ``COPY`` and ``WORKDIR`` lines are honoured, its
``FROM`` and ``RUN`` lines ignored, so the host must have what the task needs (for the
DeonticBench tasks: ``swipl``, ``python3`` and ``bash``; ``tmux`` for terminus-2), and
``start`` says in one sentence what is missing.  The task's CPU count becomes an
affinity mask and its memory an address-space limit of every process.  Commands run as
the sandbox's one user whatever user Harbor asks for.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from harbor.environments.base import BaseEnvironment, ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

from ...errors import DeonticBenchError

SYSTEM_DIRS = ("/usr", "/etc", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/opt")
"""Host folders the sandbox sees, read-only; every other path lives in its root."""
REQUIRED_TOOLS = ("bash", "swipl", "python3")
"""What the DeonticBench tasks need on the host (their Dockerfile installs them)."""
_SERVER = Path(__file__).with_name("_exec_server.py")
_SERVER_DIR = "/.deonticbench-exec"
_SOCKET = ".exec.sock"
_START_TIMEOUT_S = 30.0


class EnvironmentStartError(DeonticBenchError):
    """The host lacks what a BwrapEnvironment needs."""


def missing_tools(tools: tuple[str, ...] = REQUIRED_TOOLS) -> list[str]:
    return [tool for tool in ("bwrap", *tools) if shutil.which(tool) is None]


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
        self._workdir = self.task_env_config.workdir or "/app"

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
        return self._root.joinpath(*posix.parts[1:])

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
        argv = [
            "bwrap",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            *(["--cap-drop", "ALL"] if os.geteuid() == 0 else ["--unshare-user"]),
            "--die-with-parent",
            "--bind",
            str(self._root),
            "/",
        ]
        for path in SYSTEM_DIRS:
            if os.path.islink(path):
                argv += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                argv += ["--ro-bind", path, path]
        argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/dev/shm"]
        argv += ["--ro-bind", str(_SERVER.parent), _SERVER_DIR, "--chdir", "/"]
        return argv

    async def start(self, force_build: bool) -> None:
        missing = missing_tools()
        if missing:
            raise EnvironmentStartError(
                "BwrapEnvironment runs the task on this host, which lacks "
                f"{', '.join(missing)}: install them (the task's Dockerfile is not built)."
            )
        for name in ("tmp", "root", "logs/agent", "logs/verifier", "logs/artifacts"):
            (self._root / name).mkdir(parents=True, exist_ok=True)
        os.chmod(self._root / "tmp", 0o1777)
        self._writable(self._workdir).mkdir(parents=True, exist_ok=True)
        self._seed_from_dockerfile()
        cpus = int(self.task_env_config.cpus or 0)
        memory = int(self.task_env_config.memory_mb or 0)
        info_read, info_write = os.pipe()
        argv = [
            *self._bwrap_argv(),
            "--info-fd",
            str(info_write),
            _python(),
            "-I",
            "-S",
            f"{_SERVER_DIR}/{_SERVER.name}",
            f"/{_SOCKET}",
            str(cpus),
            str(memory),
        ]
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(info_write,),
                start_new_session=True,
            )
        finally:
            os.close(info_write)
        with os.fdopen(info_read, "rb") as info:
            raw = await asyncio.to_thread(info.read)
        with contextlib.suppress(ValueError):
            self._sandbox_pid = int(json.loads(raw or b"{}").get("child-pid") or 0) or None
        assert self._proc.stdout is not None
        try:
            line = await asyncio.wait_for(self._proc.stdout.readline(), _START_TIMEOUT_S)
        except TimeoutError:
            line = b""
        if line.strip() != b"ready":
            err = b""
            if self._proc.stderr is not None and self._proc.returncode is not None:
                err = await self._proc.stderr.read()
            await self.stop(delete=True)
            raise EnvironmentStartError(
                f"the bubblewrap sandbox did not start: {err.decode(errors='replace').strip()}"
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
        if delete:
            shutil.rmtree(self._root, ignore_errors=True)

    # --- files ----------------------------------------------------------------------

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        target = self._writable(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source_path, target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        shutil.copytree(source_dir, self._writable(target_dir), dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self._host(source_path), target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        shutil.copytree(self._host(source_dir), target_dir, dirs_exist_ok=True, symlinks=True)

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
