"""The runner reads each unit with its protocol's reader (``reader_for(unit.protocol)``):
a ``--protocol paper`` run's programs are prepared, run and read as upstream's scripts do;
a ``--protocol harness`` run's as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deonticbench import RunOptions, RunSpec, evaluate
from deonticbench.data.sources import resolve_source
from deonticbench.store.records_file import read_records

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)


def _first_attempts(tmp_path: Path, protocol: str) -> list:
    spec = RunSpec(
        model="reference",
        domains=("uscis",),
        split="smoke",
        modes=("zero-shot",),
        k=1,
        data=resolve_source(DATA),
        protocol=protocol,  # type: ignore[arg-type]
    )
    evaluate(spec, RunOptions(out=tmp_path / protocol, cache=False))
    records = read_records(tmp_path / protocol / "records.jsonl").records.values()
    return [r.first for r in records]


def test_a_paper_run_prepares_and_runs_programs_as_upstream_does(tmp_path: Path) -> None:
    paper = _first_attempts(tmp_path, "paper")
    harness = _first_attempts(tmp_path, "harness")
    assert paper and harness
    # USCIS reference programs define no main/0: each reader adds its own entry point.
    for attempt in paper:
        assert attempt.program.endswith(
            "main :-\n    decision(Result),\n    writeln(Result).\n:- initialization(main, main).\n"
        )
    for attempt in harness:
        assert "% added by deonticbench" in attempt.program
