"""The harness's reader: the reading rules of ``programs``, ``answers`` and ``outcomes``
behind the ``Reader`` interface, unchanged (docs/scoring.md states them)."""

from __future__ import annotations

from ..data.cases import Gold
from ..data.domains import Domain
from ..solver.execution import Execution, Toplevel
from ..vocabulary.protocols import ReaderName
from .answers import Answer, answer_from_execution, read_direct_answer
from .outcomes import Outcome, judge_answer
from .programs import PreparedProgram, extract_program, prepare_program


class HarnessReader:
    name: ReaderName = "harness"
    toplevel: Toplevel = "halt"

    def read_direct(self, domain: Domain, text: str) -> Answer:
        return read_direct_answer(domain, text)

    def extract(self, text: str) -> str | None:
        return extract_program(text)

    def prepare(self, domain: Domain, program: str) -> PreparedProgram:
        return prepare_program(domain, program)

    def read_execution(self, domain: Domain, execution: Execution) -> Answer:
        return answer_from_execution(domain, execution)

    def judge_answer(self, domain: Domain, answer: Answer, gold: Gold) -> Outcome:
        return judge_answer(domain, answer, gold)


HARNESS_READER = HarnessReader()
