"""What an agentic trial sends, in one place for the runner and the dry run: the trial's
setup, the request of each turn and the response-cache key of a turn (the whole
conversation so far, the tools offered, the reply's shape and the case).

Commit 52390e3 fixed drift between two copies of the turn key (the runner's and the dry
run's); here each is written once and both import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..agents.context import context_length
from ..agents.conversation import conversation_hash
from ..agents.loop import TrialSetup
from ..models.base import Model, Request
from ..prompting.chat import Message, ToolSpec
from ..prompting.modes import is_agentic
from ..prompting.plan import Unit
from ..store.spec import AgentOptions
from .cache import cache_key


def trial_setup(
    unit: Unit,
    sample: int,
    model: Model,
    agent_model: Model,
    options: AgentOptions,
    workdir: Path,
) -> TrialSetup:
    """A trial of ``unit``'s case as the runner starts it (``agent_model``: the backend
    as an agent, ``scripted.as_agent``)."""
    return TrialSetup(
        domain=unit.domain,
        case=unit.case,
        mode=unit.mode,
        sample=sample,
        tool_set=options.tool_set,
        native=agent_model.native_tools,
        constrained=agent_model.constrained,
        argument_chars=agent_model.argument_chars,
        workdir=workdir,
        model_name=model.spec,
        exemplars=unit.exemplars,
        budget=options,
        context_tokens=context_length(model),
    )


def turn_request(
    unit: Unit,
    sample: int,
    messages: tuple[Message, ...],
    tools: tuple[ToolSpec, ...],
    turn: int,
    tool_set: str,
) -> Request:
    """The request of one turn of a trial (one sample, the tools offered)."""
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


__all__ = ["goes_by_batch", "trial_setup", "turn_key", "turn_request"]
