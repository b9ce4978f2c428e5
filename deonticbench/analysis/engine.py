"""Running the harness's own Prolog analyser (``prolog/analyse.pl``) on one program.

The analyser is run like any program: the pool's sandbox, the same wall-clock, CPU and
memory limits.  The job sent is a small driver that consults ``prolog/analyse.pl`` (bound
read-only inside the sandbox) and carries the target program as a Prolog string; the
analyser writes it to its private directory, reads it with SWI-Prolog's own reader and
prints one JSON object.  Only the output cap is larger than a program's, because a proof
tree is longer than an answer line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import cache
from typing import Any, Literal

from .._paths import PROLOG
from ..errors import DeonticBenchError
from ..solver import Execution, Limits, SandboxKind, Solver
from ..solver.pool import SANDBOX_PROLOG

AnalyserMode = Literal["static", "full", "proof"]
"""static: what a program says; full: that, the clauses' structure and the proofs of the
goals that print; proof: full without the clauses' structure, which only the failure
taxonomy reads (a program whose answer was right needs none)."""
ANALYSER = PROLOG / "analyse.pl"
_PRELOAD = ANALYSER.name
"""The analyser's jobs ask the pool for a SWI-Prolog that already loaded the analyser
(its libraries, library(prolog_xref) above all, cost a job about 0.3 s of CPU to load):
each worker loads it once, not every job."""
PYTHON_SIDE_VERSION = "2"
"""Bumped when the Python reading of the analyser's output, or what the cache keeps,
changes meaning (2: a derived report is kept as the way to derive it)."""
OUTPUT_BYTES = 4 * 1024 * 1024
"""Output cap of an analysis job (a program's own cap is 64 KiB)."""


class AnalyserError(DeonticBenchError):
    """The analyser itself did not produce a report (a bug or a limit, never the target's fault)."""


@cache
def analyser_version() -> str:
    """Content hash of the analyser and of this reading of it: the cache key's version."""
    digest = hashlib.sha256(ANALYSER.read_bytes())
    digest.update(PYTHON_SIDE_VERSION.encode())
    return digest.hexdigest()[:16]


_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t"}
_ESCAPES.update({chr(c): f"\\x{c:x}\\" for c in (*range(32), 127) if chr(c) not in _ESCAPES})
_RARE_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""Control characters other than newline and tab: programs almost never hold one."""


def prolog_string(text: str) -> str:
    """``text`` as a double-quoted SWI-Prolog string literal (every character escaped
    that the reader would otherwise interpret).  The four common escapes are done by
    ``str.replace`` (C speed: a batch's driver carries every program of the batch);
    ``str.translate`` with a table of multi-character replacements walked each
    character in Python's slow path, 0.14 s for the 251 hard programs, before the first
    analyser job could start."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    if _RARE_CONTROLS.search(escaped):
        escaped = _RARE_CONTROLS.sub(lambda found: _ESCAPES[found.group()], escaped)
    return '"' + escaped + '"'


def canonical(program: str) -> str:
    """The text analysed and cached: trailing blank space never changes a program."""
    return program.rstrip() + "\n"


def driver_program(
    mode: AnalyserMode, programs: str | Sequence[str], sandbox: SandboxKind = "bwrap"
) -> str:
    """The job: under bwrap, consult the analyser where the sandbox shows ``prolog/``
    read-only (a no-op where the SWI-Prolog it runs in loaded it already: a worker's
    preloaded fork server, see ``Solver.run``); under plain rlimits (where the job's uid
    may not read the host path) the analyser's text is the job itself, followed by the
    call.  A list of programs is one batch job (the analyser loads once and bounds each
    program on its own)."""
    if isinstance(programs, str):
        goal = f"deonticbench_analyse({mode}, {prolog_string(canonical(programs))})"
    else:
        texts = ", ".join(prolog_string(canonical(p)) for p in programs)
        goal = f"deonticbench_analyse_batch({mode}, [{texts}])"
    call = f":- initialization({goal}, main).\n"
    if sandbox == "bwrap":
        return f":- encoding(utf8).\n:- use_module('{SANDBOX_PROLOG}/{ANALYSER.name}').\n{call}"
    return ANALYSER.read_text(encoding="utf-8") + "\n" + call


def analysis_limits(base: Limits | None = None, batch: int = 1) -> Limits:
    """A program's limits, with room for a proof tree in the output; a batch of N
    programs gets N times the time (each program is bounded inside the analyser)."""
    lim = base or Limits()
    return replace(
        lim,
        output_bytes=OUTPUT_BYTES * batch,
        timeout_s=lim.timeout_s * batch,
        cpu_s=lim.cpu_s * batch,
    )


_Found = dict[int, tuple[dict[str, Any], str]]
"""Reports by program index, each parsed and as the analyser printed it."""


def report_lines(execution: Execution) -> _Found:
    """The analyser's JSON lines by program index, each parsed and as printed (a killed
    batch yields a prefix)."""
    found: _Found = {}
    for line in execution.stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            report = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(report, dict) and isinstance(report.get("index"), int):
            found[report["index"]] = (report, line)
    return found


def parse_reports(execution: Execution) -> dict[int, dict[str, Any]]:
    """The analyser's reports by program index (a killed batch yields a prefix)."""
    return {index: report for index, (report, _line) in report_lines(execution).items()}


def parse_report(execution: Execution) -> dict[str, Any]:
    """The one program's report, or AnalyserError saying why there is none."""
    report = parse_reports(execution).get(0)
    if report is not None and "analyser_error" not in report:
        return report
    if report is not None:
        raise AnalyserError(f"the analyser gave up: {report['analyser_error']}".strip())
    reason = execution.limit or execution.status
    tail = execution.stderr.strip().splitlines()[-1:] or [""]
    raise AnalyserError(f"the analyser produced no report ({reason}) {tail[0]}".strip())


def run_analyser(
    program: str, mode: AnalyserMode, solver: Solver | None = None, limits: Limits | None = None
) -> dict[str, Any]:
    """Analyse one program text in the sandbox; the parsed JSON report."""
    lim = analysis_limits(limits or (solver.limits if solver else None))
    if solver is None:
        with Solver(workers=1, limits=lim) as own:
            execution = own.run(driver_program(mode, program, own.sandbox), lim, preload=_PRELOAD)
    else:
        execution = solver.run(driver_program(mode, program, solver.sandbox), lim, preload=_PRELOAD)
    return parse_report(execution)


BATCH = 64
"""Programs per analyser job at most.  Each worker's SWI-Prolog has the analyser loaded
already (``_PRELOAD``), so a job's own fixed cost is small, about 25 ms (48 airline
programs in one job 1.34 s, in 48 jobs 2.72 s, on one worker); the cost is the wait at
the end, when one worker still runs a long job and the other has none."""
SMALLEST = 8
"""Programs per job at least, but for the last round (``batches``)."""


def analysis_workers(solver: Solver) -> int:
    """Analyser jobs run at once: at most one per core.  A pool keeps a worker more than
    cores to hide short programs' hand-offs; an analyser job is a long batch whose
    hand-off is nothing beside it, and a third job on two cores would only take CPU from
    the thread that reads the finished jobs' reports (benchmarks/analysis.py: 3.09x
    validate with three jobs at once, 2.91x with two)."""
    return max(1, min(solver.size, os.cpu_count() or 1))


def batches(
    count: int, workers: int, batch: int = BATCH, smallest: int = SMALLEST
) -> list[list[int]]:
    """``count`` programs dealt into jobs that shrink as the work runs out: each job takes
    a share of what is left (a ``2 * workers``-th, between ``smallest`` and ``batch``),
    and the last ``workers * smallest`` programs or fewer make one job per worker, so
    that no worker runs a long job alone at the end (four equal jobs of the 251 hard
    programs left one worker idle for 0.5 to 0.9 s while the other finished its job:
    job lengths vary with the programs).  A few programs (up to two such rounds) are
    one job per worker from the start.  The programs are dealt in turn (job 0 takes
    program 0, job 1 program 1, ..., then on, a job leaving the deal once full), so
    that a domain's costlier programs, which come together, are spread over all jobs."""
    smallest = min(smallest, batch)
    sizes: list[int] = []
    left = count
    if count > 2 * workers * smallest:
        while left > workers * smallest:
            size = min(batch, max(smallest, -(-left // (2 * workers))))
            sizes.append(size)
            left -= size
    last = min(left, max(workers, -(-left // batch)))
    sizes += [left // last + (1 if job < left % last else 0) for job in range(last)]
    jobs: list[list[int]] = [[] for _ in sizes]
    turns = (job for turn in range(max(sizes, default=0)) for job, size in enumerate(sizes)
             if turn < size)  # fmt: skip
    for program, job in zip(range(count), turns, strict=True):
        jobs[job].append(program)
    return jobs


def analyse_many(
    programs: Sequence[str],
    mode: AnalyserMode,
    solver: Solver,
    batch: int = BATCH,
    on_job: Callable[[dict[int, dict[str, Any]]], None] | None = None,
    printed: dict[int, str] | None = None,
) -> list[dict[str, Any]]:
    """Reports for many programs, in order; a program whose analysis failed gets
    ``{"analyser_error": why}``.  Programs of a batch that died are retried alone.
    ``on_job`` is given each finished job's reports by program index, in the thread that
    waited for it, while other jobs still run.  ``printed``, when given, receives each
    report's JSON line as the analyser printed it, by program index: what a cache keeps,
    so that it need not serialise the parsed report again."""
    results: list[dict[str, Any] | None] = [None] * len(programs)
    chunks = batches(len(programs), analysis_workers(solver), batch)
    jobs = [driver_program(mode, [programs[i] for i in chunk], solver.sandbox) for chunk in chunks]
    sizes = [len(c) for c in chunks]

    def hook(job: int, found: _Found) -> None:
        if printed is not None:
            printed.update({chunks[job][offset]: line for offset, (_, line) in found.items()})
        if on_job is not None:
            on_job({chunks[job][offset]: report for offset, (report, _) in found.items()})

    retry: list[int] = []
    for chunk, (_execution, found) in zip(
        chunks, _map_sized(solver, jobs, sizes, hook), strict=True
    ):
        for offset, index in enumerate(chunk):
            if offset in found:
                results[index] = found[offset][0]
            else:
                retry.append(index)
    if retry:
        alone = [driver_program(mode, programs[i], solver.sandbox) for i in retry]
        for index, (execution, found) in zip(
            retry, _map_sized(solver, alone, [1] * len(alone)), strict=True
        ):
            if 0 in found:
                results[index] = found[0][0]
                if printed is not None:
                    printed[index] = found[0][1]
            else:
                reason = execution.limit or execution.status
                results[index] = {"analyser_error": f"the analyser produced no report ({reason})"}
    return [r if r is not None else {"analyser_error": "not analysed"} for r in results]


def _map_sized(
    solver: Solver,
    jobs: list[str],
    sizes: list[int],
    hook: Callable[[int, _Found], None] | None = None,
) -> list[tuple[Execution, _Found]]:
    """Run the jobs and read their reports.  A finished job's JSON is parsed (and given
    to ``hook``) by one reader thread while its worker already runs the next job: when
    the thread that waited for a job also read it, the worker stood idle meanwhile
    (about a third of a second per job of 64 programs)."""
    if not jobs:
        return []  # everything was cached: no worker needs starting
    solver.start_all()
    with (
        ThreadPoolExecutor(analysis_workers(solver)) as runners,
        ThreadPoolExecutor(1) as reader,
    ):

        def read(job: int, execution: Execution) -> tuple[Execution, _Found]:
            found = report_lines(execution)
            if hook is not None:
                hook(job, found)
            return execution, found

        def run(job: int) -> Future[tuple[Execution, _Found]]:
            limits = analysis_limits(solver.limits, sizes[job])
            execution = solver.run(jobs[job], limits, preload=_PRELOAD)
            return reader.submit(read, job, execution)

        read_jobs = list(runners.map(run, range(len(jobs))))
        return [done.result() for done in read_jobs]
