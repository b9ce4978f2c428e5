"""Judging what a trial left: the harness runs solution.pl itself and reads the answer
with the prompted modes' readers; a workspace with no readable answer abstains."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deonticbench.agents import build_workspace, judge_workspace
from deonticbench.data.cases import load_cases, resolve_source
from deonticbench.data.domains import DOMAINS, get_domain
from deonticbench.evaluation.validate import check_case, reference_program
from deonticbench.solver import Solver

DATA = os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data")
pytestmark = pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")


@pytest.mark.parametrize("domain_name", list(DOMAINS))
def test_a_left_reference_program_is_judged_as_validate_judges_it(
    domain_name: str, solver: Solver, tmp_path: Path
) -> None:
    domain = get_domain(domain_name)
    for number, case in enumerate(load_cases(domain, "smoke", resolve_source(DATA))[:2]):
        ws = build_workspace(case, "agent-zero-shot", tmp_path / str(number))
        (ws.root / "solution.pl").write_text(case.reference_prolog)
        judged = judge_workspace(domain, "agent-zero-shot", ws.root, solver)
        prepared = reference_program(domain, case)
        check = check_case(domain, case, solver.run(prepared.text), prepared.repaired)
        assert (judged.answer.value, judged.outcome(domain, case.gold)) == (
            check.answer,
            check.outcome,
        )
        assert judged.execution is not None and judged.program is not None


def test_no_readable_answer_is_an_abstention_with_its_reason(
    solver: Solver, tmp_path: Path
) -> None:
    domain = get_domain("sara_numeric")
    case = load_cases(domain, "smoke", resolve_source(DATA))[0]
    ws = build_workspace(case, "agent-zero-shot", tmp_path / "ws")
    missing = judge_workspace(domain, "agent-zero-shot", ws.root, solver)
    assert missing.answer.abstained and "no solution.pl" in (missing.answer.reason or "")
    assert missing.outcome(domain, case.gold) == "abstain"
    (ws.root / "solution.pl").write_text(":- format('I think the tax is 5~n').\n")
    silent = judge_workspace(domain, "agent-zero-shot", ws.root, solver)
    assert silent.answer.abstained and silent.execution is not None
    (ws.root / "solution.pl").unlink()
    outside = tmp_path / "elsewhere.pl"
    outside.write_text(":- format('Tax result: 1~n').\n")
    (ws.root / "solution.pl").symlink_to(outside)
    linked = judge_workspace(domain, "agent-zero-shot", ws.root, solver)
    assert linked.answer.abstained and linked.execution is None


def test_direct_reads_the_answer_file_else_the_submitted_text(
    solver: Solver, tmp_path: Path
) -> None:
    domain = get_domain("sara_binary")
    case = load_cases(domain, "smoke", resolve_source(DATA))[0]
    ws = build_workspace(case, "agent-direct", tmp_path / "ws")
    submitted = judge_workspace(domain, "agent-direct", ws.root, solver, "Answer: Entailment")
    assert submitted.answer.value == "Entailment"
    nothing = judge_workspace(domain, "agent-direct", ws.root, solver)
    assert nothing.answer.abstained
    (ws.root / "output" / "answer.txt").write_text("Answer: Contradiction\n")
    filed = judge_workspace(domain, "agent-direct", ws.root, solver, "Answer: Entailment")
    assert filed.answer.value == "Contradiction"
    attempt = filed.attempt(domain, case.gold, prompt_hash="h")
    assert attempt.outcome == ("correct" if case.gold == "Contradiction" else "wrong")


def test_the_judge_takes_the_harness_own_run_only_of_the_identical_program(
    solver: Solver, tmp_path: Path
) -> None:
    import asyncio
    import dataclasses

    from deonticbench.agents import ajudge_workspace
    from deonticbench.reading.programs import prepare_program

    domain = get_domain("airline")
    case = load_cases(domain, "smoke", resolve_source(DATA))[0]
    ws = build_workspace(case, "agent-zero-shot", tmp_path / "ws")
    (ws.root / "solution.pl").write_text(":- format('Total cost: 5~n').\n")
    prepared = prepare_program(domain, (ws.root / "solution.pl").read_text()).text
    earlier = dataclasses.replace(solver.run(prepared), stdout="Total cost: 7\n")
    ran: list[str] = []

    async def execute(program: str, limits: object = None) -> object:
        ran.append(program)
        return await solver.arun(program)

    same = asyncio.run(ajudge_workspace(domain, "agent-zero-shot", ws.root, execute,
                                        last_run=(prepared, earlier)))  # fmt: skip
    assert same.answer.value == 7.0 and ran == []
    other = asyncio.run(ajudge_workspace(domain, "agent-zero-shot", ws.root, execute,
                                         last_run=(prepared + "% edited\n", earlier)))  # fmt: skip
    assert other.answer.value == 5.0 and ran == [prepared]
