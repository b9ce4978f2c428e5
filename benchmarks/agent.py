"""Agent benchmark: the harness's own cost per tool call and per
trial, and a reference agentic run of hard against ``validate --split hard``, in one run.

1. Per tool call, straight through ``agents.tools.ToolBox`` on real workspaces with the
   hard split's reference programs: ``run_prolog`` overhead = the call's wall time minus
   the program's own time in the sandbox (``Execution.wall_s``); ``bash`` overhead = the
   wall time of ``bash("swipl solution.pl")`` minus the same program in a fresh, plain
   ``swipl`` (no sandbox), paired per program; ``bash("true")`` is shown too.  Goals:
   p50 <= 15 ms per run_prolog call, <= 40 ms per bash call.
2. A scripted agent behind the loopback server (the real openai client, the fake speaking
   its tool-calling format): 10 tool calls per trial, 5 of them run_prolog, over the hard
   split through ``Runner``.  Overhead per trial = its wall time minus the model calls'
   latency minus the programs' own time; also per tool call (/ 10).
3. ``deonticbench eval --model reference --modes agent-zero-shot --split hard`` (K=1, the
   runner and a fresh solver pool) against ``validate --split hard`` (its own pool).
   Goal: <= 3x.  The reference trial runs its program once (run_prolog; the judge takes
   that run of the identical bytes under the identical limits).

Part 2 runs its trials one at a time (each trial's wall time is then its own, not time
spent waiting for a worker busy with another trial); part 3 runs as ``eval`` does.

Usage: python benchmarks/agent.py [--limit N] [--calls N]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from fakeproviders import FakeProvider, FakeRequest, ToolTurn  # noqa: E402

from deonticbench.agents.tools import ToolBox  # noqa: E402
from deonticbench.agents.workspace import build_workspace  # noqa: E402
from deonticbench.data.cases import Case, load_cases, resolve_source  # noqa: E402
from deonticbench.data.domains import DOMAINS, Domain  # noqa: E402
from deonticbench.evaluation.runner import Runner  # noqa: E402
from deonticbench.evaluation.validate import reference_program, validate  # noqa: E402
from deonticbench.models import load_model  # noqa: E402
from deonticbench.models.base import Model  # noqa: E402
from deonticbench.models.reference import ReferenceModel, reference_table  # noqa: E402
from deonticbench.prompting.plan import RunPlan, plan_run  # noqa: E402
from deonticbench.reading.programs import unwrap_fenced  # noqa: E402
from deonticbench.solver import Execution, Limits, Solver  # noqa: E402
from deonticbench.store.folder import RunFolder  # noqa: E402
from deonticbench.store.record import Record  # noqa: E402
from deonticbench.vocabulary.chat import ToolCall  # noqa: E402


def hard_cases() -> list[tuple[Domain, Case]]:
    source = resolve_source()
    return [(d, c) for d in DOMAINS.values() for c in load_cases(d, "hard", source)]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def ms(values: list[float]) -> str:
    return f"p50 {1000 * pct(values, 0.5):6.1f} ms  p95 {1000 * pct(values, 0.95):6.1f} ms"


def plain_swipl(program: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["swipl", "-q", "-f", str(program)], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30)  # fmt: skip
    return time.perf_counter() - start


async def per_call(cases: list[tuple[Domain, Case]], solver: Solver) -> None:
    root = Path(tempfile.mkdtemp(prefix="deonticbench-bench-"))
    seen: list[Execution] = []

    async def execute(program: str, limits: Limits | None = None) -> Execution:
        execution = await solver.arun(program, limits)
        seen.append(execution)
        return execution

    prolog_over: list[float] = []
    bash_over: list[float] = []
    bash_true: list[float] = []
    plain: list[float] = []
    for index, (domain, case) in enumerate(cases):
        ws = build_workspace(case, "agent-zero-shot", root / str(index))
        program = reference_program(domain, case).text
        (ws.root / "solution.pl").write_text(program)
        box = ToolBox("prolog", ws.root, domain, execute)
        start = time.perf_counter()
        await box.call(ToolCall("c", "run_prolog", {"path": "solution.pl"}))
        prolog_over.append(time.perf_counter() - start - seen[-1].wall_s)
        shell = ToolBox("shell", ws.root, domain, execute)
        try:
            start = time.perf_counter()
            await shell.call(ToolCall("c", "bash", {"command": "swipl solution.pl"}))
            took = time.perf_counter() - start
            start = time.perf_counter()
            await shell.call(ToolCall("c", "bash", {"command": "true"}))
            bash_true.append(time.perf_counter() - start)
        finally:
            shell.close()
        alone = plain_swipl(ws.root / "solution.pl")
        plain.append(alone)
        bash_over.append(took - alone)
    print(f"1. per tool call, {len(cases)} hard programs")
    print(f"   plain fresh swipl (no sandbox)     {ms(plain)}")
    print(f"   run_prolog overhead                {ms(prolog_over)}   goal p50 <= 15 ms")
    print(f"   bash('swipl ...') - plain swipl    {ms(bash_over)}   goal p50 <= 40 ms")
    print(f"   bash('true'), whole call           {ms(bash_true)}")


def scripted(cases: list[Case]) -> object:
    by_text = {c.text.strip()[:200] or c.question.strip()[:200]: c for c in cases}

    def respond(request: FakeRequest) -> ToolTurn | str:
        turn = sum(1 for m in request.messages if m["role"] == "assistant")
        if turn == 0:
            return ToolTurn("", [("read_file", {"path": "case.txt"})])
        seen = "\n".join(m["content"] for m in request.messages if m["role"] == "tool")
        case = next(c for key, c in by_text.items() if key in seen)
        program = unwrap_fenced(case.reference_prolog)
        script = [
            ("list_files", {}),
            ("search", {"pattern": "Question", "path": "case.txt"}),
            ("write_file", {"path": "solution.pl", "content": program}),
            *[("run_prolog", {"path": "solution.pl"})] * 5,
            ("submit", {}),
        ]
        return ToolTurn("", [script[turn - 1]]) if turn - 1 < len(script) else "done"

    return respond


async def carry_out(
    model: Model, solver: Solver, plan: RunPlan, out: Path, *, one_by_one: bool = False
) -> list[Record]:
    """The plan through the runner; ``one_by_one``: a trial at a time, so that a trial's
    wall time holds no waiting for a sandbox worker busy with another trial."""
    config = {"model": {"spec": model.spec, "identity": model.identity()}, "split": "hard"}
    with RunFolder.open(out, config) as folder:
        runner = Runner(model, solver, folder, None, concurrency=8)
        if one_by_one:
            for unit in plan.units:
                await runner.run(dataclasses.replace(plan, units=[unit]))
        else:
            await runner.run(plan)
        records = list(folder.done.values())
    await model.aclose()
    return records


def per_trial(limit: int | None) -> None:
    source = resolve_source()
    plan = plan_run(list(DOMAINS.values()), split="hard", modes=["agent-zero-shot"],
                    source=source, k=1, limit=limit)  # fmt: skip
    cases = [u.case for u in plan.units]
    with FakeProvider() as fake, Solver() as solver:
        fake.responder = scripted(cases)  # type: ignore[assignment]
        model = load_model(f"openai-compatible:fake@{fake.openai_url}")
        out = Path(tempfile.mkdtemp(prefix="deonticbench-bench-")) / "run"
        records = asyncio.run(carry_out(model, solver, plan, out, one_by_one=True))
    overhead = []
    for r in records:
        assert r.agent is not None and r.agent.tool_calls.get("run_prolog") == 5, r.agent
        program = float((r.final.execution or {}).get("wall_s") or 0.0)
        overhead.append(r.agent.wall_s - r.final.latency_s - 5 * program)
    print(f"2. scripted agent, {len(records)} hard trials x 10 tool calls (5 run_prolog)")
    print(
        f"   wall per trial                     {ms([r.agent.wall_s for r in records if r.agent])}"
    )
    print(f"   harness overhead per trial         {ms(overhead)}")
    print(f"   harness overhead per tool call     {ms([o / 10 for o in overhead])}")


def reference_vs_validate() -> None:
    domains = list(DOMAINS.values())
    start = time.perf_counter()
    validate(domains, "hard")
    validate_s = time.perf_counter() - start
    start = time.perf_counter()
    plan = plan_run(domains, split="hard", modes=["agent-zero-shot"], source=resolve_source(),
                    k=1)  # fmt: skip
    model = ReferenceModel(reference_table(u.case for u in plan.units))
    with Solver() as solver:
        out = Path(tempfile.mkdtemp(prefix="deonticbench-bench-")) / "run"
        records = asyncio.run(carry_out(model, solver, plan, out))
    agent_s = time.perf_counter() - start
    print(f"3. reference agent-zero-shot of hard ({len(records)} trials) vs validate --split hard")
    print(f"   validate {validate_s:6.2f} s   agentic {agent_s:6.2f} s   "
          f"ratio {agent_s / validate_s:4.2f}x   goal <= 3x")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=60, help="programs for part 1")
    parser.add_argument("--limit", type=int, default=None, help="cases per domain, part 2")
    args = parser.parse_args()
    cases = hard_cases()
    step = max(1, len(cases) // args.calls)
    with Solver() as solver:
        solver.start_all()
        asyncio.run(per_call(cases[::step][: args.calls], solver))
    per_trial(args.limit)
    reference_vs_validate()


if __name__ == "__main__":
    main()
