"""A run's stored replies read again with either reader (``score --reading``), and how
far each figure moves between the two readers (``reader_sensitivity``).

    reread = reread_run(read_run("runs/x"), "paper")        # a Run, in memory
    rows = reader_sensitivity(read_run("runs/x"))            # harness vs paper, per cell

In memory only: records.jsonl and every other file of the run folder stay as they are
(a re-read is a view of the run, not a new run: its records would otherwise carry two
readings under one protocol).  The re-read covers the modes a protocol decides
(``PROTOCOL_MODES``: direct, zero-shot, few-shot); the diagnostic settings, the verbal
variant and the agentic modes are always read by the harness and keep their records.

Every attempt, first and retries, is read again: a direct reply by the reader's
``read_direct``; a program reply extracted and prepared by the reader, and run again in
the sandbox (under the run's limits) unless the stored execution reads the same for it:
the same program text, run with the same toplevel, or with the other one where that
cannot change what the reader reads (``_execution_reusable``).  The retry rule is then
applied to the re-read chain: an attempt that no longer calls for a retry (it answered)
ends the sample, and the attempts after it are dropped; a chain whose last stored attempt
now abstains ends there (the run made no further attempt).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ..data.domains import DOMAINS, Domain
from ..reading.answers import Answer
from ..reading.feedback_retry import calls_for_retry
from ..reading.reader import Reader, reader_for
from ..solver import Execution, Limits, Solver, Toplevel
from ..store.record import Attempt, Record
from ..store.run import READING_KEY, Run, RunLike, read_run
from ..vocabulary.modes import DIRECT_MODES, MODE_TITLES
from ..vocabulary.protocols import (
    PROTOCOL_MODES,
    READERS,
    ReaderName,
    check_reader,
    mode_protocol,
    protocol_reader,
)
from .metrics import DEFAULT_BOOTSTRAP
from .scores import RunScores, run_folders, score_run
from .tables import Table, pct, run_labels, signed_points


@dataclass(frozen=True)
class Reread:
    run: Run
    """The run with its protocol modes' records read again (in memory)."""
    reader: ReaderName
    executed: int
    """Distinct programs run again in the sandbox."""
    reused: int
    """Stored executions read again as they were."""
    changed: int
    """Samples whose first-attempt outcome differs from the stored one."""


def _execution_reusable(execution: Execution, ran: Toplevel, wanted: Toplevel) -> bool:
    """Whether a stored run of the same program reads the same for a reader that runs
    programs with ``wanted``.  The end-of-file toplevel only appends line breaks after
    what a program printed, and gives a timed-out program SIGTERM before SIGKILL: the
    harness's reading ignores both.  The paper's needs them unless the halted run ended
    its output with a line break (or printed nothing) and was not stopped at the time
    limit (any other limit abstains either way)."""
    if ran == wanted or wanted == "halt":
        return True
    if execution.status == "timeout":
        return False
    return not execution.stdout or execution.stdout.endswith("\n")


@dataclass
class _Pending:
    """One attempt's reading, waiting for its program's execution when it has one."""

    attempt: Attempt
    answer: Answer | None = None
    program: str | None = None
    repaired: bool = False
    execution: Execution | None = None


def _prepare_attempt(
    reader: Reader, original: Reader, domain: Domain, mode: str, attempt: Attempt
) -> _Pending:
    pending = _Pending(attempt)
    if attempt.error is not None or attempt.response is None:
        return pending  # a failed request: nothing to read
    if mode in DIRECT_MODES:
        pending.answer = reader.read_direct(domain, attempt.response)
        return pending
    program = reader.extract(attempt.response)
    if program is None:
        pending.answer = Answer.abstain("no Prolog program in the response")
        return pending
    prepared = reader.prepare(domain, program)
    pending.program, pending.repaired = prepared.text, prepared.repaired
    stored = Execution.from_dict(attempt.execution) if attempt.execution else None
    if (
        stored is not None
        and attempt.program == prepared.text
        and _execution_reusable(stored, original.toplevel, reader.toplevel)
    ):
        pending.execution = stored
    return pending


def _read(reader: Reader, domain: Domain, gold: object, pending: _Pending) -> Attempt:
    attempt = pending.attempt
    if attempt.error is not None or attempt.response is None:
        return attempt
    answer = pending.answer
    if answer is None:
        assert pending.execution is not None
        answer = reader.read_execution(domain, pending.execution)
    return dataclasses.replace(
        attempt,
        program=pending.program,
        repaired=pending.repaired,
        execution=pending.execution.to_dict() if pending.execution is not None else None,
        answer=answer.value,
        abstain_reason=answer.reason,
        outcome=reader.judge_answer(domain, answer, gold),  # type: ignore[arg-type]
    )


def _calls_for_retry(mode: str, attempt: Attempt) -> bool:
    """The retry rule (``reading.feedback_retry``), as a stored attempt answers it."""
    failed = attempt.error is not None or attempt.response is None
    return calls_for_retry(mode, failed=failed, answered=attempt.answer is not None)


def _chain(mode: str, attempts: list[Attempt]) -> list[Attempt]:
    for index, attempt in enumerate(attempts):
        if not _calls_for_retry(mode, attempt):
            return attempts[: index + 1]
    return attempts


def _rereadable(record: Record) -> bool:
    return record.mode in PROTOCOL_MODES and record.agent is None


def reread_run(run: Run, reading: ReaderName | str, *, solver: Solver | None = None) -> Reread:
    """``run`` with every stored reply of its protocol modes read by ``reading``'s reader
    (see the module docstring); programs that must run again go through ``solver`` (a
    pool under the run's limits is opened when None and some must)."""
    name = check_reader(reading)
    reader = reader_for(name)
    # Held in memory: the re-read records replace these very objects below.
    records = run.records.load()
    plans: list[tuple[Record, Domain, list[_Pending]]] = []
    for record in records:
        domain = DOMAINS.get(record.domain)
        if domain is None or not _rereadable(record):
            continue
        original = reader_for(protocol_reader(mode_protocol(run.protocol, record.mode)))
        pendings = [
            _prepare_attempt(reader, original, domain, record.mode, a) for a in record.attempts
        ]
        plans.append((record, domain, pendings))
    waiting = [p for _, _, ps in plans for p in ps if p.program is not None and p.execution is None]
    reused = sum(1 for _, _, ps in plans for p in ps if p.execution is not None)
    programs = list(dict.fromkeys(p.program for p in waiting if p.program is not None))
    if programs:
        ran = dict(
            zip(programs, _run_programs(run, programs, reader.toplevel, solver), strict=True)
        )
        for pending in waiting:
            assert pending.program is not None
            pending.execution = ran[pending.program]
    reread: dict[int, Record] = {}
    changed = 0
    for record, domain, pendings in plans:
        attempts = _chain(record.mode, [_read(reader, domain, record.gold, p) for p in pendings])
        changed += attempts[0].outcome != record.first.outcome
        reread[id(record)] = dataclasses.replace(record, attempts=attempts)
    view = Run(
        run.path,
        {**run.config, READING_KEY: name},
        [reread.get(id(r), r) for r in records],
        run.report,
    )
    return Reread(view, name, executed=len(programs), reused=reused, changed=changed)


def _run_programs(
    run: Run, programs: list[str], toplevel: Toplevel, solver: Solver | None
) -> list[Execution]:
    if solver is not None:
        return solver.map(programs, toplevel=toplevel)
    limits = run.spec.limits if run.spec is not None else Limits()
    with Solver(limits=limits) as own:
        return own.map(programs, toplevel=toplevel)


# --- reader sensitivity ----------------------------------------------------------------


@dataclass(frozen=True)
class SensitivityRow:
    """One domain x mode of a run: its first-attempt figure under each reader."""

    domain: str
    mode: str
    metric: str
    n_cases: int
    n_samples: int
    harness: float
    paper: float
    changed: int
    """Samples whose first-attempt outcome differs between the two readers."""

    @property
    def difference(self) -> float:
        """paper - harness, in the metric's points."""
        return self.paper - self.harness


def reader_sensitivity(
    run: RunLike,
    *,
    solver: Solver | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> list[SensitivityRow]:
    """How far each first-attempt figure of ``run`` (the protocol modes) moves between
    the harness's reader and the paper's, on the same stored replies: a measure of how
    much a score depends on its reader."""
    loaded = read_run(run)
    reads = {name: reread_run(loaded, name, solver=solver).run for name in READERS}
    scores = {name: score_run(r, bootstrap, seed) for name, r in reads.items()}
    firsts = {name: _first_outcomes(r) for name, r in reads.items()}
    rows: list[SensitivityRow] = []
    for group in scores["harness"].groups:
        if group.stage != "first" or group.mode not in PROTOCOL_MODES:
            continue
        other = scores["paper"].group(group.domain, group.mode, "first")
        if other is None:
            continue
        keys = [k for k in firsts["harness"] if k[:2] == (group.domain, group.mode)]
        rows.append(
            SensitivityRow(
                domain=group.domain,
                mode=group.mode,
                metric=group.metric,
                n_cases=group.n_cases,
                n_samples=group.n_samples,
                harness=group.estimate.point,
                paper=other.estimate.point,
                changed=sum(firsts["harness"][k] != firsts["paper"].get(k) for k in keys),
            )
        )
    return rows


def _first_outcomes(run: Run) -> dict[tuple[str, str, str, int], str]:
    return {(r.domain, r.mode, r.case_id, r.sample): r.first.outcome for r in run.records}


def sensitivity_lines(rows: list[SensitivityRow]) -> Iterator[str]:
    """The rows as a plain-text table (the figures as the score table prints them)."""
    yield (
        f"{'domain':<13}{'mode':<11}{'metric':<10}{'harness':>9}{'paper':>9}"
        f"{'paper-harness':>15}{'samples read differently':>26}"
    )
    for row in rows:
        yield (
            f"{row.domain:<13}{row.mode:<11}{row.metric:<10}{100 * row.harness:>9.1f}"
            f"{100 * row.paper:>9.1f}{100 * row.difference:>+15.1f}"
            f"{f'{row.changed} of {row.n_samples}':>26}"
        )


def labelled_sensitivity(
    scores: Sequence[RunScores], *, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> list[tuple[str, SensitivityRow]]:
    """``reader_sensitivity`` of each scored run, labelled as Table 2 labels the run:
    what ``score`` and ``report`` show with ``--reader-sensitivity``."""
    return [
        (label, row)
        for label, s in zip(run_labels(scores), scores, strict=True)
        for row in reader_sensitivity(s.run, bootstrap=bootstrap, seed=seed)
    ]


def sensitivity_table(rows: Sequence[tuple[str, SensitivityRow]]) -> Table:
    """How far each first-attempt figure moves between the two readers, from each run's
    (label, ``rereading.SensitivityRow``): point values on the same stored replies."""
    headers = ["Run", "Domain", "Setting", "Metric", "harness", "paper", "paper - harness"]
    headers.append("Samples read differently")
    body = [
        [
            label,
            DOMAINS[r.domain].display_name,
            MODE_TITLES.get(r.mode, r.mode),
            r.metric,
            pct(r.harness),
            pct(r.paper),
            signed_points(r.difference),
            f"{r.changed} of {r.n_samples}",
        ]
        for label, r in rows
    ]
    return Table(
        headers,
        body,
        title="Reader sensitivity, %: each first-attempt figure (point value) read from the "
        "same stored replies by the harness's reader and by the paper's (upstream's scripts')",
    )


def reread_scores(
    run_dirs: Sequence[RunLike], reading: str, replicates: int, seed: int
) -> list[tuple[RunScores, str]]:
    """``score --reading``: each run read again in memory, then scored, with one line
    saying what was read again."""
    runs = [read_run(p) for p in run_folders(run_dirs)]  # every path checked before any is read
    scored = []
    for run in runs:
        reread = reread_run(run, reading)
        line = (
            f"{run.path}: read with the {reading} reader (the run followed the "
            f"{run.protocol} protocol): {reread.executed} program(s) run again, "
            f"{reread.reused} stored execution(s) read again, {reread.changed} "
            "first-attempt outcome(s) changed; records.jsonl is unchanged"
        )
        scored.append((score_run(reread.run, replicates, seed), line))
    return scored
