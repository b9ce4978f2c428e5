"""``analyze`` over a run folder: every program-mode record's first and final attempt
(an agentic trial's one attempt is its final program), diagnosed against its case's
reference program, written to ``RUN/analysis.jsonl``.

The expensive part (running the Prolog analyser) is cached in
``RUN/analysis-cache.sqlite`` by program content and analyser version, so a re-run only
analyses programs it has not seen; the Python comparison is cheap and always redone.
"""

from __future__ import annotations

import gc
import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..data.cases import Case, DataSource, load_cases, resolve_source
from ..data.domains import Domain, get_domain
from ..data.sources import SPLITS
from ..errors import DataError
from ..reading.judging import reference_as_run
from ..solver import Solver
from ..store.record import Attempt, Record
from ..store.run import RunLike, read_run
from ..vocabulary.modes import writes_program
from .compare import CaseVocabulary
from .derive import Derivation, analyse_deriving, derive_report
from .diagnose import Diagnosis, Proven, diagnose
from .engine import AnalyserMode, analyser_version, canonical
from .schedules import LazyNumbers, law_numbers

ANALYSIS_FILE = "analysis.jsonl"
CACHE_FILE = "analysis-cache.sqlite"
STAGES = ("first", "final")


def reference_program(domain: Domain, case: Case) -> str:
    """The reference program as the harness runs it (validate prepares it the same way)."""
    return reference_as_run(domain, case).text


class ReportCache:
    """Analyser reports by sha256(program) and analyser version.  A report derived from
    another program's (``analysis.derive``) is kept as the way to derive it again,
    ``{"derived_from": KEY, "lines": N}``, and derived again when read: serialising
    the derived reports of a paper-protocol run cost more than deriving them."""

    def __init__(self, path: Path | None) -> None:
        self._db = sqlite3.connect(str(path) if path else ":memory:")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS reports (key TEXT PRIMARY KEY, report TEXT NOT NULL)"
        )
        self.version = analyser_version()

    def key(self, program: str, mode: AnalyserMode = "full") -> str:
        digest = hashlib.sha256(program.encode("utf-8")).hexdigest()
        return f"{self.version}:{digest}" if mode == "full" else f"{self.version}:{mode}:{digest}"

    def get(self, program: str, mode: AnalyserMode = "full") -> dict[str, Any] | None:
        """The kept report, or None (a derived one whose longer program's report is
        gone, or no longer derives, is None too: it is analysed again)."""
        text = self._text(self.key(program, mode))
        if text is None:
            return None
        report: dict[str, Any] = json.loads(text)
        if set(report) != _DERIVED_KEYS:
            return report
        longer = self._text(str(report["derived_from"]))
        if longer is None:
            return None
        # derive_report refuses anything but an analyser's report (a pointer too).
        return derive_report(json.loads(longer), int(report["lines"]), longer)

    def _text(self, key: str) -> str | None:
        row = self._db.execute("SELECT report FROM reports WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def put(
        self,
        program: str,
        report: dict[str, Any],
        text: str | None = None,
        mode: AnalyserMode = "full",
    ) -> None:
        """Keep a report; ``text`` is its JSON as the analyser printed it, when known
        (serialising a proof tree again costs as much as parsing it)."""
        self._db.execute(
            "INSERT OR REPLACE INTO reports VALUES (?, ?)",
            (self.key(program, mode), text if text is not None else json.dumps(report)),
        )

    def put_derived(self, program: str, derivation: Derivation, mode: AnalyserMode) -> None:
        """Keep how ``program``'s report was derived (its longer program's is kept)."""
        pointer = {"derived_from": self.key(derivation.longer, mode), "lines": derivation.lines}
        self._db.execute(
            "INSERT OR REPLACE INTO reports VALUES (?, ?)",
            (self.key(program, mode), json.dumps(pointer)),
        )

    def commit(self) -> None:
        self._db.commit()

    def close(self) -> None:
        self._db.commit()
        self._db.close()


_DERIVED_KEYS = frozenset({"derived_from", "lines"})
"""A kept row that says how to derive a report (``ReportCache.put_derived``)."""


def analyse_programs(
    programs: Iterable[str],
    cache: ReportCache,
    solver: Solver,
    on_ready: Callable[[dict[str, dict[str, Any] | None]], None] | None = None,
    structured: set[str] | None = None,
    tally: dict[str, int] | None = None,
) -> tuple[dict[str, dict[str, Any] | None], int]:
    """Full analyser reports for distinct programs (None when the analyser failed);
    and how many were made now rather than read from the cache.  ``tally``, when given,
    gets under ``"derived"`` how many of those were derived from another program's
    report (``derive``) rather than analysed.  ``on_ready`` is
    given the reports of each analyser job as it finishes (other jobs still running).
    ``structured``: the (canonical) programs the failure taxonomy compares, which need
    their clauses' structure; the others are analysed in ``proof`` mode (None: all
    need it)."""
    reports: dict[str, dict[str, Any] | None] = {}
    todo: dict[AnalyserMode, list[str]] = {"full": [], "proof": []}
    for program in dict.fromkeys(canonical(p) for p in programs):
        mode: AnalyserMode = "full" if structured is None or program in structured else "proof"
        cached = cache.get(program, mode)
        if cached is not None:
            reports[program] = cached
        else:
            todo[mode].append(program)
    derived = 0
    for mode, group in todo.items():
        derived += _analyse_group(group, mode, cache, solver, reports, on_ready)
    cache.commit()
    usable = {p: _usable(r) for p, r in reports.items() if r}
    if tally is not None:
        tally["derived"] = tally.get("derived", 0) + derived
    return usable, sum(len(group) for group in todo.values())


def _analyse_group(
    group: list[str],
    mode: AnalyserMode,
    cache: ReportCache,
    solver: Solver,
    reports: dict[str, dict[str, Any] | None],
    on_ready: Callable[[dict[str, dict[str, Any] | None]], None] | None,
) -> int:
    """Analyse (or derive) one mode's programs and cache them; how many were derived."""
    on_job = None
    if on_ready is not None:
        ready = on_ready

        def on_job(found: dict[int, dict[str, Any]]) -> None:
            ready({group[i]: _usable(report) for i, report in found.items()})

    printed: dict[int, str] = {}
    derived_from: dict[int, Derivation] = {}
    analysed, derived = analyse_deriving(
        group, mode, solver, on_job=on_job, printed=printed, derived_from=derived_from
    )
    for index, (program, report) in enumerate(zip(group, analysed, strict=True)):
        if index in derived_from:
            cache.put_derived(program, derived_from[index], mode)
        else:
            cache.put(program, report, printed.get(index), mode)
        reports[program] = report
    return derived


def _usable(report: dict[str, Any]) -> dict[str, Any] | None:
    return None if "analyser_error" in report else report


@dataclass
class AnalysisRow:
    domain: str
    case_id: str
    mode: str
    sample: int
    stage: str
    attempt: int
    diagnosis: Diagnosis

    def to_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "case_id": self.case_id,
            "mode": self.mode,
            "sample": self.sample,
            "stage": self.stage,
            "attempt": self.attempt,
            **self.diagnosis.to_dict(),
        }


def source_of_run(config: dict[str, Any]) -> DataSource:
    data = config.get("data") or {}
    if data.get("kind") == "local" and data.get("path"):
        return resolve_source(data["path"])
    if data.get("kind") == "hub":
        return resolve_source(hub=True, revision=data.get("revision"))
    return resolve_source()


def analyse_run(
    run: RunLike,
    *,
    solver: Solver | None = None,
    workers: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[AnalysisRow], dict[str, int]]:
    """Analyse a run (or the run folder given by path, read strictly: the analysis runs
    programs again against the run's data) and write its ``analysis.jsonl``; the rows
    and some counts."""
    run = read_run(run, policy="strict")
    folder = run.path
    if not run.records_path.is_file():
        raise DataError(f"{folder} holds no records yet: nothing to analyse.")
    records = [r for r in run.records if writes_program(r.mode)]
    split = str(run.config.get("split", "hard"))
    source = source_of_run(run.config)
    cases: dict[tuple[str, str], Case] = {}
    for name in sorted({r.domain for r in records}):
        for loaded in load_cases(name, split, source):
            cases[(name, loaded.id)] = loaded
    for record in records:
        if (record.domain, record.case_id) not in cases:
            raise DataError(
                f"case {record.case_id} of {record.domain} is not in the {split} split."
            )
    with collector_paused():
        rows, counts = _analyse_records(folder, records, cases, solver, workers, progress, source)
    out = folder / ANALYSIS_FILE
    tmp = out.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row.to_json()) + "\n")
    tmp.replace(out)
    return rows, counts


def _analyse_records(
    folder: Path,
    records: list[Record],
    cases: dict[tuple[str, str], Case],
    solver: Solver | None,
    workers: int | None,
    progress: Callable[[str], None] | None,
    source: DataSource | None = None,
) -> tuple[list[AnalysisRow], dict[str, int]]:
    """The rows of ``analyse_run``.  The reports die with this call, before the caller
    turns the garbage collector back on (which would otherwise walk them all once)."""
    cache = ReportCache(folder / CACHE_FILE)
    own = solver is None
    pool = solver or Solver(workers=workers)
    try:
        # Read only when a diagnosis weighs a changed literal (the pool must still be
        # open then: every diagnosis is made before it closes).
        schedules: dict[str, Sequence[float]] = {
            name: LazyNumbers(partial(domain_schedules, get_domain(name), source, pool))
            for name in _failing_domains(records)
        }
        diagnoser = _Diagnoser(records, cases, schedules)
        wanted = diagnoser.programs
        if progress:
            progress(f"analysing {len(set(wanted))} distinct programs")
        tally: dict[str, int] = {"derived": 0}
        reports, fresh = analyse_programs(
            wanted, cache, pool, on_ready=diagnoser.ready, structured=diagnoser.structured,
            tally=tally,
        )  # fmt: skip
        diagnoser.ready(reports)  # cached reports, retried programs, failed analyses
        rows = diagnoser.rows()
    finally:
        cache.close()
        if own:
            pool.close()
    counts = {
        "records": len(records),
        "programs": len(reports),
        "analysed": fresh,
        "derived": tally["derived"],
        "cached": len(reports) - fresh,
        "failed": sum(1 for r in reports.values() if r is None),
    }
    return rows, counts


def _failing_domains(records: list[Record]) -> list[str]:
    """Domains with a wrong or abstained attempt: only those need the taxonomy, and so
    the schedules of their law."""
    return sorted(
        {
            r.domain
            for r in records
            for a in _stages(r).values()
            if a.program is not None and a.outcome != "correct"
        }
    )


def domain_schedules(
    domain: Domain, source: DataSource | None, solver: Solver
) -> tuple[float, ...]:
    """The numbers of the domain's law that its reference programs state, over every
    split of the data (``schedules.law_numbers``: one job of SWI-Prolog's reader, a
    tenth to a third of a second)."""
    programs: dict[str, CaseVocabulary] = {}
    for split in SPLITS:
        try:
            loaded = load_cases(domain, split, source)
        except DataError:
            continue  # a data folder without this split
        for case in loaded:
            programs.setdefault(reference_program(domain, case), CaseVocabulary.of(case))
    return law_numbers(list(programs), list(programs.values()), solver)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while reports are read and compared.  A
    run's reports are millions of small dicts and lists, all alive until the rows are
    written, so every collection the allocations trigger walks them all for nothing:
    with the collector on, reading and comparing took half as long again (see
    docs/performance.md).  The reports hold no cycles; what is garbage is freed by
    reference counting as usual, and the collector's state is restored after."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _stages(record: Record) -> dict[str, Attempt]:
    return {"first": record.first, "final": record.final}


class _Diagnoser:
    """Diagnoses each record as soon as the reports of its programs (its reference, its
    first and final attempts) are in: while the last analyser jobs still run, the
    comparison of the programs already analysed is done.  Jobs finish in their own
    threads, so each step holds a lock; a record's diagnosis depends on its reports
    only, never on the order records are done in."""

    def __init__(
        self,
        records: list[Record],
        cases: dict[tuple[str, str], Case],
        schedules: dict[str, Sequence[float]] | None = None,
    ) -> None:
        self._records = records
        self._cases = cases
        self._schedules = schedules or {}
        self._reports: dict[str, dict[str, Any] | None] = {}
        self._proven: dict[tuple[str, str], Proven | None] = {}
        self._references: dict[tuple[str, str], str] = {}
        self._diagnosed: dict[tuple[Any, ...], Diagnosis] = {}
        self._rows: list[list[AnalysisRow] | None] = [None] * len(records)
        self._needs: list[set[str]] = []
        self._waiting: dict[str, list[int]] = {}
        for index, record in enumerate(records):
            needs = {canonical(self._reference_of(record))}
            needs.update(canonical(a.program) for a in _stages(record).values() if a.program)
            self._needs.append(needs)
            for program in needs:
                self._waiting.setdefault(program, []).append(index)
        self.programs = list(self._waiting)
        """Every distinct program to analyse (canonical text)."""
        self.structured: set[str] = set()
        """The programs the failure taxonomy compares: the wrong or abstained attempts'
        and their references (only these need the clauses' structure)."""
        for record in records:
            failing = [
                a.program
                for a in _stages(record).values()
                if a.program is not None and a.outcome != "correct"
            ]
            if failing:
                self.structured.add(canonical(self._reference_of(record)))
                self.structured.update(canonical(p) for p in failing)
        self._lock = threading.Lock()

    def ready(self, reports: dict[str, dict[str, Any] | None]) -> None:
        with self._lock:
            for program, report in reports.items():
                if program in self._reports:
                    continue
                self._reports[program] = report
                for index in self._waiting.pop(program, []):
                    self._needs[index].discard(program)
                    if not self._needs[index]:
                        self._rows[index] = self._diagnose(self._records[index])

    def rows(self) -> list[AnalysisRow]:
        with self._lock:
            for index, record in enumerate(self._records):
                if self._rows[index] is None:  # a program with no report at all
                    self._rows[index] = self._diagnose(record)
            return [row for rows in self._rows if rows is not None for row in rows]

    def _diagnosis(
        self, record: Record, attempt: Attempt, domain: Domain, case: Case, ref: Proven | None
    ) -> Diagnosis:
        """``diagnose`` once per distinct attempt of a case: the K samples of a case
        often hold one program (a reference run's always do), and a diagnosis reads
        only what ``diagnosis_key`` holds.  The diagnosis is shared, never changed."""
        key = diagnosis_key(record, attempt)
        found = self._diagnosed.get(key)
        if found is None:
            model = self._proven_of(domain, attempt.program) if attempt.program else None
            schedules = self._schedules.get(domain.name, ())
            found = diagnose(domain, case, attempt, model, ref, schedules)
            self._diagnosed[key] = found
        return found

    def _proven_of(self, domain: Domain, program: str) -> Proven | None:
        key = (domain.name, canonical(program))
        if key not in self._proven:
            self._proven[key] = Proven.of(domain, self._reports.get(key[1]))
        return self._proven[key]

    def _reference_of(self, record: Record) -> str:
        """The case's reference program, prepared once per case (not per record)."""
        key = (record.domain, record.case_id)
        if key not in self._references:
            domain = get_domain(record.domain)
            self._references[key] = reference_program(domain, self._cases[key])
        return self._references[key]

    def _diagnose(self, record: Record) -> list[AnalysisRow]:
        domain = get_domain(record.domain)
        case = self._cases[(record.domain, record.case_id)]
        reference = self._proven_of(domain, self._reference_of(record))
        done: dict[int, Diagnosis] = {}
        rows: list[AnalysisRow] = []
        for stage, attempt in _stages(record).items():
            if attempt.index not in done:  # one attempt is both first and final
                done[attempt.index] = self._diagnosis(record, attempt, domain, case, reference)
            rows.append(
                AnalysisRow(
                    domain=record.domain,
                    case_id=record.case_id,
                    mode=record.mode,
                    sample=record.sample,
                    stage=stage,
                    attempt=attempt.index,
                    diagnosis=done[attempt.index],
                )
            )
        return rows


def diagnosis_key(record: Record, attempt: Attempt) -> tuple[Any, ...]:
    """Everything of a record and its attempt that ``diagnose`` reads: the case, the
    program (as analysed), the outcome, the answer (with its type: 1 and 1.0 print
    alike but are read differently), why it abstained and how its execution ended."""
    status = (attempt.execution or {}).get("status")
    program = canonical(attempt.program) if attempt.program is not None else None
    answer = (type(attempt.answer).__name__, repr(attempt.answer))
    return (record.domain, record.case_id, program, attempt.outcome, answer,
            attempt.abstain_reason, status)  # fmt: skip


def read_analysis(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / ANALYSIS_FILE
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
