"""The handler of the ``shell`` tool set: one bash command in the sandbox.

The command runs through ``solver.shell.run_shell`` in a bubblewrap sandbox whose only
writable folder is the workspace, as an unprivileged uid when the harness is root.  A
command that pushes the workspace past its quota has its writes undone.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..solver import run_shell
from .tool_base import WORKSPACE_QUOTA_BYTES, Observation, ToolError, ToolState, clip
from .tool_base import workspace_bytes as _workspace_bytes


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            out[path] = (info.st_size, info.st_mtime_ns)
    return out


def _undo_writes(root: Path, before: dict[str, tuple[int, int]]) -> int:
    """Remove every file a command created or changed (a write past the quota)."""
    removed = 0
    for path, now in _snapshot(root).items():
        if before.get(path) != now:
            try:
                os.unlink(path)
                removed += 1
            except OSError:
                pass
    return removed


def _bash(state: ToolState, command: str) -> str:
    if "\0" in command:
        raise ToolError("a command cannot hold a NUL character")
    uid = state.shell_uid()
    before = _snapshot(state.root)
    limits = replace(state.shell_limits, timeout_s=state.within(state.shell_limits.timeout_s))
    result = run_shell(state.root, command, uid=uid, limits=limits, mount=state.mount)
    status = (
        f"timed out after {limits.timeout_s:.3g} s"
        if result.timed_out
        else f"exit status {result.exit_code}"
    )
    note = ""
    if _workspace_bytes(state.root) > WORKSPACE_QUOTA_BYTES:
        removed = _undo_writes(state.root, before)
        note = (
            f"\nerror: the workspace exceeded its quota of {WORKSPACE_QUOTA_BYTES} bytes; "
            f"the {removed} file(s) this command wrote were removed"
        )
    return f"{status}\n{clip(result.output) or '(no output)'}{note}"


async def bash(state: ToolState, args: dict[str, Any]) -> Observation:
    # The sandboxed command blocks: a thread keeps the event loop serving other trials.
    return Observation(await asyncio.to_thread(_bash, state, args["command"]))
