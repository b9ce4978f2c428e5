"""The agentic task: ``-T mode=agent-zero-shot`` (or agent-few-shot, agent-direct).

Built on inspect's own agent, ``react()``, with the harness's ``prolog`` tools as inspect
tools: each call is carried out by ``agents.tools.ToolBox`` on the sample's workspace
(``agents.workspace``), programs in the harness's sandbox pool.  The loop ends as the
harness's does: on ``submit``, on a reply without a tool call, or on a budget (turns,
tokens, wall clock).  The scorer then judges what the workspace holds with
``agents.judge``, so the same responses give the same record, and the same numbers,
here and through ``deonticbench eval``.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from inspect_ai.agent import AgentState, AgentSubmit, as_solver, react
from inspect_ai.event import ModelEvent
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef, ToolError, ToolParam, ToolParams
from inspect_ai.util import Limit, time_limit, token_limit

from ... import Limits, Record, get_domain
from ...agents.judge import ajudge_workspace
from ...agents.loop import AGENT_NAME, AGENT_VERSION, DEFAULT_MAX_TURNS, first_messages
from ...agents.loop import TrialSetup as _Setup
from ...agents.tools import SUBMIT, TOOLS, Execute, ToolBox
from ...agents.workspace import build_workspace
from ...prompting.chat import ToolCall, ToolSpec
from ...prompting.render import prompt_hash
from ...solver import Execution
from ...store.record import AgentInfo
from ...store.trajectory import add_agent_turn, add_step, finish_trajectory, new_trajectory
from ._messages import to_inspect
from ._plan import Settings, plan_for
from ._sandbox import execute

AGENT_KEY = "deonticbench:agent"
"""Store key of what the agent solver hands the scorer (the workspace, the trial's facts)."""
TRAJECTORY_KEY = "trajectory"
"""Score metadata key of the trial's ATIF trajectory (``import-inspect`` writes it)."""


def _inspect_tool(spec: ToolSpec, toolbox: ToolBox, submitted: dict[str, Any]) -> ToolDef:
    """One of the harness's tools as an inspect tool, run by the trial's ToolBox."""
    properties = spec.parameters.get("properties", {})

    async def run(**arguments: Any) -> str:
        observation = await toolbox.call(ToolCall("inspect", spec.name, arguments))
        if observation.is_error:
            raise ToolError(observation.text.removeprefix("error: "))
        if observation.submitted:
            submitted["answer"] = observation.answer
            return observation.answer or ""
        return observation.text

    return ToolDef(
        run,
        name=spec.name,
        description=spec.description,
        parameters=ToolParams(
            properties={
                name: ToolParam(type=prop["type"], description=prop.get("description"))
                for name, prop in properties.items()
            },
            required=list(spec.parameters.get("required", [])),
        ),
    )


def _sandbox_runner(timeout: float) -> Execute:
    """Programs of the sample, run in the harness's sandbox pool (one per process)."""

    async def run_program(program: str, limits: Limits | None = None) -> Execution:
        return await execute(program, (limits or Limits(timeout_s=timeout)).timeout_s)

    return run_program


def _turns(messages: list[Any]) -> int:
    return sum(1 for m in messages if isinstance(m, ChatMessageAssistant))


@solver
def deonticbench_agent_solver(
    domain: str,
    split: str = "hard",
    mode: str = "agent-zero-shot",
    timeout: float = Limits.timeout_s,
    seed: int = 0,
    data_dir: str | None = None,
    hub: bool = False,
    revision: str | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    max_tokens: int | None = None,
    trial_timeout: float = 600.0,
) -> Solver:
    """Build the sample's workspace and run ``react()`` with the harness's tools on it."""
    settings = Settings(domain, split, mode, seed, data_dir, hub, revision)
    spec = get_domain(domain)

    run_program = _sandbox_runner(timeout)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        unit = plan_for(settings).unit(state.sample_id)
        workdir = Path(tempfile.mkdtemp(prefix="deonticbench-inspect-"))
        workspace = build_workspace(unit.case, unit.mode, workdir / "workspace", unit.exemplars)
        toolbox = ToolBox(
            "prolog", workspace.root, spec, run_program, limits=Limits(timeout_s=timeout)
        )
        submitted: dict[str, Any] = {}
        tools = [_inspect_tool(s, toolbox, submitted) for s in TOOLS["prolog"]]
        plain = [t for t in tools if t.name != SUBMIT]
        (submit,) = [t for t in tools if t.name == SUBMIT]

        async def go_on(agent_state: AgentState) -> bool:
            # As the harness's loop: a reply without a tool call ends the trial, and so
            # does the turn budget.
            last = agent_state.messages[-1] if agent_state.messages else None
            if isinstance(last, ChatMessageAssistant) and not last.tool_calls:
                return False
            return _turns(agent_state.messages) < max_turns

        agent = react(
            prompt=None,
            tools=[t.as_tool() for t in plain],
            submit=AgentSubmit(tool=submit.as_tool(), answer_only=True, keep_in_messages=True),
            on_continue=go_on,
        )
        limits: list[Limit] = [time_limit(trial_timeout)]
        if max_tokens is not None:
            limits.append(token_limit(max_tokens))
        state.messages = to_inspect(first_messages(_setup(unit, workdir)))
        start = time.monotonic()
        toolbox.deadline = start + trial_timeout
        try:
            state = await as_solver(agent, limits=limits)(state, generate)
        finally:
            toolbox.close()
        wall = time.monotonic() - start
        state.store.set(
            AGENT_KEY,
            {
                "workspace": str(workspace.root),
                "workdir": str(workdir),
                "submitted": submitted.get("answer"),
                "was_submitted": "answer" in submitted,
                "wall_s": wall,
                "usage": _usage_by_turn(),
                "max_turns": max_turns,
                "max_tokens": max_tokens,
                "trial_timeout": trial_timeout,
            },
        )
        return state

    return solve


def _setup(unit: Any, workdir: Path) -> _Setup:
    return _Setup(
        domain=unit.domain,
        case=unit.case,
        mode=unit.mode,
        sample=0,
        tool_set="prolog",
        native=True,
        workdir=workdir,
        model_name="inspect",
        exemplars=unit.exemplars,
    )


def _usage_by_turn() -> list[list[int]]:
    """(input, output) tokens of each model call of this sample, in order."""
    out = []
    for event in transcript().events:
        if isinstance(event, ModelEvent) and event.output is not None:
            usage = event.output.usage
            out.append([usage.input_tokens, usage.output_tokens] if usage else [0, 0])
    return out


def _stop_reason(state: TaskState, facts: dict[str, Any], tokens: int) -> str:
    if facts["was_submitted"]:
        return "submit"
    last = state.messages[-1] if state.messages else None
    if isinstance(last, ChatMessageAssistant) and not last.tool_calls:
        return "no_tool_call"
    if facts["max_tokens"] is not None and tokens >= facts["max_tokens"]:
        return "max_tokens"
    if facts["wall_s"] >= facts["trial_timeout"]:
        return "timeout"
    if _turns(state.messages) >= facts["max_turns"]:
        return "max_turns"
    return "error"


def _trajectory(state: TaskState, usage: list[list[int]], model: str) -> dict[str, Any]:
    """The sample's conversation as ATIF, as the harness's loop writes it."""
    atif = new_trajectory(
        f"inspect/{state.sample_id}/{state.epoch}",
        agent_name=AGENT_NAME,
        agent_version=AGENT_VERSION,
        model_name=model,
        tool_definitions=[s.to_openai() for s in TOOLS["prolog"]],
    )
    turn = 0
    messages = list(state.messages)
    for index, m in enumerate(messages):
        if m.role in ("system", "user"):
            add_step(atif, m.role, m.text)
        elif isinstance(m, ChatMessageAssistant):
            calls = list(m.tool_calls or [])
            answers = {
                t.tool_call_id: (t.error.message if t.error else t.text)
                for t in messages[index + 1 :]
                if isinstance(t, ChatMessageTool)
            }
            tokens = usage[turn] if turn < len(usage) else [0, 0]
            add_agent_turn(
                atif,
                turn,
                m.text,
                [(c.id, c.function, c.arguments) for c in calls],
                [str(answers.get(c.id, "")) for c in calls],
                tokens=(tokens[0], tokens[1]),
                model_name=model,
            )
            turn += 1
    return atif


@scorer(metrics=[])
def deonticbench_agent_scorer(
    domain: str,
    split: str = "hard",
    mode: str = "agent-zero-shot",
    timeout: float = Limits.timeout_s,
    seed: int = 0,
    data_dir: str | None = None,
    hub: bool = False,
    revision: str | None = None,
) -> Scorer:
    """Judge what the sample's workspace holds, as ``deonticbench eval`` judges a trial."""
    from .scorer import score_of

    settings = Settings(domain, split, mode, seed, data_dir, hub, revision)
    spec = get_domain(domain)

    run_program = _sandbox_runner(timeout)

    async def score(state: TaskState, target: Target) -> Score:
        unit = plan_for(settings).unit(state.sample_id)
        facts: dict[str, Any] = state.store.get(AGENT_KEY)
        try:
            judgement = await ajudge_workspace(
                spec, unit.mode, Path(facts["workspace"]), run_program, facts["submitted"]
            )
        finally:
            shutil.rmtree(facts["workdir"], ignore_errors=True)
        usage = facts["usage"]
        tokens_in = sum(u[0] for u in usage)
        tokens_out = sum(u[1] for u in usage)
        counts: dict[str, int] = {}
        for m in state.messages:
            if isinstance(m, ChatMessageAssistant):
                for call in m.tool_calls or []:
                    counts[call.function] = counts.get(call.function, 0) + 1
        stop = _stop_reason(state, facts, tokens_in + tokens_out)
        first = first_messages(_setup(unit, Path(facts["workdir"])))
        attempt = judgement.attempt(spec, unit.case.gold, prompt_hash=prompt_hash(first))
        attempt.tokens_in, attempt.tokens_out = tokens_in, tokens_out
        if attempt.abstain_reason is not None:
            attempt.abstain_reason = f"{attempt.abstain_reason} (trial ended: {stop})"
        record = Record(
            domain=spec.name,
            case_id=unit.case.id,
            mode=unit.mode,
            sample=state.epoch - 1,
            gold=unit.case.gold,
            model=str(state.model),
            attempts=[attempt],
            agent=AgentInfo(
                tool_set="prolog",
                turns=_turns(state.messages),
                tool_calls=dict(sorted(counts.items())),
                stop_reason=stop,
                wall_s=round(float(facts["wall_s"]), 6),
            ),
        )
        atif = _trajectory(state, usage, str(state.model))
        finish_trajectory(atif, extra={"stop_reason": stop, "tool_set": "prolog"})
        return score_of(record, **{TRAJECTORY_KEY: json.loads(json.dumps(atif))})

    return score
