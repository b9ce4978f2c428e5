"""Guard rails that any agent meets, weak or strong, each stated once here.

* ``early_submit``: in program modes ``submit`` before ``solution.pl`` exists, and in
  direct modes ``submit`` with no answer (neither the argument nor
  ``output/answer.txt``), is refused with an error observation; the turn is spent.  A weak
  model's first call is often ``submit`` with nothing written, which would otherwise end
  the trial with nothing to judge.
* ``input_file``: ``write_file`` onto an input of the workspace is refused with an error
  observation naming it where the agent was told it is; the turn is spent.  The inputs
  are what the protocol's workspace holds (``Inputs``): the harness's ``statute.txt``,
  ``case.txt`` and ``examples/``, or under the dar protocol DAR's ``/app`` files
  (``statute.txt``, and ``examples.txt`` in few-shot).  A weak model copying the
  instruction's example path would otherwise overwrite the facts it was given (and leave
  no program); no agent has a reason to.
* ``RepeatGuard``: the same calls with the same arguments and the same observations
  ``AgentOptions.repeat_limit`` turns in a row are told so once; one more such turn stops
  the trial (stop reason ``repeat``), so a looping model does not burn its whole budget.
* ``truncated``: a reply cut off by the output-token limit (finish reason ``length``) is
  its own kind of turn: its calls may be cut short, so none is run and each is answered
  with ``TRUNCATED`` instead.

Where a turn is decoded under a schema (the constrained tool mode on ``local:``, ``vllm:``
and ``openai-compatible:``), ``admitted`` derives the turn's schema from the same
statements as the ``early_submit`` and ``input_file`` rails: the union leaves out a
``submit`` the rail would refuse, a direct ``submit``'s answer must match
``ANSWER_PATTERN`` (built from the rail's ``ANSWER_BLANKS``), and a ``write_file`` path
must match ``constrained.path_pattern`` without the inputs; so the schema admits nothing a
rail refuses, and a weak model cannot spend its turn on one.  The rails stay for every
other protocol (and as a backstop).

The loop records each rail that acts in the step's ``extra`` under ``guard`` (the rule
and the observation it gave); a trial no rail acts on records nothing new.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..models.base import Completion
from ..models.constrained import PATH_CHARS, path_pattern
from ..reading.dar_verifier import DAR_MOUNT
from ..vocabulary.chat import ToolCall, ToolSpec
from ..vocabulary.modes import Mode, prompted_counterpart
from .tool_table import SUBMIT
from .workspace import ANSWER_FILE, CASE_FILE, EXAMPLES_DIR, SOLUTION_FILE, STATUTE_FILE

if TYPE_CHECKING:
    from ..prompting.dar_task import DarTask

__all__ = [
    "ANSWER_BLANKS",
    "ANSWER_PATTERN",
    "HARNESS_INPUTS",
    "NO_ANSWER",
    "NO_PROGRAM",
    "TRUNCATED",
    "Inputs",
    "RepeatGuard",
    "admitted",
    "answer_given",
    "dar_inputs",
    "early_submit",
    "protected_input",
    "refusal_rule",
    "repeat_note",
    "truncated",
]

NO_PROGRAM = f"error: write {SOLUTION_FILE} first: submit ends the work, and there is no program"
NO_ANSWER = (
    f"error: submit needs an answer: give it as submit's answer or write {ANSWER_FILE} first"
)
TRUNCATED = (
    "error: your reply was cut off at the output-token limit, so its calls were not run; "
    "send a shorter reply (write a long file in parts, or say less before the call)"
)


INPUT_FILE_PREFIX = "error: refused: "


@dataclass(frozen=True)
class Inputs:
    """What a trial's workspace gives the agent to work from, which no ``write_file`` may
    replace, and how a refusal names it (the ``input_file`` rail)."""

    files: tuple[str, ...]
    """Files at the workspace's top."""
    dirs: tuple[str, ...] = ()
    """Folders at the top, everything in them an input."""
    mount: str | None = None
    """Where the agent is told its workspace is (DAR's ``/app``): a path under it names a
    workspace file, and a refusal names the input there.  None: the harness's workspace,
    whose paths are relative."""
    work: str = f"write your program to {SOLUTION_FILE}"
    """What a refusal tells the agent to do instead: where its own work goes."""

    def holds(self, path: str) -> bool:
        """Whether ``path`` (relative to the workspace, normalised) is an input."""
        return path in self.files or any(
            path == folder or path.startswith(f"{folder}/") for folder in self.dirs
        )

    def refusal(self, path: str) -> str:
        """The error observation for a ``write_file`` onto the input ``path``."""
        if self.mount is None:
            return (
                f"{INPUT_FILE_PREFIX}{path} is an input of the case and stays as it is; {self.work}"
            )
        return (
            f"{INPUT_FILE_PREFIX}{self.mount}/{path} is an input of the task and stays as "
            f"it is; {self.work}"
        )


HARNESS_INPUTS = Inputs((STATUTE_FILE, CASE_FILE), (EXAMPLES_DIR,))
"""The harness's workspace: ``statute.txt``, ``case.txt`` and, in few-shot, ``examples/``
(protected in every mode, so the rail is one rule)."""


def dar_inputs(task: DarTask) -> Inputs:
    """A dar-protocol trial's inputs: DAR's ``/app`` files for its mode (``statute.txt``,
    and ``examples.txt`` in few-shot), a refusal naming them at ``/app`` and pointing to
    where DAR's verifier reads the agent's work (``solution.pl``, or in direct mode
    ``output/answer.txt``)."""
    if task.answer_path is not None:
        work = f"write your answer to {DAR_MOUNT}/{task.answer_path}"
    else:
        work = f"write your program to {DAR_MOUNT}/{task.program_path or SOLUTION_FILE}"
    return Inputs(tuple(task.app_files), mount=DAR_MOUNT, work=work)


def input_file_refusal(path: str, inputs: Inputs = HARNESS_INPUTS) -> str:
    """The error observation for a ``write_file`` onto an input of the workspace."""
    return inputs.refusal(path)


def protected_input(call: ToolCall, inputs: Inputs = HARNESS_INPUTS) -> str | None:
    """The error observation for a ``write_file`` onto one of ``inputs``, or None to run
    it (a path under ``inputs.mount``, ``/app/statute.txt`` under the dar protocol, is the
    workspace's ``statute.txt``)."""
    if call.name != "write_file" or call.error is not None:
        return None
    path = posixpath.normpath(str(call.arguments.get("path", "")))
    mount = inputs.mount
    if mount is not None and path.startswith(f"{mount}/"):
        path = path[len(mount) + 1 :]
    path = path.lstrip("/")
    return inputs.refusal(path) if inputs.holds(path) else None


def refusal_rule(observation: str) -> str | None:
    """Which guard rail gave this observation to a well-formed call (``early_submit``,
    ``input_file``), or None: the loop and inspect's agent record the rule and count the
    turn as ``refused``."""
    if observation in (NO_PROGRAM, NO_ANSWER):
        return "early_submit"
    if observation.startswith(INPUT_FILE_PREFIX):
        return "input_file"
    return None


def repeat_note(times: int) -> str:
    """What an agent is told the first time it repeats itself ``times`` turns in a row."""
    return (
        f"note: you have made the same call with the same result {times} turns in a row; "
        "do something different, or the trial stops on the next repeat"
    )


ANSWER_BLANKS = " \t\r\n"
"""What does not make an answer: a direct ``submit`` whose ``answer`` has nothing else is
refused by the rail (``answer_given``), and the schema of a schema-decoded turn admits
no such answer (``ANSWER_PATTERN``, built from the same characters)."""
# The blanks other than the space, as a character class writes them (escaped).
_CONTROL_BLANKS = "".join(repr(c)[1:-1] for c in ANSWER_BLANKS if c != " ")
_UNSAID = '"' + "\\\\" + _CONTROL_BLANKS
ANSWER_PATTERN = f"^ *[^ {_UNSAID}][^{_UNSAID}]*$"
"""Spaces, then a character that is none of ``ANSWER_BLANKS``, then more of the same: an
answer the rail accepts.  The quote, the backslash and the control blanks are left out of
its classes because the decoder writes the pattern's characters into a JSON string as they
are (no escapes): a raw control character or quote there is no JSON.  Anchored, as
llama.cpp's schema converter needs; Python's ``re`` and the converter read it alike."""


def answer_given(answer: object) -> bool:
    """Whether a ``submit``'s ``answer`` is one: the rail's test, of which the schema's
    ``ANSWER_PATTERN`` admits a part (its ``.`` stops at a line break)."""
    return isinstance(answer, str) and bool(answer.strip(ANSWER_BLANKS))


def early_submit(call: ToolCall, mode: Mode, root: Path) -> str | None:
    """The error observation for a ``submit`` that comes too early, or None to run it."""
    if call.name != SUBMIT or call.error is not None:
        return None
    if prompted_counterpart(mode) == "direct":
        given = answer_given(call.arguments.get("answer"))
        return None if given or (root / ANSWER_FILE).is_file() else NO_ANSWER
    return None if (root / SOLUTION_FILE).is_file() else NO_PROGRAM


def admitted(
    specs: Sequence[ToolSpec], mode: Mode | None, root: Path, inputs: Inputs = HARNESS_INPUTS
) -> tuple[ToolSpec, ...]:
    """The tools a schema-decoded turn may call now: ``specs`` less the calls a rail would
    refuse.  In program modes ``submit`` is left out until ``solution.pl`` exists; in
    direct modes, until ``output/answer.txt`` exists, its ``answer`` is required and not
    empty (``early_submit``); ``write_file`` takes a canonical path that is not one of
    ``inputs`` (``input_file``).  ``mode`` None: every tool."""
    if mode is None:
        return tuple(specs)
    direct = prompted_counterpart(mode) == "direct"
    kept: list[ToolSpec] = []
    for spec in specs:
        if spec.name == "write_file":
            kept.append(_no_input_path(spec, inputs))
        elif spec.name != SUBMIT:
            kept.append(spec)
        elif direct:
            kept.append(spec if (root / ANSWER_FILE).is_file() else _answer_required(spec))
        elif (root / SOLUTION_FILE).is_file():
            kept.append(spec)
    return tuple(kept)


def _no_input_path(spec: ToolSpec, inputs: Inputs) -> ToolSpec:
    """``write_file`` with its ``path`` a canonical workspace path other than an input
    (``constrained.path_pattern``): the ``input_file`` rail as schema."""
    pattern = path_pattern(inputs.files, inputs.dirs)
    return spec.narrowed({"path": {"pattern": pattern, "maxLength": PATH_CHARS}})


def _answer_required(spec: ToolSpec) -> ToolSpec:
    """``submit`` with its ``answer`` required and not blank (``answer_given``)."""
    answer = {"type": "string", "minLength": 1, "pattern": ANSWER_PATTERN}
    return spec.narrowed({"answer": answer}, required=["answer"])


def truncated(completion: Completion) -> bool:
    """Whether the reply was cut off by the output-token limit."""
    return completion.finish_reason == "length"


@dataclass
class RepeatGuard:
    """Counts turns that repeat the one before exactly: calls, arguments, observations."""

    limit: int | None
    last: str | None = None
    times: int = 0
    told: bool = False

    def after(self, results: Sequence[tuple[ToolCall, str]]) -> str | None:
        """Take a turn's (call, observation) pairs; the rail's verdict: ``"note"`` (tell
        the agent, once), ``"stop"`` (it repeated again after that) or None."""
        key = json.dumps(
            [[c.name, c.arguments, c.raw_arguments, text] for c, text in results],
            sort_keys=True,
            default=str,
        )
        self.times = self.times + 1 if key == self.last else 1
        self.last = key
        if self.limit is None or self.times < self.limit:
            return None
        if self.told:
            return "stop"
        self.told = True
        return "note"
