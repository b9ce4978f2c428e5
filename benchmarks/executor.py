"""Executor benchmark: both executors of the sandboxed pool versus a plain swipl loop.

Every side runs every reference program of the hard split (all domains), measured in the
same run and interleaved (loop, fork, fresh, loop, fork, fresh, ...) so machine noise hits
all alike:

* plain loop: ``swipl -q -f program.pl`` per program, one after another, no sandbox;
* fork / fresh: ``deonticbench validate --split hard --executor fork|fresh`` end to end
  as a user runs it, command start-up, data loading, sandbox set-up and answer checking
  included.

Then a warm pool's throughput for a 640-program batch (the hard programs, cycled), the
shape of a training step's reward batch: programs per second through ``Solver.map``.

Goals: fork validate <= 0.20 x loop time on this 2-core machine, sandbox on (0.25 at
most), or a breakdown showing that what remains is start-up and the programs' own time;
a 640-program batch at >= 200 programs per second.  The breakdown: the command's
start-up (``validate --help``: Python, imports, click), the programs' summed wall time
spread over the cores (from a run with one worker per core), and the rest (data loading,
sandbox boot, reading answers, hand-offs the extra worker does not hide).
Usage: python benchmarks/executor.py [--rounds N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _baseline import plain_loop  # benchmarks/ is sys.path[0] when run as a script

from deonticbench.data.cases import load_cases, resolve_source
from deonticbench.data.domains import DOMAINS
from deonticbench.evaluation.validate import reference_program
from deonticbench.solver import EXECUTORS, Solver

BATCH = 640


def write_programs(folder: Path) -> list[Path]:
    source = resolve_source()
    paths = []
    for domain in DOMAINS.values():
        for case in load_cases(domain, "hard", source):
            path = folder / f"{domain.name}-{len(paths)}.pl"
            path.write_text(reference_program(domain, case).text)
            paths.append(path)
    return paths


def validate_cli(executor: str, *extra: str) -> tuple[float, dict[str, object]]:
    command = [sys.executable, "-m", "deonticbench", "validate", "--split", "hard", "--json"]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--executor", executor, *extra], capture_output=True, text=True, check=True
    )
    return time.perf_counter() - started, json.loads(done.stdout)


def programs_own_wall() -> float:
    """The programs' summed wall times spread over the cores, from a validate run with
    one worker per core (the default pool has one more, whose programs then share a core
    and would count the waiting as their own time)."""
    cores = os.cpu_count() or 1
    _, report = validate_cli("fork", "--workers", str(cores))
    domains = report["domains"]
    assert isinstance(domains, dict)
    return sum(float(d.get("seconds", 0.0)) for d in domains.values()) / cores


def startup() -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "deonticbench", "validate", "--help"],
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - started


def batch_rate(paths: list[Path], executor: str) -> float:
    programs = [p.read_text() for p in itertools.islice(itertools.cycle(paths), BATCH)]
    with Solver(executor=executor) as solver:  # type: ignore[arg-type]
        solver.map(programs[: solver.size * 2])  # warm: sandboxes and fork servers up
        started = time.perf_counter()
        executions = solver.map(programs)
        seconds = time.perf_counter() - started
    assert len(executions) == BATCH
    return BATCH / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("DEONTICBENCH_DATA"):
        sys.exit("set DEONTICBENCH_DATA to the data folder (make bench does)")
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_programs(Path(tmp))
        loops: list[float] = []
        runs: dict[str, list[float]] = {e: [] for e in EXECUTORS}
        rates: dict[str, list[float]] = {e: [] for e in EXECUTORS}
        sandbox = "?"
        starts: list[float] = []
        programs: list[float] = []
        for round_no in range(1, args.rounds + 1):
            loops.append(plain_loop(paths))
            line = f"round {round_no}: plain loop {loops[-1]:.2f} s"
            for executor in EXECUTORS:
                seconds, report = validate_cli(executor)
                assert report["executor"] == executor, report["executor"]
                runs[executor].append(seconds)
                sandbox = str(report["sandbox"])
                line += f", validate {executor} {seconds:.2f} s ({seconds / loops[-1]:.2f})"
            for executor in EXECUTORS:
                rates[executor].append(batch_rate(paths, executor))
                line += f", batch {executor} {rates[executor][-1]:.0f}/s"
            starts.append(startup())
            programs.append(programs_own_wall())
            line += f", start-up {starts[-1]:.2f} s, programs {programs[-1]:.2f} s"
            print(line, flush=True)
    loop_s = statistics.median(loops)
    print(f"programs: {len(paths)}   cores: {os.cpu_count()}   sandbox: {sandbox}")
    print(f"plain swipl loop (median): {loop_s:.2f} s")
    for executor in EXECUTORS:
        seconds = statistics.median(runs[executor])
        print(
            f"deonticbench validate --executor {executor}, end to end (median): "
            f"{seconds:.2f} s   ratio to the loop: {seconds / loop_s:.2f}"
            + ("   (goal <= 0.25)" if executor == "fork" else "")
        )
    fork_s, start_s, programs_s = (
        statistics.median(runs["fork"]),
        statistics.median(starts),
        statistics.median(programs),
    )
    print(
        f"breakdown of validate --executor fork (medians): command start-up {start_s:.2f} s, "
        f"programs' own wall time over {os.cpu_count()} cores {programs_s:.2f} s, the rest "
        f"{fork_s - start_s - programs_s:.2f} s (data, sandbox boot, answers); floor "
        f"(start-up + programs) {(start_s + programs_s) / loop_s:.2f} of the loop"
    )
    for executor in EXECUTORS:
        rate = statistics.median(rates[executor])
        print(
            f"{BATCH}-program batch, warm pool, {executor}: {rate:.0f} programs/s"
            + ("   (goal >= 200)" if executor == "fork" else "")
        )


if __name__ == "__main__":
    main()
