"""Validate the published reference programs: run each case's program, compare with gold.

This is the foundation's proof: if the reference programs do not reproduce their own
labels through our extraction, sandbox and answer reading, no model score can be trusted.
All programs of all requested domains go through one solver pool together, so both cores
stay busy across domain boundaries; the pool starts on the first domain's programs while
the next domains are read, and on a domain's programs that hold no ``Label:`` while the
label reader reads the others.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import chain

from ..data.cases import Case, load_cases
from ..data.domains import Domain
from ..data.sources import DataSource
from ..errors import DataError
from ..reading.answers import answer_from_execution
from ..reading.judging import ReadAttempt, read_references, reference_as_run, start_preparing
from ..reading.outcomes import judge_answer
from ..solver import Execution, Limits, Solver


@dataclass
class CaseCheck:
    case_id: str
    gold: int | str
    answer: float | str | None
    outcome: str
    reason: str | None
    status: str
    repaired: bool


@dataclass
class DomainReport:
    domain: str
    checks: list[CaseCheck] = field(default_factory=list)
    seconds: float = 0.0
    """Summed wall time of this domain's programs (they run in parallel with others)."""
    skipped: str | None = None
    """Why the domain was not validated (its split is not in the data source)."""

    def count(self, outcome: str) -> int:
        return sum(1 for c in self.checks if c.outcome == outcome)

    @property
    def cases(self) -> int:
        return len(self.checks)

    @property
    def agree(self) -> int:
        return self.count("correct")

    @property
    def disagree(self) -> int:
        return self.count("wrong")

    @property
    def abstain(self) -> int:
        return self.count("abstain")

    def to_json(self) -> dict[str, object]:
        if self.skipped:
            return {"cases": 0, "skipped": self.skipped}
        return {
            "cases": self.cases,
            "agree": self.agree,
            "disagree": self.disagree,
            "abstain": self.abstain,
            "seconds": round(self.seconds, 3),
            "disagree_ids": [c.case_id for c in self.checks if c.outcome == "wrong"],
            "abstain_ids": [c.case_id for c in self.checks if c.outcome == "abstain"],
            "disagreements": [
                {"id": c.case_id, "answer": c.answer, "gold": c.gold, "status": c.status}
                for c in self.checks
                if c.outcome == "wrong"
            ],
            "abstentions": [
                {"id": c.case_id, "reason": c.reason, "status": c.status}
                for c in self.checks
                if c.outcome == "abstain"
            ],
        }


def reference_program(domain: Domain, case: Case) -> ReadAttempt:
    """The program ``validate`` runs for a case (its ``text``): its reference program
    read on reading's one judging path as a published program, through the same
    extraction as any response where it is a raw response in a fence."""
    return reference_as_run(domain, case)


def check_case(domain: Domain, case: Case, execution: Execution, repaired: bool) -> CaseCheck:
    answer = answer_from_execution(domain, execution)
    return CaseCheck(
        case_id=case.id,
        gold=case.gold,
        answer=answer.value,
        outcome=judge_answer(domain, answer, case.gold),
        reason=answer.reason,
        status=execution.status,
        repaired=repaired,
    )


def validate(
    domains: Sequence[Domain],
    split: str = "hard",
    source: DataSource | None = None,
    *,
    solver: Solver | None = None,
    limits: Limits | None = None,
    skip_missing: bool = False,
) -> list[DomainReport]:
    """Run every reference program of ``domains`` on ``split``; one report per domain.

    With ``skip_missing``, a domain whose split the source lacks (housing's whole split
    offline) is reported as skipped instead of stopping the whole validation.
    """
    own = solver is None
    pool = solver or Solver(limits=limits)
    pool.warm_up()  # boot the sandboxes while the first domain's cases load
    start_preparing()  # and what preparing the programs needs
    reports = {d.name: DomainReport(domain=d.name) for d in domains}
    jobs: list[_Job] = []
    try:
        pending = chain.from_iterable(
            _domain_jobs(d, split, source, skip_missing, reports[d.name]) for d in domains
        )

        def programs() -> Iterator[str]:
            # The pool starts on a domain's programs while the next one is read.
            for job in pending:
                jobs.append(job)
                yield job.program

        executions = pool.map(programs(), limits)
    finally:
        if own:
            pool.close()
    # In each split's case order (label-free programs ran first).
    ran = sorted(zip(jobs, executions, strict=True), key=lambda pair: pair[0].position)
    for job, execution in ran:
        report = reports[job.domain.name]
        report.checks.append(check_case(job.domain, job.case, execution, job.read.repaired))
        report.seconds += execution.wall_s
    return list(reports.values())


@dataclass(frozen=True)
class _Job:
    domain: Domain
    position: int
    """The case's place in its split: reports list the cases in that order."""
    case: Case
    read: ReadAttempt
    """The reference program read up to its run."""

    @property
    def program(self) -> str:
        return self.read.text


def _domain_jobs(
    domain: Domain,
    split: str,
    source: DataSource | None,
    skip_missing: bool,
    report: DomainReport,
) -> Iterator[_Job]:
    """A domain's reference programs, prepared, as the pool can take them; none when its
    split is missing and ``skip_missing`` (the report then says why)."""
    try:
        cases = load_cases(domain, split, source)
    except DataError as exc:
        if not skip_missing:
            raise
        report.skipped = str(exc)
        return
    # Programs with nothing for the label reader come first: the pool runs them while
    # the reader reads the others' label directives, in one batch.
    for position, read in read_references(domain, cases):
        yield _Job(domain, position, cases[position], read)
