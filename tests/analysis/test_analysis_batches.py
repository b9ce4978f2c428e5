"""How programs are dealt into analyser jobs, and that dealing never changes a report:
each program's report from a dealt batch is the one it gets analysed alone (real swipl,
real sandbox)."""

from __future__ import annotations

import json
import re
from typing import Any

from small_programs import SMALL_PROGRAMS

from deonticbench.analysis.engine import analyse_many, batches, run_analyser
from deonticbench.solver import Solver


def test_jobs_shrink_as_the_work_runs_out_and_programs_are_dealt_in_turn() -> None:
    dealt = batches(251, 2, batch=64)
    sizes = [len(job) for job in dealt]
    # Each job a quarter of what is left (2 workers), at least 8, then one job per worker.
    assert sizes == [63, 47, 36, 27, 20, 15, 11, 8, 8, 8, 8]
    assert sorted(i for job in dealt for i in job) == list(range(251))
    assert dealt[1][:3] == [1, 12, 23]  # a domain's neighbours go to different jobs
    assert [len(job) for job in batches(23, 2)] == [12, 11]  # a few: one job per worker
    assert [len(job) for job in batches(10, 2)] == [5, 5]
    assert [len(job) for job in batches(3, 8)] == [1, 1, 1]
    assert max(len(job) for job in batches(40, 2, batch=3)) == 3
    assert batches(0, 2) == []


PROGRAMS = SMALL_PROGRAMS


def test_a_dealt_batch_reports_what_each_program_gets_alone() -> None:
    with Solver(workers=2) as solver:
        together = analyse_many(PROGRAMS, "full", solver, batch=3)  # 2 jobs, dealt
        alone = [run_analyser(program, "full", solver) for program in PROGRAMS]
    for batched, single in zip(together, alone, strict=True):
        assert "analyser_error" not in batched
        assert _placeless(batched) == _placeless(single)


def _placeless(report: dict[str, Any]) -> Any:
    """A report without its place in the batch: the index, and the module the program
    was loaded into (named after the index, it shows in error messages)."""
    text = json.dumps({k: v for k, v in report.items() if k != "index"})
    return json.loads(re.sub(r"deonticbench_target_\d+", "deonticbench_target", text))
