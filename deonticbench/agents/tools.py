"""The tools of one trial: the dispatch of a call through the table, and a turn's calls.

``ToolBox`` binds the tool set's entries of ``tool_table.TOOLS`` to a trial's workspace
(``tool_base.ToolState``); ``call`` checks a call against its tool's JSON Schema and runs
its handler; ``execute_calls`` carries out one turn's calls (at most
``MAX_CALLS_PER_TURN``, none past the trial's deadline) for the agent loop.

A call that cannot be carried out (unknown tool, arguments of the wrong type or missing,
a refused path, a full workspace) is answered with an error observation; it never
raises.  Observations are cut to ``OBSERVATION_CHARS`` (head and tail kept), and carry
no timing, so the same calls give the same conversation (and response-cache keys) again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..data.domains import Domain
from ..solver import Limits, ShellLimits
from ..vocabulary.chat import ToolCall, ToolSpec
from ..vocabulary.modes import Mode
from .file_tools import execution_report
from .guards import HARNESS_INPUTS, Inputs, early_submit, protected_input
from .tool_base import (
    MAX_CALLS_PER_TURN,
    MAX_WRITE_BYTES,
    TOO_MANY_CALLS,
    WORKSPACE_QUOTA_BYTES,
    Execute,
    Observation,
    ToolError,
    ToolState,
    clip,
    resolve_path,
    workspace_bytes,
)
from .tool_table import SUBMIT, TOOL_SETS, TOOLS, Tool, check_arguments, tool_specs, tools_of

logger = logging.getLogger(__name__)


class ToolBox(ToolState):
    """The tools of one trial (a tool set of the table), bound to its workspace."""

    def __init__(
        self,
        tool_set: str,
        root: Path,
        domain: Domain,
        execute: Execute,
        *,
        shell_limits: ShellLimits | None = None,
        limits: Limits | None = None,
        inputs: Inputs = HARNESS_INPUTS,
    ) -> None:
        super().__init__(
            root, domain, execute, shell_limits=shell_limits, limits=limits, mount=inputs.mount
        )
        self.inputs = inputs
        """The workspace's inputs (``guards.Inputs``): no ``write_file`` replaces them, and
        where they are named is where the workspace is shown (DAR's ``/app``)."""
        self.tool_set = tool_set
        self.tools: dict[str, Tool] = {t.name: t for t in tools_of(tool_set)}
        self.mode: Mode | None = None
        """The trial's mode, for the guard on an early ``submit`` (None: no guard)."""

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self.tools.values())

    def malformed(self, call: ToolCall) -> bool:
        """Whether the call cannot be run as sent: unreadable, an unknown tool, or
        arguments against the tool's schema (a turn of the ``malformed`` kind)."""
        tool = self.tools.get(call.name)
        if call.error is not None or tool is None:
            return True
        try:
            check_arguments(tool, call.arguments)
        except ToolError:
            return True
        return False

    async def call(self, call: ToolCall) -> Observation:
        """Carry out one call; every failure is an error observation."""
        tool = self.tools.get(call.name)
        try:
            if call.error is not None:
                raise ToolError(f"the call to {call.name} could not be read: {call.error}")
            if tool is None:
                known = ", ".join(self.tools)
                raise ToolError(f"there is no tool {call.name!r}; the tools are {known}")
            check_arguments(tool, call.arguments)
            refused = early_submit(call, self.mode, self.root) if self.mode else None
            refused = refused or protected_input(call, self.inputs)
            if refused is not None:
                return Observation(refused, is_error=True)
            return await tool.handler(self, dict(call.arguments))
        except ToolError as exc:
            return Observation(f"error: {exc}", is_error=True)


@dataclass(frozen=True)
class TurnCalls:
    """What a turn's calls gave back: (call, observation) in order (a call cut short by
    the deadline has none), and whether the trial's time ran out during them."""

    results: tuple[tuple[ToolCall, Observation], ...]
    timed_out: bool

    @property
    def submitted(self) -> Observation | None:
        """The turn's last ``submit``, if it called one."""
        done = [o for _, o in self.results if o.submitted]
        return done[-1] if done else None


async def execute_calls(toolbox: ToolBox, calls: Sequence[ToolCall], deadline: float) -> TurnCalls:
    """Carry out one turn's calls in order: past ``MAX_CALLS_PER_TURN`` each is refused,
    and none runs past ``deadline`` (``time.monotonic()``)."""
    results: list[tuple[ToolCall, Observation]] = []
    for index, call in enumerate(calls):
        if index >= MAX_CALLS_PER_TURN:
            results.append((call, Observation(TOO_MANY_CALLS, is_error=True)))
            continue
        remaining = max(deadline - time.monotonic(), 0.001)
        try:
            observation = await asyncio.wait_for(toolbox.call(call), remaining)
        except TimeoutError:
            logger.debug("the trial's deadline cut %s short", call.name)
            ran_out = Observation("error: the trial's time ran out", is_error=True)
            return TurnCalls((*results, (call, ran_out)), timed_out=True)
        results.append((call, observation))
    return TurnCalls(tuple(results), timed_out=False)


__all__ = [
    "MAX_CALLS_PER_TURN",
    "MAX_WRITE_BYTES",
    "SUBMIT",
    "TOOLS",
    "TOOL_SETS",
    "WORKSPACE_QUOTA_BYTES",
    "Execute",
    "Observation",
    "Tool",
    "ToolBox",
    "ToolError",
    "TurnCalls",
    "check_arguments",
    "clip",
    "execute_calls",
    "execution_report",
    "resolve_path",
    "tool_specs",
    "workspace_bytes",
]
