"""Judging a finished workspace: the harness's reading, never the agent's word.

Program modes: the harness runs ``solution.pl`` itself in the sandbox under the standard
limits (after the same preparation as any model's program: upstream label directives
removed, the domain's entrypoint added when missing) and reads the answer line with the
existing reader.  Direct mode: ``output/answer.txt``, else the text passed to ``submit``,
through the direct-answer reader.  A workspace with no readable answer is an abstention
whose reason names what was missing or how the program failed.  What an agent printed
about its answer during the trial is never read.

Used by the agent loop and by Harbor's import alike.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from ..data.cases import Gold
from ..data.domains import Domain
from ..reading.answers import Answer
from ..reading.judging import Program, Reply, ajudge_attempt, read_attempt
from ..reading.outcomes import Outcome, judge_answer
from ..solver import Execution, Limits, Solver
from ..store.record import Attempt
from ..vocabulary.modes import Mode, prompted_counterpart
from .workspace import ANSWER_FILE, SOLUTION_FILE

MAX_JUDGED_BYTES = 1 << 20
"""A solution or answer file larger than this (1 MiB) is not read: an abstention."""


@dataclass(frozen=True)
class Judgement:
    """What the harness made of a finished workspace."""

    response: str | None
    """The final program text (program modes) or the direct answer text, as left."""
    answer: Answer
    program: str | None = None
    """The program that was run (after preparation); None in direct mode or without one."""
    repaired: bool = False
    execution: Execution | None = None

    def outcome(self, domain: Domain, gold: Gold) -> Outcome:
        return judge_answer(domain, self.answer, gold)

    def attempt(self, domain: Domain, gold: Gold, *, prompt_hash: str) -> Attempt:
        """The record's one attempt (tokens and latency are the caller's to fill)."""
        return Attempt(
            index=0,
            prompt_hash=prompt_hash,
            response=self.response,
            program=self.program,
            repaired=self.repaired,
            execution=self.execution.to_dict() if self.execution is not None else None,
            answer=self.answer.value,
            abstain_reason=self.answer.reason,
            outcome=self.outcome(domain, gold),
        )


def read_left_file(workspace: Path, relative: str) -> tuple[str | None, str | None]:
    """(text, None) of a regular file the agent left, or (None, why it cannot be read).

    A symlink is refused (it could point out of the workspace), and so is anything that
    is not a regular file or is larger than ``MAX_JUDGED_BYTES``."""
    path = Path(workspace) / relative
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, f"no {relative} was left"
    except OSError as exc:
        return None, f"{relative} cannot be read ({exc.strerror})"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, f"{relative} is not a regular file"
        if info.st_size > MAX_JUDGED_BYTES:
            return None, f"{relative} is larger than {MAX_JUDGED_BYTES} bytes"
        data = handle.read(MAX_JUDGED_BYTES + 1)
    return data.decode("utf-8", errors="replace"), None


def _direct(domain: Domain, workspace: Path, submitted_text: str | None) -> Judgement:
    text, problem = read_left_file(workspace, ANSWER_FILE)
    if text is None and submitted_text is not None and submitted_text.strip():
        text, problem = submitted_text, None
    if text is None:
        return Judgement(response=None, answer=Answer.abstain(f"{problem} and nothing submitted"))
    read = read_attempt(Reply(text, direct=True), domain)
    return Judgement(response=text, answer=read.judged(None, None).answer)


async def ajudge_workspace(
    domain: Domain,
    mode: Mode,
    workspace_dir: Path,
    execute: Callable[..., Awaitable[Execution]],
    submitted_text: str | None = None,
    *,
    last_run: tuple[str, Execution] | None = None,
) -> Judgement:
    """Judge a finished workspace; ``execute`` runs a program in the sandbox under the
    standard limits (``Solver.arun``).  ``last_run`` is the harness's own run of a
    program during the trial under those same limits (``ToolBox.last_run``): when the
    prepared ``solution.pl`` is byte for byte that program, its run is the judgement's
    (running the same bytes under the same limits in a fresh sandbox again would only
    double the cost)."""
    workspace = Path(workspace_dir)
    if prompted_counterpart(mode) == "direct":
        return _direct(domain, workspace, submitted_text)
    text, problem = read_left_file(workspace, SOLUTION_FILE)
    if text is None:
        return Judgement(response=None, answer=Answer.abstain(problem or "no program"))

    async def run(program: str) -> Execution:
        if last_run is not None and last_run[0] == program:
            return last_run[1]
        return await execute(program)

    judged = await ajudge_attempt(Program(text), domain, None, run=run)
    return Judgement(
        response=text,
        answer=judged.answer,
        program=judged.program,
        repaired=judged.repaired,
        execution=judged.execution,
    )


def judge_workspace(
    domain: Domain,
    mode: Mode,
    workspace_dir: Path,
    solver: Solver,
    submitted_text: str | None = None,
) -> Judgement:
    """``ajudge_workspace`` for callers without an event loop (Harbor's import)."""

    async def execute(program: str, limits: Limits | None = None) -> Execution:
        return solver.run(program, limits)

    return asyncio.run(ajudge_workspace(domain, mode, workspace_dir, execute, submitted_text))
