"""Executor benchmark: the sandboxed pool versus a plain one-after-another swipl loop.

Both sides run every reference program of the hard split (all domains), measured in the
same run and interleaved (loop, pool, loop, pool, ...) so machine noise hits both alike:

* plain loop: ``swipl -q -f program.pl`` per program, one after another, no sandbox;
* pool: ``deonticbench validate --split hard`` end to end as a user runs it, command
  start-up, data loading, sandbox set-up and answer checking included.

Goal (issue 2): pool time <= 0.6 x loop time on this 2-core machine, sandbox on.
Usage: python benchmarks/executor.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deonticbench.data import load_cases, resolve_source
from deonticbench.domains import DOMAINS
from deonticbench.programs import prepare_program


def write_programs(folder: Path) -> list[Path]:
    source = resolve_source()
    paths = []
    for domain in DOMAINS.values():
        for case in load_cases(domain, "hard", source):
            path = folder / f"{domain.name}-{len(paths)}.pl"
            path.write_text(prepare_program(domain, case.reference_prolog).text)
            paths.append(path)
    return paths


def plain_loop(paths: list[Path]) -> float:
    started = time.perf_counter()
    for path in paths:
        subprocess.run(
            ["swipl", "-q", "-f", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
        )
    return time.perf_counter() - started


def pool_cli() -> tuple[float, dict[str, object]]:
    command = [sys.executable, "-m", "deonticbench", "validate", "--split", "hard", "--json"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("DEONTICBENCH_DATA"):
        sys.exit("set DEONTICBENCH_DATA to the data folder (make bench does)")
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_programs(Path(tmp))
        loops, pools = [], []
        sandbox = "?"
        for round_no in range(1, args.rounds + 1):
            loops.append(plain_loop(paths))
            seconds, report = pool_cli()
            pools.append(seconds)
            sandbox = str(report["sandbox"])
            print(
                f"round {round_no}: plain loop {loops[-1]:.2f} s, "
                f"deonticbench validate {pools[-1]:.2f} s, ratio {pools[-1] / loops[-1]:.2f}"
            )
    loop_s, pool_s = statistics.median(loops), statistics.median(pools)
    print(f"programs: {len(paths)}   cores: {os.cpu_count()}   sandbox: {sandbox}")
    print(f"plain swipl loop (median): {loop_s:.2f} s")
    print(f"deonticbench validate, end to end (median): {pool_s:.2f} s")
    print(f"ratio pool/loop: {pool_s / loop_s:.2f}   (goal <= 0.60)")


if __name__ == "__main__":
    main()
