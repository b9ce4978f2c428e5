"""The handlers of the ``prolog`` tool set: the workspace's files, Prolog runs, submit.

Each handler takes the trial's ``ToolState`` and its already-checked arguments and gives
back an ``Observation``, or raises ``ToolError`` (its message becomes the observation).
Their names, descriptions and argument schemas are their entries in ``tool_table``.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..prompting.render import stable_paths
from ..reading.judging import Program, ajudge_attempt
from ..solver import Execution
from .judge import MAX_JUDGED_BYTES
from .tool_base import (
    DEFAULT_READ_LINES,
    MAX_WRITE_BYTES,
    SEARCH_MATCHES,
    WORKSPACE_QUOTA_BYTES,
    Observation,
    ToolError,
    ToolState,
    clip,
    workspace_bytes,
)
from .workspace import OBSERVATION_CHARS


def read_regular(path: Path, shown: str) -> str:
    """The text of a regular file of the workspace (never through a symlink)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ToolError(f"{shown} does not exist") from None
    except OSError as exc:
        raise ToolError(f"{shown} cannot be read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"{shown} is a folder")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"{shown} is not a regular file")
        data = handle.read(WORKSPACE_QUOTA_BYTES)
    return data.decode("utf-8", errors="replace")


def execution_report(execution: Execution, path: str) -> str:
    """What run_prolog shows: status, limit, exit code, stdout and stderr, with the
    sandbox's job folder replaced by the file's workspace name."""
    head = f"status: {execution.status}"
    if execution.limit:
        head += f" (limit hit: {execution.limit})"
    if execution.exit_code is not None:
        head += f", exit code {execution.exit_code}"
    stdout = stable_paths(execution.stdout).replace("program.pl", path)
    stderr = stable_paths(execution.stderr).replace("program.pl", path)
    half = OBSERVATION_CHARS // 2
    shown_out = clip(stdout, half) or "(empty)"
    shown_err = clip(stderr, half) or "(empty)"
    return f"{head}\nstdout:\n{shown_out}\nstderr:\n{shown_err}"


async def list_files(state: ToolState, args: dict[str, Any]) -> Observation:
    lines = []
    for folder, dirs, names in os.walk(state.root):
        dirs.sort()
        for name in sorted(names):
            path = Path(folder, name)
            relative = path.relative_to(state.root).as_posix()
            if path.is_symlink():
                lines.append(f"{relative} (symlink, not followed)")
            else:
                lines.append(f"{relative} ({path.lstat().st_size} bytes)")
        for name in dirs:
            if not any(Path(folder, name).iterdir()):
                lines.append(f"{Path(folder, name).relative_to(state.root).as_posix()}/ (empty)")
    return Observation(clip("\n".join(lines) or "(the workspace is empty)"))


async def read_file(state: ToolState, args: dict[str, Any]) -> Observation:
    path: str = args["path"]
    offset: int | None = args.get("offset")
    limit: int | None = args.get("limit")
    text = read_regular(state.path(path), path)
    lines = text.splitlines()
    first = max(1, offset or 1)
    count = DEFAULT_READ_LINES if limit is None else max(0, limit)
    chosen = lines[first - 1 : first - 1 + count]
    last = first + len(chosen) - 1
    head = (
        f"{path}: lines {first}-{last} of {len(lines)}"
        if chosen
        else f"{path}: no lines from {first} (it has {len(lines)})"
    )
    return Observation(clip(head + "\n" + "\n".join(chosen)))


def _grep(state: ToolState, pattern: str, path: str | None) -> str:
    root = state.root
    target = state.path(path or ".", allow_root=True)
    if "\0" in pattern:
        raise ToolError("a pattern cannot hold a NUL character")
    relative = target.relative_to(root).as_posix() if target != root else "."
    argv = ["grep", "-rnIE", "--no-messages", "-m", str(SEARCH_MATCHES), "-e", pattern]
    try:
        found = subprocess.run(
            [*argv, "--", relative],
            cwd=root,
            capture_output=True,
            timeout=10,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
        )
    except subprocess.TimeoutExpired:
        raise ToolError("the search took longer than 10 s") from None
    if found.returncode == 2:
        raise ToolError(f"grep: {found.stderr.decode(errors='replace').strip() or 'bad pattern'}")
    text = found.stdout.decode("utf-8", errors="replace")
    return clip(text.strip() or "no match")


async def search(state: ToolState, args: dict[str, Any]) -> Observation:
    # grep runs in a thread: the event loop keeps serving the other trials meanwhile.
    return Observation(await asyncio.to_thread(_grep, state, args["pattern"], args.get("path")))


async def write_file(state: ToolState, args: dict[str, Any]) -> Observation:
    path: str = args["path"]
    target = state.path(path)
    data = str(args["content"]).encode("utf-8", errors="surrogatepass")
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(f"the content is larger than {MAX_WRITE_BYTES} bytes")
    old = target.lstat().st_size if target.exists() else 0
    if workspace_bytes(state.root) - old + len(data) > WORKSPACE_QUOTA_BYTES:
        raise ToolError(f"the workspace would exceed its quota of {WORKSPACE_QUOTA_BYTES} bytes")
    if target.is_dir():
        raise ToolError(f"{path} is a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return Observation(f"wrote {len(data)} bytes to {path}")


async def run_prolog(state: ToolState, args: dict[str, Any]) -> Observation:
    path: str = args["path"]
    text = read_regular(state.path(path), path)
    if len(text.encode("utf-8", errors="replace")) > MAX_JUDGED_BYTES:
        raise ToolError(f"{path} is larger than {MAX_JUDGED_BYTES} bytes")
    limits = replace(state.limits, timeout_s=state.within(state.limits.timeout_s))

    async def run(program: str) -> Execution:
        return await state.execute(program, limits)

    # The program as the judge will prepare and run it (reading's one judging path).
    judged = await ajudge_attempt(Program(text), state.domain, None, run=run)
    assert judged.program is not None and judged.execution is not None
    execution = judged.execution
    # The harness's own run of these bytes under the standard limits: the judge may
    # take it instead of running the identical program again.
    state.last_run = (judged.program, execution) if limits == state.limits else None
    return Observation(execution_report(execution, path))


async def submit(state: ToolState, args: dict[str, Any]) -> Observation:
    return Observation("submitted", submitted=True, answer=args.get("answer"))
