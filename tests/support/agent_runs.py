"""Helpers for agentic runs in tests: carrying a plan out with the real runner, and a
scripted agent behind the loopback providers that finds its case by reading case.txt."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from fakeproviders import FakeRequest, ToolTurn

from deonticbench.data.cases import Case, load_cases, resolve_source
from deonticbench.data.domains import Domain
from deonticbench.evaluation.cache import ResponseCache
from deonticbench.evaluation.runner import Runner
from deonticbench.models.base import Completion, Model, Request
from deonticbench.prompting.plan import plan_run
from deonticbench.reading.programs import unwrap_fenced
from deonticbench.solver import Solver
from deonticbench.solver.pool import bwrap_works
from deonticbench.store.folder import RunFolder
from deonticbench.store.record import Record
from deonticbench.store.run import Session
from deonticbench.store.spec import AgentOptions
from deonticbench.store.trajectory import read_trajectory
from deonticbench.vocabulary.chat import ToolCall
from deonticbench.vocabulary.modes import Mode
from deonticbench.vocabulary.protocols import LEGACY_PROTOCOL, ProtocolName

DATA = os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data")
SANDBOXED = [
    pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror"),
    pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot run here"),
]
"""The ``pytestmark`` of a test module whose agents run in the real sandbox on the data
mirror."""


def smoke(domain: Domain, count: int = 5) -> list[Case]:
    return load_cases(domain, "smoke", resolve_source(DATA))[:count]


def run_agents(
    model: Model,
    solver: Solver,
    out: Path,
    *,
    domains: Sequence[Domain],
    modes: Sequence[Mode],
    limit: int | None = None,
    k: int = 1,
    cache: ResponseCache | None = None,
    agent: AgentOptions | None = None,
    concurrency: int = 4,
    protocol: ProtocolName = LEGACY_PROTOCOL,
) -> tuple[Session, dict[tuple[str, str, str, int], Record]]:
    plan = plan_run(
        list(domains), split="smoke", modes=list(modes), source=resolve_source(DATA), k=k,
        limit=limit, protocol=protocol,
    )  # fmt: skip
    config: dict[str, object] = {
        "model": {"spec": model.spec, "identity": model.identity()},
        "split": "smoke",
        **({} if protocol == LEGACY_PROTOCOL else {"protocol": protocol}),
    }

    async def go() -> tuple[Session, dict[tuple[str, str, str, int], Record]]:
        try:
            with RunFolder.open(out, config) as folder:
                runner = Runner(model, solver, folder, cache, concurrency=concurrency, agent=agent)
                return await runner.run(plan), dict(folder.done)
        finally:
            await model.aclose()

    return asyncio.run(go())


def turn_number(request: FakeRequest) -> int:
    return sum(1 for m in request.messages if m["role"] == "assistant")


def case_in(request: FakeRequest, cases: Sequence[Case]) -> Case | None:
    """The case whose case.txt the conversation has read (None before it has)."""
    seen = "\n".join(m["content"] for m in request.messages if m["role"] in ("tool", "user"))
    found = [c for c in cases if c.question.strip()[:120] in seen and c.text.strip()[:80] in seen]
    return found[0] if found else None


def solving_agent(cases: Sequence[Case]) -> Callable[[FakeRequest], str | ToolTurn]:
    """Reads case.txt, writes the case's reference program, runs it, submits."""

    def respond(request: FakeRequest) -> str | ToolTurn:
        turn = turn_number(request)
        if turn == 0:
            return ToolTurn("Let me read the case.", [("read_file", {"path": "case.txt"})])
        case = case_in(request, cases)
        assert case is not None, "the case's text came back from read_file"
        program = unwrap_fenced(case.reference_prolog)
        script: list[ToolTurn] = [
            ToolTurn("", [("write_file", {"path": "solution.pl", "content": program})]),
            ToolTurn("Running it.", [("run_prolog", {"path": "solution.pl"})]),
            ToolTurn("", [("submit", {})]),
        ]
        return script[turn - 1] if turn - 1 < len(script) else "done"

    return respond


class ScriptedAgent(Model):
    """An agent that needs no server: turn n sends the calls of ``script[n]`` natively
    (a turn past the script sends none, ending the trial).  For hostile-agent tests."""

    native_tools = True
    _cacheable = False

    def __init__(
        self,
        script: Sequence[Sequence[tuple[str, dict[str, object]]]],
        spec: str = "scripted",
    ) -> None:
        from deonticbench.models.base import GenerationParams

        self.spec = self.provider = self.model_name = spec
        self.params = GenerationParams()
        self.script = [list(turn) for turn in script]

    async def generate(self, request: Request) -> list[Completion]:
        turn = sum(1 for m in request.messages if m.role == "assistant")
        calls = self.script[turn] if turn < len(self.script) else []
        completion = Completion(
            text=f"turn {turn}",
            tokens_in=10,
            tokens_out=5,
            tool_calls=tuple(ToolCall(f"c{turn}_{i}", n, a) for i, (n, a) in enumerate(calls)),
        )
        return [completion] * request.n


def observations(record: Record, run_dir: Path) -> list[str]:
    """Every observation of a trial, in order, from its trajectory."""
    assert record.agent is not None and record.agent.trajectory is not None
    atif = read_trajectory(run_dir, record.agent.trajectory, record.agent.trajectory_sha256)
    return [
        str(result.get("content"))
        for step in atif["steps"]
        for result in (step.get("observation") or {}).get("results", [])
    ]
