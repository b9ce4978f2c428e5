"""One agentic trial: the loop of model turns and tool calls, its budgets, its record.

    trial = await run_trial(setup, generate, execute)

Each turn sends the whole conversation (with the tools, natively or in the text
protocol) and carries out the calls of the reply.  The trial ends on ``submit``, on a
reply with no tool call, or on a budget (turns, tokens in+out, wall clock); the reason
is kept.  Then the harness judges what the workspace holds (``judge``): the stop reason
never decides the outcome.  A malformed call (unknown tool, bad JSON, a missing or
mistyped argument) is answered with an error and costs its turn; nothing an agent does
raises out of the loop.

``generate`` is the runner's: one model call for a conversation, through the response
cache (keyed by ``conversation_hash``), so a resumed or repeated trial pays for nothing
twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..data.cases import Case
from ..data.domains import Domain
from ..models.base import Completion
from ..prompting.chat import Message, ToolCall, ToolSpec
from ..prompting.modes import Mode
from ..prompting.render import prompt_hash
from ..prompting.templates import SYSTEM_FILE, prompts_root, read_template
from ..solver import Limits
from ..solver.execution import DEFAULT_TIMEOUT_S as DEFAULT_PROLOG_TIMEOUT_S
from ..solver.shell import ShellLimits
from ..store.record import AgentInfo, Attempt
from ..store.trajectory import add_agent_turn, add_step, finish_trajectory, new_trajectory
from .judge import Judgement, ajudge_workspace
from .protocol import parse_text_calls, protocol_section, result_message
from .tools import MAX_CALLS_PER_TURN, TOOLS, Execute, Observation, ToolBox
from .workspace import build_workspace, instruction_text

DEFAULT_MAX_TURNS = 50
DEFAULT_TIMEOUT_S = 600.0
"""Wall clock per trial: DAR's 600 s."""
AGENT_NAME = "deonticbench-agent"
AGENT_VERSION = "1"


@dataclass(frozen=True)
class AgentBudget:
    max_turns: int = DEFAULT_MAX_TURNS
    max_tokens: int | None = None
    """Tokens in+out summed over the trial's turns; None: no limit."""
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ValueError("an agent needs at least one turn")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError("the token budget must be positive")
        if self.timeout_s <= 0:
            raise ValueError("the trial's timeout must be positive")


Generate = Callable[
    [tuple[Message, ...], tuple[ToolSpec, ...], int], Awaitable[tuple[Completion, bool]]
]
"""(conversation, tools offered natively, turn) -> (the reply, whether it was cached)."""


@dataclass(frozen=True)
class TrialSetup:
    domain: Domain
    case: Case
    mode: Mode
    sample: int
    tool_set: str
    native: bool
    """Offer the tools natively (``Request.tools``) or through the text protocol."""
    workdir: Path
    """An empty folder for the workspace (the caller removes it afterwards)."""
    model_name: str
    exemplars: Sequence[Case] = ()
    budget: AgentBudget = field(default_factory=AgentBudget)
    shell_limits: ShellLimits | None = None


@dataclass
class Trial:
    domain: Domain
    judgement: Judgement
    info: AgentInfo
    trajectory: dict[str, Any]
    prompt_hash: str
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    cached: bool = True
    error: str | None = None
    """The last failed model request, when one ended the trial."""

    def attempt(self, gold: int | str) -> Attempt:
        """The record's one attempt: the judged final state, tokens summed over turns."""
        attempt = self.judgement.attempt(self.domain, gold, prompt_hash=self.prompt_hash)
        attempt.tokens_in = self.tokens_in
        attempt.tokens_out = self.tokens_out
        attempt.latency_s = round(self.latency_s, 6)
        attempt.cached = self.cached
        attempt.error = self.error
        if attempt.abstain_reason is not None:
            attempt.abstain_reason = (
                f"{attempt.abstain_reason} (trial ended: {self.info.stop_reason})"
            )
        return attempt


def first_messages(setup: TrialSetup, *, prompts_dir: Path | None = None) -> tuple[Message, ...]:
    """The conversation a trial starts with: the paper's system message, the instruction
    (with the text protocol's section when the tools are not offered natively)."""
    root = prompts_root(prompts_dir)
    instruction = instruction_text(
        setup.case,
        setup.mode,
        setup.tool_set,
        prompts_dir=root,
        timeout_s=setup.shell_limits.timeout_s if setup.shell_limits else DEFAULT_PROLOG_TIMEOUT_S,
    )
    if not setup.native:
        instruction += "\n\n" + protocol_section(TOOLS[setup.tool_set], prompts_dir=root)
    return (
        Message(role="system", content=read_template(root, SYSTEM_FILE)),
        Message(role="user", content=instruction),
    )


def conversation_hash(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> str:
    """sha256 over everything a turn sends: every message (with its tool calls and ids)
    and the tools offered.  The response cache keys an agentic turn on it."""
    payload = {
        "messages": [
            [
                m.role,
                m.content,
                [c.to_json() for c in m.tool_calls],
                m.tool_call_id,
                m.name,
                m.is_error,
            ]
            for m in messages
        ],
        "tools": [t.to_openai() for t in tools],
    }
    canonical = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", errors="surrogatepass")).hexdigest()


def encode_turn(completion: Completion) -> str:
    """A reply as the response cache stores it: text and tool calls in one JSON string."""
    return json.dumps(
        {"text": completion.text, "tool_calls": [c.to_json() for c in completion.tool_calls]},
        ensure_ascii=False,
    )


def decode_turn(stored: str) -> tuple[str, tuple[ToolCall, ...]]:
    obj = json.loads(stored)
    return str(obj.get("text") or ""), tuple(ToolCall.from_json(c) for c in obj["tool_calls"])


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def run_trial(
    setup: TrialSetup,
    generate: Generate,
    execute: Execute,
    *,
    limits: Limits | None = None,
) -> Trial:
    """Carry out one trial in ``setup.workdir`` and judge what it left."""
    budget = setup.budget
    workspace = build_workspace(setup.case, setup.mode, setup.workdir, setup.exemplars)
    toolbox = ToolBox(
        setup.tool_set,
        workspace.root,
        setup.domain,
        execute,
        shell_limits=setup.shell_limits,
        limits=limits,
    )
    specs = TOOLS[setup.tool_set]
    offered = specs if setup.native else ()
    messages = first_messages(setup)
    atif = new_trajectory(
        f"{setup.domain.name}/{setup.case.id}/{setup.mode}/{setup.sample}",
        agent_name=AGENT_NAME,
        agent_version=AGENT_VERSION,
        model_name=setup.model_name,
        tool_definitions=[s.to_openai() for s in specs],
    )
    add_step(atif, "system", messages[0].content)
    add_step(atif, "user", messages[1].content)
    counts: dict[str, int] = {}
    tokens_in = tokens_out = turns = 0
    latency = 0.0
    all_cached = True
    error: str | None = None
    submitted: str | None = None
    stop = "max_turns"
    start = time.monotonic()
    deadline = start + budget.timeout_s
    toolbox.deadline = deadline
    try:
        for turn in range(budget.max_turns):
            if budget.max_tokens is not None and tokens_in + tokens_out >= budget.max_tokens:
                stop = "max_tokens"
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stop = "timeout"
                break
            try:
                completion, cached = await asyncio.wait_for(
                    generate(messages, offered, turn), remaining
                )
            except TimeoutError:
                stop = "timeout"
                break
            if completion.error is not None or completion.text is None:
                error = completion.error or "the backend returned no text"
                stop = "error"
                break
            turns += 1
            all_cached = all_cached and cached
            tokens_in += completion.tokens_in
            tokens_out += completion.tokens_out
            latency += completion.latency_s
            calls = (
                completion.tool_calls
                if setup.native
                else parse_text_calls(completion.text, turn=turn)
            )
            messages += (
                Message(
                    role="assistant",
                    content=completion.text,
                    tool_calls=calls if setup.native else (),
                ),
            )
            tokens = (completion.tokens_in, completion.tokens_out)
            if not calls:
                add_agent_turn(atif, turn, completion.text, [], [], tokens=tokens,
                               model_name=setup.model_name, timestamp=_now(),
                               extra={"cached": cached})  # fmt: skip
                stop = "no_tool_call"
                break
            results: list[tuple[ToolCall, Observation]] = []
            timed_out = False
            for index, call in enumerate(calls):
                counts[call.name] = counts.get(call.name, 0) + 1
                if index >= MAX_CALLS_PER_TURN:
                    results.append(
                        (
                            call,
                            Observation(
                                f"error: at most {MAX_CALLS_PER_TURN} calls are run per turn",
                                is_error=True,
                            ),
                        )
                    )
                    continue
                remaining = deadline - time.monotonic()
                try:
                    observation = await asyncio.wait_for(toolbox.call(call), max(remaining, 0.001))
                except TimeoutError:
                    observation = Observation("error: the trial's time ran out", is_error=True)
                    timed_out = True
                results.append((call, observation))
                if timed_out:
                    break
            add_agent_turn(
                atif,
                turn,
                completion.text,
                [(c.id, c.name, c.arguments) for c in calls],
                [o.text for _, o in results],
                tokens=tokens,
                model_name=setup.model_name,
                timestamp=_now(),
                extra={
                    "cached": cached,
                    "errors": [i for i, (_, o) in enumerate(results) if o.is_error],
                },
            )
            if setup.native:
                messages += tuple(
                    Message(
                        role="tool",
                        content=o.text,
                        tool_call_id=c.id,
                        name=c.name,
                        is_error=o.is_error,
                    )
                    for c, o in results
                )
            else:
                messages += (result_message([(c, o.text) for c, o in results]),)
            done = [o for _, o in results if o.submitted]
            if done:
                submitted = done[-1].answer
                stop = "submit"
                break
            if timed_out:
                stop = "timeout"
                break
        else:
            stop = "max_turns"
        if (
            stop == "max_turns"
            and budget.max_tokens is not None
            and tokens_in + tokens_out >= budget.max_tokens
        ):
            stop = "max_tokens"
    finally:
        toolbox.close()
    wall = time.monotonic() - start
    judgement = await ajudge_workspace(
        setup.domain, setup.mode, workspace.root, execute, submitted, last_run=toolbox.last_run
    )
    finish_trajectory(
        atif,
        extra={
            "stop_reason": stop,
            "tool_set": setup.tool_set,
            "protocol": "native" if setup.native else "text",
            "judged": {
                "answer": judgement.answer.value,
                "abstain_reason": judgement.answer.reason,
                "status": judgement.execution.status if judgement.execution else None,
            },
        },
    )
    info = AgentInfo(
        tool_set=setup.tool_set,
        turns=turns,
        tool_calls=dict(sorted(counts.items())),
        stop_reason=stop,
        wall_s=round(wall, 6),
    )
    return Trial(
        domain=setup.domain,
        judgement=judgement,
        info=info,
        trajectory=atif,
        prompt_hash=prompt_hash(first_messages(setup)),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        latency_s=latency,
        cached=all_cached and turns > 0,
        error=error,
    )
