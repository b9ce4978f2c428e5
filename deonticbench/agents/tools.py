"""The agents' tools: their schemas (what the model is told) and their execution.

Two tool sets (docs/agents.md):

* ``prolog``: ``list_files``, ``read_file(path, offset, limit)``, ``search(pattern,
  path)``, ``write_file(path, content)``, ``run_prolog(path)``, ``submit(answer)``.  Paths
  are relative to the workspace; absolute paths, ``..`` and symlinks are refused, so
  nothing outside the workspace is read or written.  ``run_prolog`` runs the file in the
  sandbox pool under the mode's limits (the program is prepared as the judge prepares it).
* ``shell``: ``bash(command)``, run by ``solver.shell`` in a bubblewrap sandbox whose
  only writable folder is the workspace.

A call that cannot be carried out (unknown tool, arguments of the wrong type or missing,
a refused path, a full workspace) is answered with an error observation; it never
raises.  Observations are cut to ``OBSERVATION_CHARS`` (head and tail kept), and carry
no timing, so the same calls give the same conversation (and response-cache keys) again.
"""

from __future__ import annotations

import asyncio
import os
import stat
import subprocess
import time
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import IO, Any, Protocol

from ..data.domains import Domain
from ..prompting.chat import ToolCall, ToolSpec
from ..prompting.render import stable_paths
from ..reading.programs import prepare_program
from ..solver import Execution, Limits
from ..solver.pool import claim_uid
from ..solver.shell import ShellLimits, run_shell
from .judge import MAX_JUDGED_BYTES
from .workspace import OBSERVATION_CHARS

WORKSPACE_QUOTA_BYTES = 32 << 20
"""The most a workspace may hold (32 MiB): a write past it is refused (write_file) or
undone (bash: the files the command wrote are removed)."""
MAX_WRITE_BYTES = MAX_JUDGED_BYTES
"""The largest file write_file takes (the judge reads no larger solution either)."""
MAX_CALLS_PER_TURN = 16
"""Tool calls carried out per model turn; further calls in the same turn are refused."""
DEFAULT_READ_LINES = 400
SEARCH_MATCHES = 200


def _spec(name: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    return ToolSpec(
        name,
        description,
        {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
    )


_PATH = {"type": "string", "description": "A path relative to the workspace."}
PROLOG_TOOLS: tuple[ToolSpec, ...] = (
    _spec("list_files", "List every file in the workspace with its size in bytes.", {}, []),
    _spec(
        "read_file",
        "Read a text file of the workspace, by lines.",
        {
            "path": _PATH,
            "offset": {"type": "integer", "description": "First line to show, from 1."},
            "limit": {"type": "integer", "description": "How many lines to show (400)."},
        },
        ["path"],
    ),
    _spec(
        "search",
        "Find the lines matching a regular expression (grep -E) in a file or folder.",
        {
            "pattern": {"type": "string", "description": "An extended regular expression."},
            "path": {"type": "string", "description": "File or folder; the workspace if absent."},
        },
        ["pattern"],
    ),
    _spec(
        "write_file",
        "Create or replace a text file of the workspace (folders are created).",
        {"path": _PATH, "content": {"type": "string", "description": "The whole file."}},
        ["path", "content"],
    ),
    _spec(
        "run_prolog",
        "Run a Prolog file with swipl in the sandbox; shows its status, stdout and stderr.",
        {"path": _PATH},
        ["path"],
    ),
    _spec(
        "submit",
        "End the work. In direct mode, the answer may be given here instead of a file.",
        {"answer": {"type": "string", "description": "The answer (direct mode only)."}},
        [],
    ),
)
SHELL_TOOLS: tuple[ToolSpec, ...] = (
    _spec(
        "bash",
        "Run one shell command in the workspace; shows its exit status and output.",
        {"command": {"type": "string", "description": "The command, run by bash -c."}},
        ["command"],
    ),
)
TOOLS: dict[str, tuple[ToolSpec, ...]] = {"prolog": PROLOG_TOOLS, "shell": SHELL_TOOLS}
SUBMIT = "submit"


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


class ToolError(Exception):
    """A call that cannot be carried out; its message is the observation."""


def clip(text: str, limit: int = OBSERVATION_CHARS) -> str:
    """Head and tail of a long output, with how much was left out between them."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - 2 * half} characters cut] ...\n{text[-half:]}"


def check_arguments(spec: ToolSpec, arguments: Mapping[str, Any]) -> None:
    """Arguments against the tool's schema: every required one there, none unknown, and
    each of its declared type."""
    schema = spec.parameters
    properties: Mapping[str, Any] = schema.get("properties", {})
    missing = [name for name in schema.get("required", []) if name not in arguments]
    if missing:
        raise ToolError(f"{spec.name} needs the argument(s) {', '.join(missing)}")
    unknown = [name for name in arguments if name not in properties]
    if unknown:
        raise ToolError(f"{spec.name} takes no argument(s) {', '.join(unknown)}")
    for name, value in arguments.items():
        kind = properties[name]["type"]
        ok = (
            isinstance(value, str)
            if kind == "string"
            else isinstance(value, int) and not isinstance(value, bool)
        )
        if not ok:
            raise ToolError(f"{spec.name}: {name} must be a {kind}, not {type(value).__name__}")


def resolve_path(root: Path, path: str, *, allow_root: bool = False) -> Path:
    """A workspace path, refused when absolute, climbing out with ``..``, or passing
    through a symlink (which could lead anywhere)."""
    if "\0" in path:
        raise ToolError("a path cannot hold a NUL character")
    pure = PurePosixPath(path.strip() or ".")
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


def _read_regular(path: Path, shown: str) -> str:
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


class ToolBox:
    """The tools of one trial, bound to its workspace.

    ``execute`` runs a program in the sandbox pool (the runner bounds its concurrency);
    the shell set claims an unprivileged uid for the trial when we are root."""

    def __init__(
        self,
        tool_set: str,
        root: Path,
        domain: Domain,
        execute: Execute,
        *,
        shell_limits: ShellLimits | None = None,
        limits: Limits | None = None,
    ) -> None:
        if tool_set not in TOOLS:
            raise ValueError(f"unknown tool set {tool_set!r}; choose from {', '.join(TOOLS)}")
        self.tool_set = tool_set
        self.specs = TOOLS[tool_set]
        self.root = Path(root)
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

    def close(self) -> None:
        if self._uid_lock is not None:
            self._uid_lock.close()
            self._uid_lock = self._uid = None

    async def call(self, call: ToolCall) -> Observation:
        """Carry out one call; every failure is an error observation."""
        spec = next((s for s in self.specs if s.name == call.name), None)
        try:
            if call.error is not None:
                raise ToolError(f"the call to {call.name} could not be read: {call.error}")
            if spec is None:
                known = ", ".join(s.name for s in self.specs)
                raise ToolError(f"there is no tool {call.name!r}; the tools are {known}")
            check_arguments(spec, call.arguments)
            return await self._run(call.name, dict(call.arguments))
        except ToolError as exc:
            return Observation(f"error: {exc}", is_error=True)

    async def _run(self, name: str, args: dict[str, Any]) -> Observation:
        if name == "list_files":
            return Observation(self._list_files())
        if name == "read_file":
            return Observation(self._read_file(args["path"], args.get("offset"), args.get("limit")))
        if name == "search":
            return Observation(
                await asyncio.to_thread(self._search, args["pattern"], args.get("path"))
            )
        if name == "write_file":
            return Observation(self._write_file(args["path"], args["content"]))
        if name == "run_prolog":
            return Observation(await self._run_prolog(args["path"]))
        if name == SUBMIT:
            return Observation("submitted", submitted=True, answer=args.get("answer"))
        return Observation(await asyncio.to_thread(self._bash, args["command"]))

    # --- the prolog set ---------------------------------------------------------------

    def _list_files(self) -> str:
        lines = []
        for folder, dirs, names in os.walk(self.root):
            dirs.sort()
            for name in sorted(names):
                path = Path(folder, name)
                relative = path.relative_to(self.root).as_posix()
                if path.is_symlink():
                    lines.append(f"{relative} (symlink, not followed)")
                else:
                    lines.append(f"{relative} ({path.lstat().st_size} bytes)")
            for name in dirs:
                if not any(Path(folder, name).iterdir()):
                    lines.append(f"{Path(folder, name).relative_to(self.root).as_posix()}/ (empty)")
        return clip("\n".join(lines) or "(the workspace is empty)")

    def _read_file(self, path: str, offset: int | None, limit: int | None) -> str:
        text = _read_regular(resolve_path(self.root, path), path)
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
        return clip(head + "\n" + "\n".join(chosen))

    def _search(self, pattern: str, path: str | None) -> str:
        target = resolve_path(self.root, path or ".", allow_root=True)
        if "\0" in pattern:
            raise ToolError("a pattern cannot hold a NUL character")
        relative = target.relative_to(self.root).as_posix() if target != self.root else "."
        try:
            found = subprocess.run(
                [
                    "grep",
                    "-rnIE",
                    "--no-messages",
                    "-m",
                    str(SEARCH_MATCHES),
                    "-e",
                    pattern,
                    "--",
                    relative,
                ],
                cwd=self.root,
                capture_output=True,
                timeout=10,
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
            )
        except subprocess.TimeoutExpired:
            raise ToolError("the search took longer than 10 s") from None
        if found.returncode == 2:
            raise ToolError(
                f"grep: {found.stderr.decode(errors='replace').strip() or 'bad pattern'}"
            )
        text = found.stdout.decode("utf-8", errors="replace")
        return clip(text.strip() or "no match")

    def _write_file(self, path: str, content: str) -> str:
        target = resolve_path(self.root, path)
        data = content.encode("utf-8", errors="surrogatepass")
        if len(data) > MAX_WRITE_BYTES:
            raise ToolError(f"the content is larger than {MAX_WRITE_BYTES} bytes")
        old = target.lstat().st_size if target.exists() else 0
        if workspace_bytes(self.root) - old + len(data) > WORKSPACE_QUOTA_BYTES:
            raise ToolError(
                f"the workspace would exceed its quota of {WORKSPACE_QUOTA_BYTES} bytes"
            )
        if target.is_dir():
            raise ToolError(f"{path} is a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return f"wrote {len(data)} bytes to {path}"

    async def _run_prolog(self, path: str) -> str:
        text = _read_regular(resolve_path(self.root, path), path)
        if len(text.encode("utf-8", errors="replace")) > MAX_JUDGED_BYTES:
            raise ToolError(f"{path} is larger than {MAX_JUDGED_BYTES} bytes")
        prepared = prepare_program(self.domain, text)
        limits = replace(self.limits, timeout_s=self._within(self.limits.timeout_s))
        execution = await self.execute(prepared.text, limits)
        # The harness's own run of these bytes under the standard limits: the judge may
        # take it instead of running the identical program again.
        self.last_run = (prepared.text, execution) if limits == self.limits else None
        return execution_report(execution, path)

    def _within(self, timeout_s: float) -> float:
        """A tool's time limit, cut so that it ends by the trial's deadline."""
        if self.deadline is None:
            return timeout_s
        return max(0.05, min(timeout_s, self.deadline - time.monotonic()))

    # --- the shell set ----------------------------------------------------------------

    def _bash(self, command: str) -> str:
        if "\0" in command:
            raise ToolError("a command cannot hold a NUL character")
        if self._uid is None and os.geteuid() == 0:
            self._uid, self._uid_lock = claim_uid()
        before = _snapshot(self.root)
        limits = replace(self.shell_limits, timeout_s=self._within(self.shell_limits.timeout_s))
        result = run_shell(self.root, command, uid=self._uid, limits=limits)
        status = (
            f"timed out after {limits.timeout_s:.3g} s"
            if result.timed_out
            else f"exit status {result.exit_code}"
        )
        note = ""
        if workspace_bytes(self.root) > WORKSPACE_QUOTA_BYTES:
            removed = _undo_writes(self.root, before)
            note = (
                f"\nerror: the workspace exceeded its quota of {WORKSPACE_QUOTA_BYTES} bytes; "
                f"the {removed} file(s) this command wrote were removed"
            )
        return f"{status}\n{clip(result.output) or '(no output)'}{note}"


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
