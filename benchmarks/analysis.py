"""Analysis benchmark: ``analyze`` of a reference run of hard under each protocol, and
against ``validate --split hard``, side by side in one run.

Both protocols' reference runs are made first with ``eval --model reference`` (not
timed).  Every round then times ``validate --split hard`` and ``analyze`` of each run
from an empty cache, all on one warm sandbox pool, the two protocols' order alternating
from round to round, so machine noise hits every side alike; the medians are compared.
validate runs each hard reference program once; analyze runs the Prolog analyser on
every distinct program of the run and on its case's reference (static analysis with
library(prolog_xref), the meta-interpreted proof of the answer) and compares them.

Goals: analyze of each run at most 3x the time of validate; analyze
of the paper-protocol run as costly as that of the harness run (see docs/performance.md
for why the paper run has more distinct programs, and which of their reports are
derived from another's rather than analysed).
Usage: python benchmarks/analysis.py [--rounds N] [--workers W] [--rows FILE]

``--rows FILE`` checks that a change to the analyser or the comparison left every result
alone: the first time it keeps the last round's analysis.jsonl of the harness run in
FILE and of the paper run in FILE.paper; when they exist it requires the new rows to be
identical, in any order (analysis.jsonl has no timing fields), and exits non-zero
otherwise.

Where the time goes: beside each analysis's wall
time the script prints the CPU seconds of this Python process (reading the reports,
diagnosing) and of the sandbox workers' process trees (the analyser's SWI-Prolog jobs),
read from /proc, so that the two protocols' costs can be told apart in the same run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deonticbench.analysis.run import ANALYSIS_FILE, CACHE_FILE, analyse_run
from deonticbench.data.domains import parse_domains
from deonticbench.evaluation.validate import validate
from deonticbench.solver import Solver

PROTOCOLS = ("harness", "paper")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--rows", type=Path, default=None)
    args = parser.parse_args()
    if not os.environ.get("DEONTICBENCH_DATA"):
        sys.exit("set DEONTICBENCH_DATA to the data mirror (make bench does)")
    with tempfile.TemporaryDirectory() as tmp:
        runs = {protocol: _reference_run(Path(tmp), protocol) for protocol in PROTOCOLS}
        times: dict[str, list[float]] = {"validate": [], **{p: [] for p in PROTOCOLS}}
        programs: dict[str, int] = {}
        derived: dict[str, int] = {}
        cpu: dict[str, list[tuple[float, float]]] = {p: [] for p in PROTOCOLS}
        with Solver(workers=args.workers) as solver:
            validate(parse_domains("all"), "hard", solver=solver)  # warm the workers
            for round_ in range(args.rounds):
                started = time.perf_counter()
                validate(parse_domains("all"), "hard", solver=solver)
                times["validate"].append(time.perf_counter() - started)
                order = PROTOCOLS if round_ % 2 == 0 else PROTOCOLS[::-1]
                for protocol in order:
                    (runs[protocol] / CACHE_FILE).unlink(missing_ok=True)
                    before = _cpu_seconds()
                    started = time.perf_counter()
                    _rows, counts = analyse_run(runs[protocol], solver=solver)
                    times[protocol].append(time.perf_counter() - started)
                    after = _cpu_seconds()
                    cpu[protocol].append((after[0] - before[0], after[1] - before[1]))
                    programs[protocol] = counts["programs"]
                    derived[protocol] = counts["derived"]
        analysed = {p: programs[p] - derived[p] for p in PROTOCOLS}
        _print_figures(times, programs, derived)
        _print_cpu(cpu, analysed)
        started = time.perf_counter()
        analyse_run(runs["harness"], workers=args.workers)
        print(f"analyze again (everything cached): {time.perf_counter() - started:.2f} s")
        if args.rows is not None:
            _check_rows(runs["harness"] / ANALYSIS_FILE, args.rows)
            _check_rows(
                runs["paper"] / ANALYSIS_FILE, args.rows.with_name(args.rows.name + ".paper")
            )


def _reference_run(tmp: Path, protocol: str) -> Path:
    run = tmp / f"reference-hard-{protocol}"
    subprocess.run(
        [sys.executable, "-m", "deonticbench", "eval", "--model", "reference",
         "--split", "hard", "--modes", "zero-shot", "-k", "1", "--protocol", protocol,
         "--out", str(run), "--no-cache"],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    return run


def _print_figures(
    times: dict[str, list[float]], programs: dict[str, int], derived: dict[str, int]
) -> None:
    """The medians and ratios; ``derived``: the reports of each run made from another
    program's report (analysis.derive) rather than by the analyser."""
    v = statistics.median(times["validate"])
    a = {p: statistics.median(times[p]) for p in PROTOCOLS}
    rounds = ", ".join(f"{t:.2f}" for t in times["validate"])
    print(f"validate --split hard: {v:.2f} s (rounds {rounds})")
    for p in PROTOCOLS:
        rounds = ", ".join(f"{t:.2f}" for t in times[p])
        print(
            f"analyze, {p} run (empty cache): {a[p]:.2f} s (rounds {rounds}); "
            f"{programs[p]} distinct programs ({programs[p] - derived[p]} analysed, "
            f"{derived[p]} derived), {a[p] / programs[p] * 1000:.1f} ms each"
        )
    for p in PROTOCOLS:
        print(f"ratio analyze ({p}) / validate: {a[p] / v:.2f}x   (goal: <= 3x)")
    per_program = (a["paper"] / programs["paper"]) / (a["harness"] / programs["harness"])
    print(
        f"ratio analyze paper / harness: {a['paper'] / a['harness']:.2f}x for "
        f"{programs['paper'] / programs['harness']:.2f}x the programs; per program "
        f"{per_program:.2f}x   (goal: 1x)"
    )


def _cpu_seconds() -> tuple[float, float]:
    """CPU seconds so far of this process (all its threads) and of its descendants (the
    sandbox workers, each with the jobs it reaped), read from /proc (Linux)."""
    own = os.times()
    children: dict[int, list[int]] = {}
    used: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a process that ended meanwhile
        children.setdefault(int(fields[1]), []).append(int(entry))
        # utime, stime, cutime, cstime: the process and the children it reaped.
        used[int(entry)] = sum(int(f) for f in fields[11:15]) / tick
    total, stack = 0.0, list(children.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        total += used.get(pid, 0.0)
        stack.extend(children.get(pid, []))
    return own.user + own.system, total


def _print_cpu(cpu: dict[str, list[tuple[float, float]]], analysed: dict[str, int]) -> None:
    """CPU medians; the analyser's per program analysed (a derived report costs none)."""
    for p in PROTOCOLS:
        python = statistics.median(c[0] for c in cpu[p])
        prolog = statistics.median(c[1] for c in cpu[p])
        print(
            f"CPU, {p} run (medians): Python {python:.2f} s, analyser jobs {prolog:.2f} s "
            f"({prolog / analysed[p] * 1000:.1f} ms a program analysed)"
        )


def _check_rows(rows: Path, kept: Path) -> None:
    """The rows as sorted lines: ``eval`` writes records in the order they finish, so
    two reference runs hold the same rows in another order."""
    lines = sorted(rows.read_text(encoding="utf-8").splitlines())
    if not kept.exists():
        kept.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"rows kept in {kept} for the next run to compare with")
    elif sorted(kept.read_text(encoding="utf-8").splitlines()) == lines:
        print(f"rows identical to {kept}")
    else:
        sys.exit(f"analysis.jsonl differs from {kept}: a result changed")


if __name__ == "__main__":
    main()
