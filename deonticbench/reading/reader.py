"""A reader: the one object that turns a model's reply into a judged answer, per protocol.

Every front door (the runner, the inspect integration, ``score --reading``, the upstream
import) reads through a ``Reader``, got by name from ``reader_for``:

* ``harness`` (``reading.harness``): the harness's own rules (``programs``, ``answers``,
  ``outcomes``): reasoning blocks removed, fenced blocks chosen and joined, upstream's
  label directives stripped, the entrypoint added, two different answers abstain.
* ``paper`` (``reading.paper``): what upstream's released scripts read
  (``process_generated_prolog.py``, ``run_swipl.sh``, ``bootstrap_outputs.py``),
  quirks included, so that a figure of ``--protocol paper`` is read as the paper's was.

A program is extracted, prepared, run by the caller in the sandbox, and its execution
read; a direct reply is read as it is.  The caller runs a prepared program with the
reader's ``toplevel``: the harness runs ``swipl -q -f program.pl -t halt``, upstream
``swipl -q -f FILE < /dev/null``, whose interactive toplevel reads end-of-file and ends
the output with a line break (which decides whether an unterminated last line survives
upstream's reading, see ``paper``).
"""

from __future__ import annotations

from typing import Protocol

from ..data.cases import Gold
from ..data.domains import Domain
from ..solver.execution import Execution, Toplevel
from ..vocabulary.protocols import ReaderName, check_reader
from .answers import Answer
from .harness import HARNESS_READER
from .outcomes import Outcome
from .paper import PAPER_READER
from .programs import PreparedProgram


class Reader(Protocol):
    name: ReaderName
    toplevel: Toplevel
    """How the caller runs this reader's prepared programs (``Solver.run(toplevel=...)``)."""

    def read_direct(self, domain: Domain, text: str) -> Answer:
        """The answer of a direct-mode reply."""
        ...

    def extract(self, text: str) -> str | None:
        """The program in a reply, or None: the reply holds no program."""
        ...

    def prepare(self, domain: Domain, program: str) -> PreparedProgram:
        """The program as it is run (repairs noted)."""
        ...

    def read_execution(self, domain: Domain, execution: Execution) -> Answer:
        """The answer a run of a prepared program gives."""
        ...

    def judge_answer(self, domain: Domain, answer: Answer, gold: Gold) -> Outcome:
        """correct, wrong or abstain."""
        ...


def reader_for(name: ReaderName | str) -> Reader:
    """The reader called ``name`` (one sentence naming the readers for an unknown one)."""
    checked = check_reader(name)
    return HARNESS_READER if checked == "harness" else PAPER_READER
