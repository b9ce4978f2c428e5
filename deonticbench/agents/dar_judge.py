"""A dar-protocol trial's second judgement: DAR's verifier over the final /app.

The harness judges every trial's final state with its own reader (``judge``); under
``--protocol dar`` the same final state is also judged as DAR's ``tests/test.sh`` would
judge it (``reading.dar_verifier.ajudge_dar_app``: ``solution.pl`` run by ``swipl`` with its 30 s,
direct mode from ``output/answer.txt``), and the record keeps what DAR's scorer then
reads (``AgentInfo.dar``).  Where test.sh writes no reward (no ``Answer:`` line; a
directive that outlives its SIGTERM) the record says so, with Harbor's exception, and
the solver's own limits stop the program, so nothing hangs.

The harness reader's figure of the same final state (the record's attempt) keeps the
harness's rules (±$1, conflicting answers abstain, no credit for an empty answer) but
reads the line DAR's instruction asks for in every mode, ``Answer: <value>``, from the
program run as written (``harness_domain``): the domain's own answer line (``Total
cost:``, ``Tax result:``) is never asked for there, and a reader looking for it would
measure the framing, not the reading.

The expected label comes from ``DarTask.expected_label``, held here, never written into
the workspace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..data.domains import Domain, read_from_marker
from ..prompting.dar_task import DarTask
from ..reading.dar_verifier import RunsPrograms, ajudge_dar_app

DAR_ANSWER_MARKER = "Answer:"
"""What DAR's instruction.md asks every mode to print or write before the answer."""


def harness_domain(domain: Domain) -> Domain:
    """The domain as the harness reads a dar-protocol final state (see the docstring)."""
    return read_from_marker(domain, DAR_ANSWER_MARKER)


async def dar_verdict(task: DarTask, root: Path, programs: RunsPrograms) -> dict[str, Any]:
    """DAR's verifier on the final workspace ``root`` (DAR's /app), as the record's
    ``AgentInfo.dar``."""
    verdict = await ajudge_dar_app(
        root, task.expected_label, direct=task.answer_path is not None, solver=programs
    )
    return {"reward": verdict.reward, "stdout": verdict.stdout, "exception": verdict.exception}


__all__ = ["DAR_ANSWER_MARKER", "dar_verdict", "harness_domain"]
