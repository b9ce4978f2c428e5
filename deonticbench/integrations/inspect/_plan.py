"""What the task, its solver and its scorer share: the harness's plan of a domain x mode
(cases and few-shot exemplars, chosen by ``runner.plan_run`` exactly as ``deonticbench
eval`` chooses them), the sandbox pool, and the conversions between inspect's messages
and outputs and the harness's.

The solver and scorer are registered inspect objects whose arguments go into the log,
so they receive the few settings below rather than the cases; each looks its case up
in a plan built once per process and settings.
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ModelOutput,
)

from ... import (
    DataSource,
    DeonticBenchError,
    Execution,
    Limits,
    Mode,
    RunSpec,
    Solver,
    resolve_source,
)
from ...chat import Message, Role
from ...models.base import Completion
from ...runner import Unit, plan_run

INSPECT_MODEL = "inspect"
"""The model of a task's RunSpec: inspect chooses it (``--model``) after the task is made."""


@dataclass(frozen=True)
class Settings:
    """One task's choice of cases and prompts: enough to rebuild its plan anywhere."""

    domain: str
    split: str
    mode: str
    seed: int
    data_dir: str | None
    hub: bool
    revision: str | None

    def spec(
        self, *, attempts: int = 1, timeout: float = Limits.timeout_s, k: int | None = None
    ) -> RunSpec:
        """The run these settings describe, checked as ``deonticbench eval`` checks its
        flags (unknown domain, split or mode, attempts or K below 1: one sentence)."""
        return RunSpec(
            model=INSPECT_MODEL,
            domains=(self.domain,),
            split=self.split,
            # RunSpec checks the mode names (one sentence for an unknown one).
            modes=cast("tuple[Mode, ...]", (self.mode,)),
            k=k,
            attempts=attempts,
            seed=self.seed,
            limits=Limits(timeout_s=float(timeout)),
            data=resolve_source(self.data_dir, hub=self.hub, revision=self.revision),
        )


@dataclass(frozen=True)
class Plan:
    units: tuple[Unit, ...]
    source: DataSource
    """Pinned: the hub commit the cases were read at, or the local folder."""
    pool_note: str | None

    def unit(self, case_id: str | int) -> Unit:
        for unit in self.units:
            if unit.case.id == str(case_id):
                return unit
        raise DeonticBenchError(f"sample {case_id!r} is not a case of this task's split.")


@lru_cache(maxsize=32)
def plan_for(settings: Settings) -> Plan:
    """The harness's plan of one domain x mode: its cases in the published order and,
    for few-shot, the exemplars ``plan_run`` chooses for each (seeded by ``seed``)."""
    spec = settings.spec()
    assert spec.data is not None
    plan = plan_run(
        spec.domain_specs, split=spec.split, modes=spec.modes, source=spec.data, seed=spec.seed
    )
    assert plan.source is not None
    (domain,) = spec.domain_specs
    return Plan(tuple(plan.units), plan.source, plan.pool_notes.get(domain.name))


# -- the sandbox pool --------------------------------------------------------------------

_pools: dict[Limits, tuple[Solver, ThreadPoolExecutor]] = {}
_pools_lock = threading.Lock()


def _pool(limits: Limits) -> tuple[Solver, ThreadPoolExecutor]:
    with _pools_lock:
        if limits not in _pools:
            solver = Solver(limits=limits)
            # Executions wait for a worker in threads of their own, as many as workers,
            # so that a queue of programs never holds the event loop's default threads.
            threads = ThreadPoolExecutor(solver.size, thread_name_prefix="deonticbench-sandbox")
            _pools[limits] = (solver, threads)
        return _pools[limits]


async def execute(program: str, timeout: float) -> Execution:
    """Run a program in the harness's sandbox pool (one per process and limits)."""
    solver, threads = _pool(Limits(timeout_s=float(timeout)))
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(threads, solver.run, program)


@atexit.register
def _close_pools() -> None:
    with _pools_lock:
        for solver, threads in _pools.values():
            threads.shutdown(wait=False, cancel_futures=True)
            solver.close()
        _pools.clear()


# -- conversions -------------------------------------------------------------------------


def to_inspect(messages: tuple[Message, ...]) -> list[ChatMessage]:
    """The harness's chat messages as inspect's, text unchanged."""
    out: list[ChatMessage] = []
    for m in messages:
        if m.role == "system":
            out.append(ChatMessageSystem(content=m.content))
        elif m.role == "assistant":
            out.append(ChatMessageAssistant(content=m.content))
        else:
            out.append(ChatMessageUser(content=m.content))
    return out


def from_inspect(messages: list[ChatMessage]) -> tuple[Message, ...]:
    """Inspect's chat messages as the harness's (their text)."""
    out: list[Message] = []
    for m in messages:
        # A tool message is not part of the harness's conversations: read as user text.
        role: Role = m.role if m.role in ("system", "assistant") else "user"
        out.append(Message(role=role, content=m.text))
    return tuple(out)


def completion_of(output: ModelOutput) -> Completion:
    """What the runner records of a response: text, tokens, latency, finish reason."""
    usage = output.usage
    if output.error:
        return Completion.failed(output.error, latency_s=output.time or 0.0)
    stop = output.stop_reason if output.choices else None
    return Completion(
        text=output.completion,
        tokens_in=usage.input_tokens if usage else 0,
        tokens_out=usage.output_tokens if usage else 0,
        latency_s=output.time or 0.0,
        finish_reason=str(stop) if stop is not None else None,
    )


def settings_args(settings: Settings) -> dict[str, Any]:
    """The settings as keyword arguments of the registered solver and scorer."""
    return {
        "domain": settings.domain,
        "split": settings.split,
        "mode": settings.mode,
        "seed": settings.seed,
        "data_dir": settings.data_dir,
        "hub": settings.hub,
        "revision": settings.revision,
    }
