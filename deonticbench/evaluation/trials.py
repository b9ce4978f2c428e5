"""The agentic trials of a run: ``TrialDriver`` carries each one out for the runner (its
turns through the response cache, its trajectory written, its attempt judged), and what
a trial sends is stated once here, for the driver and the dry run alike: the trial's
setup, the request of each turn and the response-cache key of a turn (the whole
conversation so far, the tools offered, the reply's shape and the case).

Commit 52390e3 fixed drift between two copies of the turn key (the runner's and the dry
run's); here each is written once and both import it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from ..agents.context import context_length
from ..agents.conversation import conversation_hash
from ..agents.loop import TrialSetup, decode_turn, encode_turn, run_trial
from ..agents.tool_base import Execute
from ..data.sources import DataSource
from ..models.base import Completion, Model, Request, constrained_turns, turn_argument_chars
from ..models.sampling import RunSampling
from ..prompting.dar_task import DarTask, dar_task
from ..prompting.plan import RunPlan, Unit
from ..reading.dar_verifier import RunsPrograms
from ..solver import Limits
from ..store.record import AgentInfo, Attempt
from ..store.spec import AgentOptions
from ..store.trajectory import trajectory_path, write_trajectory
from ..vocabulary.chat import Message, ToolSpec
from ..vocabulary.modes import is_agentic, prompted_counterpart
from ..vocabulary.protocols import DAR_PROTOCOL, mode_protocol
from .cache import CachedResponse, ResponseCache, cache_key
from .spending import SpendGate, gated


def trial_setup(
    unit: Unit,
    sample: int,
    model: Model,
    agent_model: Model,
    options: AgentOptions,
    workdir: Path,
    dar: DarTask | None = None,
) -> TrialSetup:
    """A trial of ``unit``'s case as the runner starts it (``agent_model``: the backend
    as an agent, ``scripted.as_agent``; ``dar``: the case's DAR task under the dar
    protocol, ``unit_dar_task``)."""
    return TrialSetup(
        domain=unit.domain,
        case=unit.case,
        mode=unit.mode,
        sample=sample,
        tool_set=options.tool_set,
        native=agent_model.native_tools,
        constrained=constrained_turns(agent_model),
        argument_chars=turn_argument_chars(agent_model),
        workdir=workdir,
        model_name=model.spec,
        exemplars=unit.exemplars,
        budget=options,
        context_tokens=context_length(model),
        dar=dar,
    )


def unit_dar_task(unit: Unit, protocol: str, source: DataSource | None) -> DarTask | None:
    """The DAR task of ``unit``'s case when the run follows the dar protocol (the prompt
    mode of DAR's adapter is the agentic mode's prompted counterpart), else None."""
    if mode_protocol(protocol, unit.mode) != DAR_PROTOCOL:
        return None
    prompt_mode = prompted_counterpart(unit.mode)
    assert prompt_mode in ("direct", "zero-shot", "few-shot")
    return dar_task(unit.case, prompt_mode, source=source)


def check_dar_tasks(plan: RunPlan) -> None:
    """Under the dar protocol, render one task of each mode before anything is written:
    DAR's files that cannot be read (no local copy, no network) are one sentence then,
    not every trial's error."""
    seen: set[str] = set()
    for unit in plan.units:
        if unit.mode not in seen:
            seen.add(unit.mode)
            unit_dar_task(unit, plan.protocol, plan.source)


def turn_request(
    unit: Unit,
    sample: int,
    messages: tuple[Message, ...],
    tools: tuple[ToolSpec, ...],
    turn: int,
    tool_set: str,
    sampling: RunSampling,
) -> Request:
    """The request of one turn of a trial (one sample, the tools offered), with the
    generation settings ``sampling`` gives an agent turn."""
    return Request(
        messages=messages,
        n=1,
        domain=unit.domain.name,
        case_id=unit.case.id,
        mode=unit.mode,
        sample_start=sample,
        turn=turn,
        tools=tools,
        cache_group=f"{unit.domain.name}/{unit.mode}/{tool_set}",
        config=sampling.config(unit.mode, agentic=True),
    )


def turn_key(
    identity: Mapping[str, Any],
    agent_model: Model,
    unit: Unit,
    sample: int,
    messages: tuple[Message, ...],
    tools: tuple[ToolSpec, ...],
) -> str:
    """The response-cache key of a turn: the conversation so far with the tools offered
    and the reply's shape, within the case (two cases' trials may open alike)."""
    shape = agent_model.reply_shape(tools)
    case = f"{unit.domain.name}/{unit.case.id}"
    return cache_key(identity, conversation_hash(messages, tools, shape, case=case), sample, 0)


def goes_by_batch(mode: str) -> bool:
    """Under ``--batch``, whether a mode's requests go through the provider's batch API:
    the prompted modes do; agentic trials stay interactive (each turn needs the last)."""
    return not is_agentic(mode)


def batch_interactive_note(modes: Iterable[str]) -> str | None:
    """Under ``--batch``, the sentence naming the modes that stay interactive (None when
    every mode goes by batch)."""
    interactive = [m for m in modes if not goes_by_batch(m)]
    if not interactive:
        return None
    return (
        f"--batch sends the prompted modes as batches; {', '.join(interactive)} "
        "stay interactive (a trial's next turn depends on its last)."
    )


class Counts(Protocol):
    """What the driver adds to the run's counts (``store.run.Session``)."""

    requests: int
    cache_hits: int


@dataclass
class TrialDriver:
    """Carries out a run's agentic trials: the loop (``agents.loop.run_trial``) with each
    turn sent through the response cache, the trajectory written into the run folder,
    and the trial's attempt and ``AgentInfo`` for the runner to record."""

    model: Model
    agent_model: Model
    """The backend as an agent (``scripted.as_agent``)."""
    options: AgentOptions
    cache: ResponseCache | None
    counts: Counts
    execute: Execute
    """Runs a program (the runner's, bounded by its workers)."""
    limits: Limits
    folder: Path
    """The run folder, where trajectories go."""
    sampling: RunSampling
    """The run's generation settings (``models.sampling``)."""
    protocol: str = "harness"
    """The run's protocol (``RunPlan.protocol``): under ``dar`` each trial is DAR's task."""
    source: DataSource | None = None
    """The plan's data source, whence DAR's statute and exemplar texts are read."""
    programs: RunsPrograms | None = None
    """Runs DAR's verifier program of a dar-protocol trial (the runner, bounded)."""
    spend: SpendGate | None = None
    """The spending cap each turn asks for room (``spending``); None: no cap."""

    def __post_init__(self) -> None:
        self.identity = self.sampling.identity(self.model)

    async def trial(
        self, unit: Unit, sample: int, slot: AbstractAsyncContextManager[Any]
    ) -> tuple[Attempt, AgentInfo]:
        """One trial of ``unit``'s case, holding ``slot`` (a request slot) from its first
        turn to its last, so that its wall-clock budget is its own: never spent waiting
        for a slot between turns behind other trials or prompted samples (on one engine
        thread, trials that queued at every turn would time out)."""
        workdir = Path(tempfile.mkdtemp(prefix="deonticbench-trial-"))
        try:
            task = unit_dar_task(unit, self.protocol, self.source)
            setup = trial_setup(
                unit, sample, self.model, self.agent_model, self.options, workdir / "workspace",
                dar=task,
            )  # fmt: skip

            async def generate(
                messages: tuple[Message, ...], tools: tuple[ToolSpec, ...], turn: int
            ) -> tuple[Completion, bool]:
                return await self.turn(unit, sample, messages, tools, turn)

            async with slot:
                trial = await run_trial(
                    setup, generate, self.execute, limits=self.limits, programs=self.programs
                )
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        relative = trajectory_path(unit.domain.name, unit.case.id, unit.mode, sample)
        digest = write_trajectory(self.folder, relative, trial.trajectory)
        info = trial.info
        info.trajectory, info.trajectory_sha256 = relative, digest
        return trial.attempt(unit.case.gold), info

    async def turn(
        self,
        unit: Unit,
        sample: int,
        messages: tuple[Message, ...],
        tools: tuple[ToolSpec, ...],
        turn: int,
    ) -> tuple[Completion, bool]:
        """One model call of a trial, through the response cache keyed by the whole
        conversation so far (``turn_key``); True when the cache answered."""
        key = turn_key(self.identity, self.agent_model, unit, sample, messages, tools)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self.counts.cache_hits += 1
                text, calls = decode_turn(hit.text)
                kept = hit.completion(batch=False)
                return replace(kept, text=text, tool_calls=calls), True
        request = turn_request(
            unit, sample, messages, tools, turn, self.options.tool_set, self.sampling
        )
        # No request slot taken here: the trial holds one for its whole course (trial).
        # The reply is in the cache before its room under a spending cap is given back
        # (as ``Runner._request``): a set stopped at its cap pays for no stored turn again.
        async with gated(self.spend, self.agent_model, request) as bill:
            self.counts.requests += 1
            completions = await self.agent_model.generate(request)
            bill.paid(completions)
            if len(completions) != 1:
                return Completion.failed(
                    f"backend returned {len(completions)} completions for n=1"
                ), False
            completion = completions[0]
            if self.cache is not None and completion.error is None and completion.text is not None:
                self.cache.put(key, CachedResponse.of(completion, encode_turn(completion)))
        return completion, False


__all__ = [
    "TrialDriver",
    "check_dar_tasks",
    "goes_by_batch",
    "trial_setup",
    "turn_key",
    "turn_request",
    "unit_dar_task",
]
