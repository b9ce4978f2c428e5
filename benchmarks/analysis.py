"""Analysis benchmark: ``analyze`` on a reference run of hard versus ``validate --split
hard``, side by side in one run.

Both run every hard reference program in the same sandbox pool: validate runs each once;
analyze runs the Prolog analyser on each (static analysis with library(prolog_xref), the
meta-interpreted proof of the answer) and compares it with its reference.  The run folder
is made first with ``eval --model reference`` (not timed); analyze starts from an empty
cache every round.  Rounds interleave the two so machine noise hits both alike.

Goal (issue 9): analyze at most 3x the time of validate.
Usage: python benchmarks/analysis.py [--rounds N] [--workers W] [--rows FILE]

``--rows FILE`` checks that a change to the analyser or the comparison left every result
alone: the first time it keeps the last round's analysis.jsonl in FILE; when FILE exists
it requires the new rows to be identical, in any order (analysis.jsonl has no timing
fields), and exits non-zero otherwise.
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--rows", type=Path, default=None)
    args = parser.parse_args()
    if not os.environ.get("DEONTICBENCH_DATA"):
        sys.exit("set DEONTICBENCH_DATA to the data mirror (make bench does)")
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "reference-hard"
        subprocess.run(
            [sys.executable, "-m", "deonticbench", "eval", "--model", "reference",
             "--split", "hard", "--modes", "zero-shot", "-k", "1", "--out", str(run),
             "--no-cache"],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        times: dict[str, list[float]] = {"validate": [], "analyze": []}
        with Solver(workers=args.workers) as solver:
            validate(parse_domains("all"), "hard", solver=solver)  # warm the workers
            for _ in range(args.rounds):
                started = time.perf_counter()
                validate(parse_domains("all"), "hard", solver=solver)
                times["validate"].append(time.perf_counter() - started)
                (run / CACHE_FILE).unlink(missing_ok=True)
                started = time.perf_counter()
                _rows, counts = analyse_run(run, solver=solver)
                times["analyze"].append(time.perf_counter() - started)
        v, a = statistics.median(times["validate"]), statistics.median(times["analyze"])
        print(f"programs: {counts['programs']} distinct ({counts['records']} records)")
        print(f"validate --split hard: {v:.2f} s   analyze (empty cache): {a:.2f} s")
        print(f"ratio analyze / validate: {a / v:.2f}x   (goal: <= 3x)")
        started = time.perf_counter()
        analyse_run(run, workers=args.workers)
        print(f"analyze again (everything cached): {time.perf_counter() - started:.2f} s")
        if args.rows is not None:
            _check_rows(run / ANALYSIS_FILE, args.rows)


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
