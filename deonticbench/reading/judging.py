"""The one judging path: a reply or a program, through a reader, to a judged attempt.

Extract (a reply's program) -> prepare -> run -> read -> judge, written once::

    judged = judge_attempt(Reply(text), domain, gold, reader, run=solver.run)
    judged = await ajudge_attempt(Program(text), domain, gold, reader, run=execute)

The two faces differ only in how they wait for the run; both are ``read_attempt`` (what
is read before the program runs: the program as it will run, or the answer of a direct
reply or of a reply without a program) followed by ``ReadAttempt.judged`` (what is read
from the run).  A caller that runs many programs at once (rewards, ``validate``) calls
the two halves itself, with its own pool between them.  Every front door judges here:
the runner, rewards, the agent judge and its ``run_prolog`` tool, ``exec``,
``validate``, the scripted agents and ``analyze``; no other stage extracts or prepares a
program itself (the few-shot exemplar renderer in ``prompting`` aside, which shows a
reference program in the shape this path gives it).

Running is the caller's: ``run`` takes the prepared text and runs it in the sandbox
as ``reader.toplevel`` says, under the caller's limits and concurrency bound.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass

from ..data.cases import Case, Gold
from ..data.domains import Domain
from ..solver.execution import Execution
from .answers import Answer
from .harness import HARNESS_READER
from .outcomes import Outcome
from .programs import (
    extract_program,
    find_label_directives,
    has_fence,
    may_hold_label_directives,
    start_label_reader,
    unwrap_fenced,
)
from .reader import Reader

NO_PROGRAM = "no Prolog program in the response"
"""Why a program-mode reply without a program abstains."""
NO_DOMAIN = "no domain was given to read the answer as"
"""Why a program run without a domain has no answer read (``exec`` of a bare file)."""


@dataclass(frozen=True)
class Reply:
    """A model's response: its program is extracted by the reader (``direct``: its
    answer is read as it is)."""

    text: str
    direct: bool = False
    completed_by: Callable[[str], str] | None = None
    """What the caller puts around the extracted program before it is prepared (a
    setting's given part of the reference program, joined by the setting's rule)."""


@dataclass(frozen=True)
class Program:
    """A program as written (a workspace's ``solution.pl``), prepared as it is.

    ``published``: a published reference program or a saved file, which may be a raw
    model response in a fence (some of the whole splits' references are): its fenced
    program is taken, and the text kept as it is when the fences hold none
    (``fenced_without_program`` then says so)."""

    text: str
    published: bool = False


Source = Reply | Program


@dataclass(frozen=True)
class JudgedAttempt:
    """One attempt judged: the program as it ran, its execution, the answer, the verdict."""

    answer: Answer
    outcome: Outcome | None
    """None when no gold label was given (the caller judges later, or never)."""
    program: str | None = None
    """The program as run (after preparation); None for a direct reply or no program."""
    repaired: bool = False
    notes: tuple[str, ...] = ()
    """What preparation changed, and whether a fenced program was taken out first."""
    execution: Execution | None = None


@dataclass(frozen=True)
class ReadAttempt:
    """An attempt read up to its run: the program to run (``program``), or, for a direct
    reply or a reply without a program, the answer already (``answer``)."""

    domain: Domain | None
    reader: Reader
    program: str | None = None
    repaired: bool = False
    notes: tuple[str, ...] = ()
    answer: Answer | None = None
    fenced_without_program: bool = False
    """A published program whose fences hold no program (it would run as written)."""

    @property
    def text(self) -> str:
        """The program to run; a program source always has one (a reply may not)."""
        if self.program is None:
            raise ValueError("this attempt has no program to run")
        return self.program

    def judged(self, execution: Execution | None, gold: Gold | None) -> JudgedAttempt:
        """The attempt with the answer the run of ``program`` gives (``execution``; None
        when there is no program to run), judged against ``gold`` (None: not judged)."""
        if self.program is None:
            if self.answer is None:  # a reply without a program abstains unread
                no_program = Answer.abstain(NO_PROGRAM)
                return JudgedAttempt(no_program, None if gold is None else "abstain")
            return JudgedAttempt(self.answer, self._outcome(self.answer, gold))
        if execution is None:
            raise ValueError("a prepared program must be run before it is judged")
        if self.domain is None:
            answer = Answer.abstain(NO_DOMAIN)
        else:
            answer = self.reader.read_execution(self.domain, execution)
        return JudgedAttempt(
            answer=answer,
            outcome=self._outcome(answer, gold),
            program=self.program,
            repaired=self.repaired,
            notes=self.notes,
            execution=execution,
        )

    def _outcome(self, answer: Answer, gold: Gold | None) -> Outcome | None:
        if gold is None or self.domain is None:
            return None
        return self.reader.judge_answer(self.domain, answer, gold)


_EXTRACTED_NOTE = "extracted the program from its fenced block(s)"


def read_attempt(
    source: Source, domain: Domain | None, reader: Reader = HARNESS_READER
) -> ReadAttempt:
    """What is read of an attempt before its program runs (see the module's docstring).
    Without a domain (``exec`` of a bare file), a program runs as written, unprepared,
    and its answer is not read."""
    notes: tuple[str, ...] = ()
    fenced_without_program = False
    if isinstance(source, Reply):
        if domain is None:
            raise ValueError("a reply is read as a domain's reply: give the domain")
        if source.direct:
            return ReadAttempt(domain, reader, answer=reader.read_direct(domain, source.text))
        extracted = reader.extract(source.text)
        if extracted is None:
            return ReadAttempt(domain, reader)
        text = source.completed_by(extracted) if source.completed_by else extracted
    elif source.published and has_fence(source.text):
        # The harness's extraction whatever the reader: what ``unwrap_fenced`` takes.
        found = extract_program(source.text)
        text = source.text if found is None else found
        notes = () if found is None else (_EXTRACTED_NOTE,)
        fenced_without_program = found is None
    else:
        text = source.text
    if domain is None:
        return ReadAttempt(None, reader, program=text, notes=notes,
                           fenced_without_program=fenced_without_program)  # fmt: skip
    prepared = reader.prepare(domain, text)
    return ReadAttempt(
        domain,
        reader,
        program=prepared.text,
        repaired=prepared.repaired,
        notes=notes + prepared.notes,
        fenced_without_program=fenced_without_program,
    )


def judge_attempt(
    source: Source,
    domain: Domain | None,
    gold: Gold | None,
    reader: Reader = HARNESS_READER,
    *,
    run: Callable[[str], Execution],
) -> JudgedAttempt:
    """Judge one attempt; ``run`` runs the program as run in the sandbox."""
    read = read_attempt(source, domain, reader)
    return read.judged(run(read.program) if read.program is not None else None, gold)


async def ajudge_attempt(
    source: Source,
    domain: Domain | None,
    gold: Gold | None,
    reader: Reader = HARNESS_READER,
    *,
    run: Callable[[str], Awaitable[Execution]],
) -> JudgedAttempt:
    """``judge_attempt`` for callers in an event loop (``run``: ``Solver.arun`` or the
    caller's bounded version of it)."""
    read = read_attempt(source, domain, reader)
    return read.judged(await run(read.program) if read.program is not None else None, gold)


def reference_code(reference_prolog: str) -> str:
    """A published reference program as code, before preparation (one stored as a raw
    response in a fence unwrapped): what a scripted agent writes, as a model would."""
    return unwrap_fenced(reference_prolog)


def reference_as_run(domain: Domain, case: Case) -> ReadAttempt:
    """A case's reference program read as a published program: as ``validate`` runs it
    and ``analyze`` and the rewards compare with it."""
    return read_attempt(Program(case.reference_prolog, published=True), domain)


def start_preparing() -> None:
    """Boot what preparing programs needs (SWI-Prolog's label reader) without waiting:
    it boots while the caller loads its data."""
    start_label_reader()


def read_references(domain: Domain, cases: Sequence[Case]) -> Iterator[tuple[int, ReadAttempt]]:
    """``reference_as_run`` of each case with its position, those without a ``Label:``
    for the label reader to look at first: a pool runs them while the reader reads the
    others' label directives, in one batch."""
    texts = [reference_code(case.reference_prolog) for case in cases]
    needs_reader = [may_hold_label_directives(text) for text in texts]
    for position, case in enumerate(cases):
        if not needs_reader[position]:
            yield position, reference_as_run(domain, case)
    find_label_directives(text for text, need in zip(texts, needs_reader, strict=True) if need)
    for position, case in enumerate(cases):
        if needs_reader[position]:
            yield position, reference_as_run(domain, case)


__all__ = [
    "NO_PROGRAM",
    "JudgedAttempt",
    "Program",
    "ReadAttempt",
    "Reply",
    "Source",
    "ajudge_attempt",
    "judge_attempt",
    "read_attempt",
    "read_references",
    "reference_as_run",
    "reference_code",
    "start_preparing",
]
