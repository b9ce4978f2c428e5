"""What every tool of a trial works with: its state, its result, its errors, its limits.

``ToolState`` is one trial's binding of the tools (the workspace, the domain, the sandbox
runner, the limits, the deadline, the harness's last run of a program); the handlers of
``file_tools`` and ``shell_tool`` take it, and ``tools.ToolBox`` adds the dispatch
through the one table (``tool_table``).  Kept apart from both so that the handlers, the
table and the dispatch import it and not each other.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import IO, Protocol

from ..data.domains import Domain
from ..solver import Execution, Limits, ShellLimits, claim_uid
from .judge import MAX_JUDGED_BYTES
from .workspace import OBSERVATION_CHARS

WORKSPACE_QUOTA_BYTES = 32 << 20
"""The most a workspace may hold (32 MiB): a write past it is refused (write_file) or
undone (bash: the files the command wrote are removed)."""
MAX_WRITE_BYTES = MAX_JUDGED_BYTES
"""The largest file write_file takes (the judge reads no larger solution either)."""
MAX_CALLS_PER_TURN = 16
"""Tool calls carried out per model turn; further calls in the same turn are refused."""
TOO_MANY_CALLS = f"error: at most {MAX_CALLS_PER_TURN} calls are run per turn"
"""The observation of each call past ``MAX_CALLS_PER_TURN`` (the loop's and inspect's)."""
DEFAULT_READ_LINES = 400
SEARCH_MATCHES = 200


class Execute(Protocol):
    """Runs a program in the sandbox pool (the runner's, which bounds concurrency);
    ``limits`` None: the pool's own."""

    def __call__(self, program: str, limits: Limits | None = None) -> Awaitable[Execution]: ...


@dataclass(frozen=True)
class Observation:
    """What a tool call gave back."""

    text: str
    is_error: bool = False
    submitted: bool = False
    answer: str | None = None
    """The text passed to ``submit`` (direct mode reads it when there is no answer file)."""

    def noted(self, note: str) -> Observation:
        """The same observation with ``note`` after it (a rail telling the agent something
        about the call: a repeat, an argument cut at its bound)."""
        return replace(self, text=f"{self.text}\n\n{note}")


class ToolError(Exception):
    """A call that cannot be carried out; its message is the observation."""


def clip(text: str, limit: int = OBSERVATION_CHARS) -> str:
    """Head and tail of a long output, with how much was left out between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - 2 * half} characters cut] ...\n{text[-half:]}"


def _under_mount(pure: PurePosixPath, mount: str | None) -> PurePosixPath:
    """An absolute path under the folder the workspace is shown at (``/app`` under the
    dar protocol, whose instruction names /app/statute.txt), as a workspace path."""
    if mount is None or not pure.is_absolute():
        return pure
    try:
        return PurePosixPath(".") / pure.relative_to(mount)
    except ValueError:
        return pure


def resolve_path(
    root: Path, path: str, *, allow_root: bool = False, mount: str | None = None
) -> Path:
    """A workspace path, refused when absolute (unless under ``mount``, where the
    workspace is shown), climbing out with ``..``, or passing through a symlink (which
    could lead anywhere)."""
    if "\0" in path:
        raise ToolError("a path cannot hold a NUL character")
    pure = _under_mount(PurePosixPath(path.strip() or "."), mount)
    if pure.is_absolute():
        raise ToolError(f"{path!r} is absolute: paths are relative to the workspace")
    if ".." in pure.parts:
        raise ToolError(f"{path!r} leaves the workspace ('..' is not allowed)")
    parts = [p for p in pure.parts if p != "."]
    if not parts and not allow_root:
        raise ToolError("name a file of the workspace")
    current = root
    for part in parts:
        current = current / part
        if current.is_symlink():
            raise ToolError(f"{path!r} goes through a symlink, which is not followed")
    return current


def workspace_bytes(root: Path) -> int:
    total = 0
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                pass
    return total


class ToolState:
    """One trial's tools, bound to its workspace (what every handler reads and updates).

    ``execute`` runs a program in the sandbox pool (the runner bounds its concurrency);
    the shell set claims an unprivileged uid for the trial when we are root."""

    def __init__(
        self,
        root: Path,
        domain: Domain,
        execute: Execute,
        *,
        shell_limits: ShellLimits | None = None,
        limits: Limits | None = None,
        mount: str | None = None,
    ) -> None:
        self.root = Path(root)
        self.mount = mount
        """Where the agent is told its workspace is (``/app`` under the dar protocol):
        absolute paths under it name workspace files, and the shell shows it there."""
        self.domain = domain
        self.execute = execute
        self.shell_limits = shell_limits or ShellLimits()
        self.limits = limits or Limits()
        self.last_run: tuple[str, Execution] | None = None
        """The last program run_prolog ran under the standard limits, and its run."""
        self.deadline: float | None = None
        """The trial's end (``time.monotonic()``): no tool runs past it."""
        self._uid: int | None = None
        self._uid_lock: IO[bytes] | None = None

    def shell_uid(self) -> int | None:
        """The unprivileged uid the shell runs as (claimed once per trial when root)."""
        if self._uid is None and os.geteuid() == 0:
            self._uid, self._uid_lock = claim_uid()
        return self._uid

    def close(self) -> None:
        if self._uid_lock is not None:
            self._uid_lock.close()
            self._uid_lock = self._uid = None

    def path(self, path: str, *, allow_root: bool = False) -> Path:
        """``resolve_path`` in this trial's workspace."""
        return resolve_path(self.root, path, allow_root=allow_root, mount=self.mount)

    def within(self, timeout_s: float) -> float:
        """A tool's time limit, cut so that it ends by the trial's deadline."""
        if self.deadline is None:
            return timeout_s
        return max(0.05, min(timeout_s, self.deadline - time.monotonic()))
