"""The verifier shipped in every exported Harbor task (``tests/verifier.pyz``).

Run by the task's ``tests/test.sh`` after the agent has finished, inside the task's
environment, it judges what the agent left exactly as the harness judges a program or a
direct answer: program modes run ``solution.pl`` with the solver's own supervisor (a
fresh ``swipl``, the standard limits: 20 s wall clock, CPU, memory, output) and read its
stdout with the harness's answer reader; direct mode reads ``output/answer.txt`` with
the direct-answer reader; the answer is judged by the paper's rules (±$1 after Python
rounding, class names normalised, an abstention with its reason never correct).

It always writes ``/logs/verifier/reward.json``: Harbor averages every number there into
its job summary, so it holds only ``reward`` and the outcome as 0/1 (``correct``,
``wrong``, ``abstain``); the answer and the parts as text (``answer``, ``outcome``,
``abstain_reason``) go to ``/logs/verifier/verdict.json`` beside it.  Its stdout also
prints DAR's ``Expected:``/``Got:``/``Normalized ...`` lines for the same answer, so
DAR's scorer can read these tasks' trials too.

Standard library only, and the harness modules bundled in the zip with it.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from ...agents.judge import ajudge_workspace
from ...data.domains import Domain, get_domain
from ...reading import dar_verifier
from ...solver import Execution, Limits, build_job, classify, supervisor
from ...vocabulary.modes import Mode, prompted_counterpart

TASK_WORKDIR = "/app"
"""The working directory of the harness's own Harbor tasks (``export --format harbor``):
their Dockerfile's ``WORKDIR`` and task.toml's ``workdir``, where the agentic workspace is
copied, where the agent's work is collected from, and what test.sh hands this verifier.
(DAR's tasks mount their workspace at a folder of the same path, another fact:
``reading.dar_verifier.DAR_MOUNT``.)"""
CASE_FILE = "case.json"
"""In the task's tests/: domain, case id, mode, gold (never seen by the agent)."""
REWARD_FILE = "reward.json"
VERDICT_FILE = "verdict.json"
_ANSWER_LINE = re.compile(r"^\s*answer:\s*(.*?)\s*$", re.IGNORECASE)


def run_program_unsandboxed(program: str, limits: Limits | None = None) -> Execution:
    """Run a program as the solver's workers do, under the same limits, but with no
    sandbox of our own: the verifier runs inside the Harbor task's environment, which is
    the sandbox (a container or ``BwrapEnvironment``), and that environment may have no
    bubblewrap or no user namespaces to start one.  Never call it outside such a task:
    ``solver.run_program`` is the sandboxed one."""
    job = build_job(program, limits or Limits())
    with tempfile.TemporaryDirectory(prefix="deonticbench-verify-") as workroot:
        report = supervisor.run_job(job, None, workroot)
    return classify(report, "rlimits")


def dar_expected(domain: Domain, gold: int | str) -> str:
    """The expected string DAR's tasks hold for a gold label."""
    return str(int(gold)) if domain.label_kind == "numeric" else str(gold)


def _answer_values(domain: Domain, text: str, direct: bool) -> list[str]:
    """The raw values of the answer lines, as DAR's verifier would gather them."""
    patterns = [re.compile(p, re.IGNORECASE) for p in domain.answer_patterns]
    if direct:
        patterns.append(_ANSWER_LINE)
    values = []
    for line in text.splitlines():
        for pattern in patterns:
            match = pattern.match(line)
            if match:
                values.append(match.group(1))
                break
    return values


def verdict_of(domain: Domain, mode: Mode, gold: int | str, workspace: Path) -> dict[str, Any]:
    """The verdict on what a trial left in ``workspace`` (the agentic judging of the
    harness, with this task's environment as the sandbox): answer, outcome, reason, and
    the text DAR's verifier would have compared."""

    async def execute(program: str) -> Execution:
        return run_program_unsandboxed(program)

    judgement = asyncio.run(ajudge_workspace(domain, mode, workspace, execute))
    execution = judgement.execution
    direct = prompted_counterpart(mode) == "direct"
    raw_text = (judgement.response or "") if direct else (execution.stdout if execution else "")
    return {
        "answer": judgement.answer.value,
        "outcome": judgement.outcome(domain, gold),
        "abstain_reason": judgement.answer.reason,
        "repaired": judgement.repaired,
        "execution": execution.to_dict() if execution is not None else None,
        "dar_expected": dar_expected(domain, gold),
        "dar_got": dar_verifier.squeeze(_answer_values(domain, raw_text, direct)),
    }


def rewards(verdict: dict[str, Any]) -> dict[str, float]:
    """reward.json: the numbers Harbor should average (its rule: numbers only), each a
    0/1 whose mean is a share.  The answer is no reward: Harbor would average it into
    its job summary, so it stays in verdict.json and the ``Got:`` line."""
    outcome = verdict["outcome"]
    return {
        "reward": 1.0 if outcome == "correct" else 0.0,
        "correct": float(outcome == "correct"),
        "wrong": float(outcome == "wrong"),
        "abstain": float(outcome == "abstain"),
    }


def report_lines(verdict: dict[str, Any]) -> list[str]:
    execution = verdict["execution"]
    expected, got = verdict["dar_expected"], verdict["dar_got"]
    norm_expected, norm_got = dar_verifier.normalise(expected, got)
    lines = []
    if execution is not None:
        lines.append(f"Program status: {execution['status']} ({execution['wall_s']:.2f} s)")
    lines += [
        f"Judged answer: {verdict['answer']}",
        f"Outcome: {verdict['outcome']}",
        f"Abstain reason: {verdict['abstain_reason'] or '-'}",
        f"Expected: {expected}",
        f"Got:      {got}",
        f"Normalized expected: {norm_expected}",
        f"Normalized got:      {norm_got}",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    tests = Path(args[0]) if args else Path("/tests")
    workspace = Path(args[1] if len(args) > 1 else TASK_WORKDIR)
    logs = Path(args[2]) if len(args) > 2 else Path("/logs/verifier")
    logs.mkdir(parents=True, exist_ok=True)
    case = json.loads((tests / CASE_FILE).read_text(encoding="utf-8"))
    domain = get_domain(case["domain"])
    print(f"DeonticBench verifier: {domain.name} {case['case_id']} {case['mode']}")
    try:
        verdict = verdict_of(domain, case["mode"], case["gold"], workspace)
    except Exception as exc:  # the reward file is written whatever happens
        verdict = {
            "answer": None,
            "outcome": "abstain",
            "abstain_reason": f"the verifier failed: {type(exc).__name__}: {exc}",
            "execution": None,
            "dar_expected": dar_expected(domain, case["gold"]),
            "dar_got": "",
        }
    for line in report_lines(verdict):
        print(line)
    (logs / VERDICT_FILE).write_text(json.dumps(verdict, indent=2) + "\n", encoding="utf-8")
    (logs / REWARD_FILE).write_text(json.dumps(rewards(verdict)) + "\n", encoding="utf-8")
    return 0


__all__ = ["dar_expected", "main", "rewards", "run_program_unsandboxed", "verdict_of"]
