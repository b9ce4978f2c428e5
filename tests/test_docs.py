"""The docs are tests: every shell command shown in README.md and docs/*.md either runs
here, offline, or says in the doc why it cannot; every repository path a doc cites exists,
and every ``deonticbench.`` dotted name it cites resolves.

A shell block (a fenced block marked ``sh``/``bash``/``shell``/``console``, or a fenced
or indented block whose first word is a command such as ``deonticbench``, ``make`` or
``harbor``) must be preceded by a ``<!-- doctest ... -->`` comment (docs/architecture.md,
"Docs that run", lists its directives).  The commands of one doc run in order, in one
temporary folder that is also ``$HOME``, as a reader would type them, with the data
mirror, no provider key and no network.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

from deonticbench.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
DATA = os.environ.get("DEONTICBENCH_DATA", "")
SHELL_INFO = {"sh", "bash", "shell", "console"}
COMMAND_WORDS = {
    "deonticbench", "make", "harbor", "inspect", "pip", "python", "python3", "export",
    "vllm", "ray", "cd", "ls", "cat", "swipl", "uvicorn",
}  # fmt: skip
COMMAND_TIMEOUT_S = 900
"""The longest a documented command may take here (the Harbor oracle run is the longest)."""
REPO_PREFIXES = (
    "deonticbench/", "tests/", "prompts/", "prolog/", "eval/", "scripts/", "benchmarks/",
    "docs/", "data/manifest.json", ".ci/",
)  # fmt: skip
PROVIDER_KEYS = re.compile(r".*(_API_KEY|_TOKEN|_SECRET)$")


@dataclass
class Block:
    """One shell block of a doc, with what its ``doctest`` comment says about it."""

    doc: Path
    line: int
    commands: list[str]
    marked: bool = False
    skip_reason: str | None = None
    skipped: dict[int, str] = field(default_factory=dict)
    together: list[set[int]] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    then: list[str] = field(default_factory=list)
    replace: list[tuple[str, str]] = field(default_factory=list)
    expect: list[tuple[int | None, str]] = field(default_factory=list)
    absent: list[tuple[int | None, str]] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def where(self) -> str:
        shown = self.doc.relative_to(REPO) if self.doc.is_relative_to(REPO) else self.doc
        return f"{shown}:{self.line}"

    def prepared(self, number: int) -> str:
        command = self.commands[number - 1]
        for old, new in self.replace:
            command = command.replace(old, new)
        return command


def _logical_commands(lines: list[str]) -> list[str]:
    """The block's commands: backslash continuations joined, blank lines and prompts
    (``$ ``) dropped; a trailing ``# comment`` stays (bash reads it as one)."""
    commands: list[str] = []
    pending = ""
    for raw in lines:
        text = raw.rstrip()
        if not pending and not text.strip():
            continue
        if not pending and text.lstrip().startswith("$ "):
            text = text.lstrip()[2:]
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        commands.append((pending + text).strip())
        pending = ""
    if pending:
        commands.append(pending.strip())
    return commands


def _is_shell(info: str | None, lines: list[str]) -> bool:
    if info in SHELL_INFO:
        return True
    if info not in (None, ""):
        return False
    first = next((x.strip() for x in lines if x.strip()), "")
    word = first.split()[0] if first else ""
    return word.removeprefix("$") in COMMAND_WORDS or first.startswith("$ ")


def _read_marker(text: str, block: Block) -> None:
    """Apply the directives of one ``<!-- doctest ... -->`` comment to ``block``."""
    body = text.strip().removeprefix("<!--").removesuffix("-->").strip()
    body = body.removeprefix("doctest").lstrip(":").strip()
    block.marked = True
    for directive in (d.strip() for d in body.splitlines()):
        if not directive or directive == "run":
            continue
        name, _, value = directive.partition(":")
        name, value = name.strip(), value.strip()
        words = name.split()
        if words[0] == "skip" and len(words) == 1:
            block.skip_reason = value
        elif words[0] == "skip" and len(words) == 2:
            for number in words[1].split(","):
                block.skipped[int(number)] = value
        elif words[0] == "together" and len(words) == 2:
            block.together.append({int(number) for number in words[1].split(",")})
        elif name == "setup":
            block.setup.append(value)
        elif name == "then":
            block.then.append(value)
        elif name == "replace":
            old, arrow, new = value.partition(" => ")
            if not arrow:
                block.problems.append(f"replace needs 'OLD => NEW': {directive!r}")
            block.replace.append((old, new))
        elif words[0] in ("expect", "absent"):
            wanted = block.expect if words[0] == "expect" else block.absent
            wanted.append((int(words[1]) if len(words) == 2 else None, value))
        elif name == "env":
            key, _, val = value.partition("=")
            block.env[key.strip()] = val.strip()
        else:
            block.problems.append(f"unknown doctest directive {directive!r}")


def _indented_or_gap(lines: list[str], i: int) -> bool:
    """Line ``i`` continues an indented block: indented, or blank before an indented one."""
    if lines[i].startswith("    "):
        return True
    return not lines[i].strip() and i + 1 < len(lines) and lines[i + 1].startswith("    ")


def shell_blocks(doc: Path) -> list[Block]:
    """Every shell block of ``doc`` in order, fenced or indented, with its marker."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    marker: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if re.match(r"<!-- doctest(?![\w-])", line):  # at the margin: an example is indented
            start = i
            while "-->" not in lines[i]:
                i += 1
            marker = "\n".join(lines[start : i + 1])
            i += 1
            continue
        fence = re.match(r"^(\s*)(`{3,}|~{3,})([^`]*)$", line)
        if fence:
            end = i + 1
            while end < len(lines) and not lines[end].strip().startswith(fence.group(2)):
                end += 1
            body = [x.removeprefix(fence.group(1)) for x in lines[i + 1 : end]]
            info = fence.group(3).strip().split(" ")[0]
            if _is_shell(info, body):
                blocks.append(Block(doc, i + 1, _logical_commands(body)))
                if marker is not None:
                    _read_marker(marker, blocks[-1])
            marker = None
            i = end + 1
            continue
        previous_blank = i == 0 or not lines[i - 1].strip() or lines[i - 1].strip() == "-->"
        if line.startswith("    ") and previous_blank:
            end = i
            while end < len(lines) and (
                lines[end].startswith("    ")
                or (
                    not lines[end].strip()
                    and end + 1 < len(lines)
                    and lines[end + 1].startswith("    ")
                )
            ):
                end += 1
            body = [x[4:] for x in lines[i:end]]
            if _is_shell(None, body):
                blocks.append(Block(doc, i + 1, _logical_commands(body)))
                if marker is not None:
                    _read_marker(marker, blocks[-1])
            marker = None
            i = end
            continue
        if stripped:
            marker = None
        i += 1
    return blocks


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _doc_ids() -> list[str]:
    return [str(d.relative_to(REPO)) for d in DOCS]


# --- every shell block is marked, and every marker is well formed --------------------------


def marking_problems(block: Block) -> list[str]:
    """What is wrong with a block's marking: none, or a missing or ill-formed directive."""
    problems: list[str] = []
    if not block.marked:
        problems.append(
            f"{block.where()}: a shell block without a <!-- doctest ... --> comment "
            "(run it, or say why it cannot run offline)"
        )
    if block.skip_reason is not None and not block.skip_reason:
        problems.append(f"{block.where()}: 'skip' needs a reason")
    for number, reason in block.skipped.items():
        if not reason:
            problems.append(f"{block.where()}: 'skip {number}' needs a reason")
        if not 1 <= number <= len(block.commands):
            problems.append(f"{block.where()}: no command {number} to skip")
    for group in block.together:
        if len(group) < 2 or not all(1 <= n <= len(block.commands) for n in group):
            problems.append(f"{block.where()}: 'together' names two or more of commands 1 to "
                            f"{len(block.commands)}, not {sorted(group)}")  # fmt: skip
        elif any(block.commands[n - 1].startswith("export ") for n in group):
            problems.append(f"{block.where()}: an export cannot run 'together'")
        if group & set(block.skipped):
            problems.append(f"{block.where()}: a skipped command cannot run 'together'")
    problems.extend(f"{block.where()}: {p}" for p in block.problems)
    return problems


@pytest.mark.parametrize("name", _doc_ids())
def test_every_shell_block_runs_or_says_why_not(name: str) -> None:
    problems = [p for block in shell_blocks(REPO / name) for p in marking_problems(block)]
    assert not problems, "\n".join(problems)


def test_together_names_independent_commands_of_its_block(tmp_path: Path) -> None:
    """``together 2,3`` starts commands 2 and 3 at once; a number the block lacks, a lone
    command, an ``export`` or a skipped command is reported."""
    doc = tmp_path / "doc.md"
    fence = "```"
    doc.write_text(
        "<!-- doctest\ntogether 2,3: both wait\n-->\n"
        f"{fence}sh\nls\nls a\nls b\n{fence}\n\n"
        "<!-- doctest\ntogether 2,4: no command 4\ntogether 1: alone\n-->\n"
        f"{fence}sh\nls\nls a\n{fence}\n\n"
        "<!-- doctest\nskip 2: no\ntogether 1,2: an export, a skipped one\n-->\n"
        f"{fence}sh\nexport A=1\nls\n{fence}\n",
        encoding="utf-8",
    )
    good, bad, worse = shell_blocks(doc)
    assert good.together == [{2, 3}] and not marking_problems(good)
    assert [p.split(": ", 1)[1] for p in marking_problems(bad)] == [
        "'together' names two or more of commands 1 to 2, not [2, 4]",
        "'together' names two or more of commands 1 to 2, not [1]",
    ]
    assert [p.split(": ", 1)[1] for p in marking_problems(worse)] == [
        "an export cannot run 'together'",
        "a skipped command cannot run 'together'",
    ]


# --- every cited repository path exists -------------------------------------------------

PATH_TOKEN = re.compile(r"(?<![\w./~-])([A-Za-z_.][\w.-]*/[\w./-]*\w/?|test_\w+\.py)")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def cited_paths(doc: Path) -> Iterator[tuple[int, str]]:
    """Repository paths a doc names: link targets, and words that start with one of the
    repository's top folders and end in a file name or a ``/`` (so the inspect task
    ``deonticbench/airline`` is not one); bare ``test_*.py`` names must exist under tests/."""
    ignored: set[str] = set()
    text = doc.read_text(encoding="utf-8")
    for found in re.finditer(r"<!-- doctest-paths: not in the repository: (.*?) -->", text):
        ignored.update(found.group(1).split())
    for number, line in enumerate(text.splitlines(), 1):
        for link in LINK.findall(line):
            if "://" not in link and not link.startswith("mailto:"):
                yield number, str((doc.parent / link).resolve().relative_to(REPO))
        for token in PATH_TOKEN.findall(line):
            token = token.rstrip(".")
            if token in ignored or any(c in token for c in "<>*{}"):
                continue
            named_file = re.search(r"\.[a-z]{1,5}$", token) or token.endswith("/")
            if token.startswith("test_") or (token.startswith(REPO_PREFIXES) and named_file):
                yield number, token


@pytest.mark.parametrize("name", _doc_ids())
def test_every_cited_path_exists(name: str) -> None:
    doc = REPO / name
    test_files = {p.name for p in (REPO / "tests").rglob("test_*.py")}
    missing = []
    for number, path in cited_paths(doc):
        exists = path in test_files if "/" not in path else (REPO / path).exists()
        if not exists:
            missing.append(f"{name}:{number}: {path}")
    assert not missing, "cited paths that do not exist:\n" + "\n".join(missing)


# --- every cited dotted name resolves ---------------------------------------------------

FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.DOTALL)
DOTTED_NAME = re.compile(r"(?<![\w.])deonticbench(?:\.\w+)+")


def cited_names(doc: Path) -> Iterator[tuple[int, str]]:
    """Dotted names under ``deonticbench.`` that a doc cites in inline code, with their
    line: ``deonticbench.reading.outcomes.judge_answer``, or the module of ``python -m
    deonticbench.rewards.verl``.  Fenced blocks are left out (their commands run above)."""
    prose: list[str] = []
    fence: str | None = None
    for line in doc.read_text(encoding="utf-8").splitlines():
        opening = FENCE.match(line)
        if fence is None and opening:
            fence = opening.group(1)
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is None:
            prose.append(line)
            continue
        prose.append("")
    text = "\n".join(prose)
    for span in CODE_SPAN.finditer(text):
        for name in DOTTED_NAME.finditer(span.group(2)):
            yield text.count("\n", 0, span.start(2) + name.start()) + 1, name.group()


def unresolved(name: str) -> str | None:
    """Why a dotted name does not resolve, or None when it does (or needs an extra that is
    not installed here): the longest prefix that imports is the module, every further
    part an attribute (a dataclass field without a default counts as one)."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        module = ".".join(parts[:end])
        try:
            found: object = importlib.import_module(module)
        except ModuleNotFoundError as error:
            if error.name and (module + ".").startswith(error.name + "."):
                continue  # no such module: a shorter prefix, and the rest as attributes
            if error.name and not error.name.startswith("deonticbench"):
                return None  # an optional extra this environment lacks
            return f"importing {module} fails: {error}"
        except ConfigError:
            return None  # MissingExtraError: the module says which extra it needs
        break
    for depth, part in enumerate(parts[end:], end + 1):
        try:
            found = getattr(found, part)
        except ConfigError:
            return None
        except ModuleNotFoundError as error:  # a name loaded on first use, from an extra
            if error.name and not error.name.startswith("deonticbench"):
                return None
            return f"{'.'.join(parts[:depth])} fails to load: {error}"
        except AttributeError:
            fields = getattr(found, "__dataclass_fields__", {})
            if part in fields and depth == len(parts):
                return None
            return f"{'.'.join(parts[: depth - 1])} has no attribute {part!r}"
    return None


@pytest.mark.parametrize("name", _doc_ids())
def test_every_cited_dotted_name_resolves(name: str) -> None:
    dead = [
        f"{name}:{number}: {dotted}: {why}"
        for number, dotted in cited_names(REPO / name)
        if (why := unresolved(dotted)) is not None
    ]
    assert not dead, "cited names that do not resolve:\n" + "\n".join(dead)


# --- the commands run ---------------------------------------------------------------------


def _environment(home: Path) -> dict[str, str]:
    """A reader's shell: the venv's commands first, the data mirror, a home and a cache of
    its own, no provider key or token, the hub unreachable by choice."""
    env = {k: v for k, v in os.environ.items() if not PROVIDER_KEYS.match(k)}
    env.pop("DEONTICBENCH_CACHE", None)
    support = REPO / "tests" / "support"
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        PYTHONPATH=os.pathsep.join([str(REPO), str(support)]),
        HF_HUB_OFFLINE="1",
        NO_COLOR="1",
        COLUMNS="200",
    )
    return env


@dataclass
class _Running:
    """A command started in its own process group, its output (stdout and stderr, in
    order) going to a file: commands run ``together`` never wait on each other's pipe."""

    process: subprocess.Popen[bytes]
    output: IO[bytes]
    started: float


def _start(command: str, cwd: Path, env: dict[str, str]) -> _Running:
    output = tempfile.TemporaryFile()  # noqa: SIM115 (closed by _finish)
    started = time.monotonic()
    process = subprocess.Popen(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return _Running(process, output, started)


def _finish(running: _Running) -> tuple[int, str, float]:
    """Wait for a started command (at most ``COMMAND_TIMEOUT_S`` from its start), then
    kill its process group, so that nothing it started in the background (``&``)
    outlives it; its exit code, output and seconds."""
    process, late = running.process, ""
    try:
        process.wait(timeout=max(0.0, running.started + COMMAND_TIMEOUT_S - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        late = f"\n[timed out after {COMMAND_TIMEOUT_S} s]"
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    seconds = time.monotonic() - running.started
    with running.output:
        running.output.seek(0)
        output = running.output.read().decode("utf-8", errors="replace")
    return process.returncode, output + late, seconds


def _finish_now(running: _Running) -> None:
    """Kill a started command that is no longer waited for."""
    try:
        os.killpg(running.process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _finish(running)


def _run(command: str, cwd: Path, env: dict[str, str]) -> tuple[int, str, float]:
    """One command through bash (``_start``, ``_finish``)."""
    return _finish(_start(command, cwd, env))


def _exported(command: str, env: dict[str, str]) -> None:
    """``export A=B C=D`` in a doc holds for the doc's later commands, as in a shell."""
    words = shlex.split(command, comments=True)
    for word in words[1:]:
        key, eq, value = word.partition("=")
        if eq:
            env[key] = os.path.expandvars(value)


def _fail(block: Block, command: str, why: str, output: str) -> None:
    tail = "\n".join(output.splitlines()[-40:])
    pytest.fail(f"{block.where()}: {command}\n{why}\n--- output (last 40 lines) ---\n{tail}")


@pytest.mark.slow
@pytest.mark.skipif(
    not (DATA and Path(DATA, "data").is_dir()), reason="the shared data mirror is not available"
)
@pytest.mark.parametrize(
    "name",
    [
        n
        for n in _doc_ids()
        if any(b.marked and b.skip_reason is None for b in shell_blocks(REPO / n))
    ],
)
def test_documented_commands_run(name: str, tmp_path: Path) -> None:
    env = _environment(tmp_path)
    timings: list[str] = []
    for block in shell_blocks(REPO / name):
        if not block.marked or block.skip_reason is not None:
            continue  # an unmarked block fails the marking test above, not this one
        local = dict(env, **block.env)
        outputs: dict[int, str] = {}
        for command in block.setup:
            code, output, _ = _run(command, tmp_path, local)
            if code != 0:
                _fail(block, command, f"the hidden setup exited {code}", output)
        started: dict[int, _Running] = {}
        try:
            for number in range(1, len(block.commands) + 1):
                if number in block.skipped:
                    continue
                command = block.prepared(number)
                if command.startswith("export "):
                    _exported(command, env)
                    local.update(env)
                    continue
                for group in block.together:
                    if number in group and number not in started:
                        # Independent commands (the doc's directive says so): all started now.
                        for other in sorted(group):
                            started[other] = _start(block.prepared(other), tmp_path, local)
                running = started.get(number) or _start(command, tmp_path, local)
                code, output, seconds = _finish(running)
                timings.append(f"{seconds:6.1f} s  {block.where()} {command[:90]}")
                outputs[number] = output
                if code != 0:
                    _fail(block, command, f"exited {code}", output)
                if "Traceback (most recent call last)" in output:
                    _fail(block, command, "printed a traceback", output)
        finally:  # a failed command leaves none of its group running
            for running in started.values():
                if not running.output.closed:
                    _finish_now(running)
        for command in block.then:
            code, output, _ = _run(command, tmp_path, local)
            if code != 0:
                _fail(block, command, f"the check after the block exited {code}", output)
        everything = _normalise("\n".join(outputs.values()))
        for which, text in block.expect:
            seen = everything if which is None else _normalise(outputs.get(which, ""))
            if _normalise(text) not in seen:
                _fail(block, f"expect {which or ''}: {text}", "the documented output is not there",
                      "\n".join(outputs.values()))  # fmt: skip
        for which, text in block.absent:
            seen = everything if which is None else _normalise(outputs.get(which, ""))
            if _normalise(text) in seen:
                _fail(block, f"absent {which or ''}: {text}", "the output holds what must not be",
                      "\n".join(outputs.values()))  # fmt: skip
    print("\n".join(timings))
