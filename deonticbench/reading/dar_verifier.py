"""DAR's verifier (``tests/test.sh`` of DAR's Harbor tasks), restated over a final state.

DAR ("Deontic Reasoning with Agentic Harnesses") judges what an agent left in ``/app``
with a bash script.  Program modes run ``timeout 30 swipl -q -f /app/solution.pl`` with
stderr discarded and stdin at end-of-file (Harbor's exec gives it /dev/null, so a
program that never halts ends at SWI-Prolog's toplevel); direct mode reads
``/app/output/answer.txt``.  Either way, under ``set -euo pipefail``:

* a missing file writes reward 0;
* the lines matching ``grep -i "^Answer:"`` are kept, a leading ``Answer:`` or
  ``answer:`` (``sed 's/^[Aa]nswer:...//'``) is cut, all ASCII whitespace goes
  (``tr -d '[:space:]'``), so several lines run together into one string: ``ANSWER: 5``
  is kept but not cut (``ANSWER:5``, never equal to a label);
* no such line makes ``grep`` fail, which ends the script before it prints or writes
  anything: **no reward** (Harbor's ``RewardFileNotFoundError``; DAR's scorer reads an
  empty stdout, ``("", "")``);
* a whole-number label is compared with the answer cut at its first ``.``; any other
  label is compared with the answer, both ASCII lower-cased; equal writes 1, else 0.

A program that outlives its SIGTERM (SWI-Prolog defers it while it loads its file: a
directive that loops never ends) keeps ``timeout`` waiting, so test.sh runs on until
Harbor's verifier timeout (task.toml: 120 s): **no reward** (``VerifierTimeoutError``).
The harness does not wait that long: the solver stops such a program a grace after its
SIGTERM (``solver.execution.UPSTREAM_KILL_AFTER_S``) and reads it as one that would have.

Programs run in the solver's sandbox as text (they never see the label or any file of
the workspace; a program that consults another file of ``/app`` by path reads nothing
there, where DAR's would).  The string rules are standard library only: the Harbor
task verifier ships ``normalise`` inside its zip.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import SandboxError
from ..solver import TIMEOUT_TERM_IGNORED, Execution, Limits, Toplevel

DAR_TIMEOUT_S = 30.0
"""test.sh's ``TIMEOUT=30``: the wall clock of ``timeout`` around ``swipl``."""
HARBOR_VERIFIER_TIMEOUT_S = 120.0
"""DAR's task.toml ``[verifier] timeout_sec``: when Harbor stops a test.sh still running."""
DAR_MOUNT = "/app"
"""Where DAR's tasks mount the agent's workspace (its Dockerfile's ``WORKDIR``): the
agent works there and test.sh reads it.  A dar-protocol trial shows its workspace there
too.  (The harness's own Harbor tasks work in a folder of the same path, another fact:
``integrations.harbor.verifier.TASK_WORKDIR``.)"""
SOLUTION_FILE = "solution.pl"
ANSWER_FILE = "output/answer.txt"
"""Paths under ``DAR_MOUNT`` test.sh reads: program modes and direct mode."""
MAX_FILE_BYTES = 16 * 1024 * 1024
"""The largest solution or answer file read (test.sh has no limit; none honest is near)."""
NO_REWARD_FILE = "RewardFileNotFoundError"
VERIFIER_TIMEOUT = "VerifierTimeoutError"
"""Harbor's exception type for a trial whose test.sh wrote no reward / was stopped."""

_SHELL_SPACE = " \t\n\v\f\r"
"""``[:space:]`` of ``tr``: byte-wise, so ASCII only."""
_WHOLE_NUMBER = re.compile(r"-?[0-9]+")
_ECHO_OPTIONS = re.compile(r"-[neE]+")
_UPPER_TO_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _echo(word: str) -> str:
    """``echo "$WORD"`` as bash's builtin prints it (before the line break): a word that
    is all options (``-n``, ``-e``, ``-neE``...) is taken as options and prints nothing."""
    return "" if _ECHO_OPTIONS.fullmatch(word) else word


_DELETE_SPACE = {ord(c): None for c in _SHELL_SPACE}


def squeeze(values: Iterable[str]) -> str:
    """``tr -d '[:space:]'`` over the kept lines' values: all ASCII whitespace removed, so
    several answer lines run together into one string (``100``, ``200.7``: ``100200.7``)."""
    return "".join(values).translate(_DELETE_SPACE)


def normalise(expected: str, got: str) -> tuple[str, str]:
    """DAR's verifier: (normalised expected, normalised got), both whitespace-free: a
    whole-number label keeps the answer up to its first ``.`` (truncation, no tolerance:
    ``1166.9`` is ``1166``, ``$1,166`` stays itself); otherwise both are lower-cased as
    ``tr '[:upper:]' '[:lower:]'`` does (ASCII letters only)."""
    if _WHOLE_NUMBER.fullmatch(_echo(expected)):
        return expected, _echo(got).split(".", 1)[0]
    return _echo(expected).translate(_UPPER_TO_LOWER), _echo(got).translate(_UPPER_TO_LOWER)


def answer_text(output: str) -> str | None:
    """What test.sh's ``ANSWER=$(... | grep -i "^Answer:" | sed ... | tr ... | tail -1)``
    holds for this text, or None when no line matches (``grep`` fails: no reward)."""
    kept = []
    for line in output.split("\n"):
        if line[:7].translate(_UPPER_TO_LOWER) != "answer:":
            continue
        kept.append(line[7:] if line[:7] in ("Answer:", "answer:") else line)
    if not kept:
        return None
    return squeeze(kept)


@dataclass(frozen=True)
class DarVerdict:
    """What DAR's test.sh leaves for one final state, and what DAR's scorer reads of it."""

    reward: int | None
    """The reward.txt it writes (1 or 0), None when it writes none."""
    stdout: str
    """Its stdout (Harbor's ``verifier/test-stdout.txt``)."""
    exception: str | None = None
    """Harbor's exception type when no reward is written."""
    execution: Execution | None = None
    """The program's run (program modes).  DAR's scorer reads ``stdout`` (its
    ``Normalized expected:``/``got:`` lines: ``scoring.dar_scorer``)."""


def verdict_of_text(expected_label: str, text: str | None, missing: str) -> DarVerdict:
    """test.sh from the answer's source on: ``text`` is the program's stdout (program
    modes) or the answer file (direct mode), None when the file test.sh looks for is not
    there (``missing`` names it).  ``expected_label``: tests/expected_label.txt as is."""
    if text is None:
        return DarVerdict(reward=0, stdout=f"No {missing} found at {DAR_MOUNT}/{_PATHS[missing]}\n")
    answer = answer_text(text)
    if answer is None:
        return DarVerdict(reward=None, stdout="", exception=NO_REWARD_FILE)
    expected = squeeze([expected_label])
    norm_expected, norm_got = normalise(expected, answer)
    stdout = (
        f"Expected: {expected}\nGot:      {answer}\n"
        f"Normalized expected: {norm_expected}\nNormalized got:      {norm_got}\n"
    )
    return DarVerdict(reward=int(norm_expected == norm_got), stdout=stdout)


_PATHS = {"solution file": SOLUTION_FILE, "answer file": ANSWER_FILE}


def _shell_output(stdout: str) -> str:
    """``echo "$OUTPUT"`` of ``OUTPUT=$(...)``: NUL bytes dropped, trailing line breaks
    cut, then echoed (an all-options word prints nothing)."""
    return _echo(stdout.replace("\0", "").rstrip("\n"))


def _read_file(app: Path, relative: str) -> str | None:
    """A regular file of the final state (``[ -f ]``), or None.  Unlike test.sh, no
    symlink is followed on the way: in DAR's container one reaches only the container,
    here it could reach the host (a reference program, the labels).  A file larger than
    ``MAX_FILE_BYTES`` is taken as missing."""
    *folders, name = relative.split("/")
    flags = os.O_RDONLY | os.O_NOFOLLOW
    opened: list[int] = []
    try:
        opened.append(os.open(app, os.O_RDONLY | os.O_DIRECTORY))
        for folder in folders:
            opened.append(os.open(folder, flags | os.O_DIRECTORY, dir_fd=opened[-1]))
        opened.append(os.open(name, flags | os.O_NONBLOCK, dir_fd=opened[-1]))
        info = os.fstat(opened[-1])
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        with os.fdopen(opened.pop(), "rb") as handle:
            return handle.read(MAX_FILE_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        for fd in opened:
            os.close(fd)


class RunsPrograms(Protocol):
    """What runs test.sh's program: a ``Solver``, or the runner, which bounds how many
    programs wait for the pool at once."""

    def arun(
        self, program: str, limits: Limits | None = None, *, toplevel: Toplevel = "halt"
    ) -> Awaitable[Execution]: ...


def dar_limits(timeout_s: float = DAR_TIMEOUT_S) -> Limits:
    """The solver's limits for DAR's run: test.sh's wall clock, the rest the solver's."""
    return Limits(timeout_s=timeout_s)


def verdict_of_run(expected_label: str, execution: Execution) -> DarVerdict:
    """test.sh after ``swipl`` ran ``/app/solution.pl``: a program that outlived its
    SIGTERM leaves test.sh waiting until Harbor stops it.  A run the sandbox itself
    failed (no exit status, no signal) says nothing of the program: it is refused."""
    if execution.status == "crashed" and execution.exit_code is None and execution.signal is None:
        raise SandboxError(f"the sandbox failed to run the program ({execution.stderr.strip()}).")
    if execution.limit == TIMEOUT_TERM_IGNORED:
        return DarVerdict(None, "", VERIFIER_TIMEOUT, execution)
    verdict = verdict_of_text(expected_label, _shell_output(execution.stdout), "solution file")
    return DarVerdict(verdict.reward, verdict.stdout, verdict.exception, execution)


def _unrun_verdict(app: Path, expected_label: str, direct: bool) -> DarVerdict | str:
    """The verdict when no program runs (direct mode, or no ``solution.pl``), else the
    program to run."""
    if direct:
        return verdict_of_text(expected_label, _read_file(app, ANSWER_FILE), "answer file")
    program = _read_file(app, SOLUTION_FILE)
    if program is None:
        return verdict_of_text(expected_label, None, "solution file")
    return program


async def ajudge_dar_app(
    app: Path,
    expected_label: str,
    *,
    direct: bool,
    solver: RunsPrograms,
    timeout_s: float = DAR_TIMEOUT_S,
) -> DarVerdict:
    """DAR's verdict on a final ``/app`` folder (direct mode: ``output/answer.txt``;
    program modes: ``solution.pl`` run by ``solver`` as test.sh runs it)."""
    found = _unrun_verdict(app, expected_label, direct)
    if isinstance(found, DarVerdict):
        return found
    execution = await solver.arun(found, dar_limits(timeout_s), toplevel="eof")
    return verdict_of_run(expected_label, execution)


__all__ = [
    "ANSWER_FILE",
    "DAR_MOUNT",
    "DAR_TIMEOUT_S",
    "HARBOR_VERIFIER_TIMEOUT_S",
    "NO_REWARD_FILE",
    "SOLUTION_FILE",
    "VERIFIER_TIMEOUT",
    "DarVerdict",
    "RunsPrograms",
    "ajudge_dar_app",
    "answer_text",
    "dar_limits",
    "normalise",
    "squeeze",
    "verdict_of_run",
    "verdict_of_text",
]
