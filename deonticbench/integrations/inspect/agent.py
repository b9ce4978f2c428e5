"""The agentic task: ``-T mode=agent-zero-shot`` (or agent-few-shot, agent-direct).

Built on inspect's own agent, ``react()``, with the harness's ``prolog`` tools as inspect
tools: each call is carried out by ``agents.tools.ToolBox`` on the sample's workspace
(``agents.workspace``), programs in the harness's sandbox pool.  react() drives
inspect's own loop; what it takes of the harness comes through plain functions: the
opening messages (``agents.conversation``), the tools (``agents.tool_table``), the stop
rules (``agents.stops``: ``on_continue`` asks them after every turn), the guard rails
and the context budget (``agents.guards``, ``agents.context``, applied through react()'s
model and ``on_continue`` by ``_rails``), and the judged attempt, ``AgentInfo`` and
trajectory (``agents.trial_record``).  The scorer judges what the workspace holds with
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

from inspect_ai.agent import Agent, AgentState, AgentSubmit, as_solver, react
from inspect_ai.event import ModelEvent
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessage, ChatMessageAssistant
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolDef, ToolError, ToolParam, ToolParams
from inspect_ai.util import Limit, time_limit, token_limit

from ...agents import (
    SUBMIT,
    TOO_MANY_CALLS,
    Execute,
    Judgement,
    RepeatGuard,
    Tool,
    ToolBox,
    agent_info,
    ajudge_workspace,
    budget_stop,
    build_workspace,
    finish_trial_trajectory,
    new_trial_trajectory,
    opening_messages,
    session_id,
    stop_reason,
    tools_of,
    trial_attempt,
    trial_ended,
)
from ...data.domains import Domain, get_domain
from ...prompting.plan import Unit
from ...prompting.render import prompt_hash
from ...solver import Execution, Limits
from ...store.record import Record
from ...store.spec import AgentOptions
from ...store.trajectory import add_agent_turn, add_step
from ...vocabulary.chat import ToolCall
from ._messages import to_inspect
from ._plan import TaskOptions, plan_for
from ._rails import Rails, ran_program, turns_of
from ._sandbox import execute
from .scorer import score_of

AGENT_KEY = "deonticbench:agent"
"""Store key of what the agent solver hands the scorer (the workspace, the trial's facts)."""
TRAJECTORY_KEY = "trajectory"
"""Score metadata key of the trial's ATIF trajectory (``import-inspect`` writes it)."""


TOOL_SET = "prolog"
"""inspect's agent offers the harness's prolog tools, natively (inspect's own tool calling)."""


def _inspect_tool(tool: Tool, rails: Rails, submitted: dict[str, Any]) -> ToolDef:
    """One entry of the harness's tool table as an inspect tool, run by the trial's ToolBox."""
    properties = tool.parameters.get("properties", {})

    async def run(**arguments: Any) -> str:
        if not rails.admit_call():
            raise ToolError(TOO_MANY_CALLS.removeprefix("error: "))
        call = ToolCall("inspect", tool.name, arguments)
        observation = await rails.toolbox.call(call)
        rails.saw(call, observation.is_error, observation.text)
        if observation.is_error:
            raise ToolError(observation.text.removeprefix("error: "))
        if observation.submitted:
            submitted["answer"] = observation.answer
            return observation.answer or ""
        return observation.text

    return ToolDef(
        run,
        name=tool.name,
        description=tool.description,
        # A turn's calls run one after another, in order, as in the loop: a run_prolog
        # after a write_file must see the file.
        parallel=False,
        parameters=ToolParams(
            properties={
                name: ToolParam(type=prop["type"], description=prop.get("description"))
                for name, prop in properties.items()
            },
            required=list(tool.parameters.get("required", [])),
        ),
    )


def _sandbox_runner(timeout: float) -> Execute:
    """Programs of the sample, run in the harness's sandbox pool (one per process)."""

    async def run_program(program: str, limits: Limits | None = None) -> Execution:
        return await execute(program, (limits or Limits(timeout_s=timeout)).timeout_s)

    return run_program


def _turns(messages: list[Any]) -> int:
    return sum(1 for m in messages if isinstance(m, ChatMessageAssistant))


def _ended_without_call(extras: list[dict[str, Any]]) -> bool:
    # A reply cut off at the output-token limit has no call either, but is answered and
    # the trial goes on: only a turn of the kind no_call ends it.
    return bool(extras) and extras[-1].get("kind") == "no_call"


@solver
def deonticbench_agent_solver(
    domain: str,
    split: str = "hard",
    mode: str = "agent-zero-shot",
    timeout: float = Limits.timeout_s,
    exemplar_seed: int = 0,
    data_dir: str | None = None,
    hub: bool = False,
    revision: str | None = None,
    protocol: str | None = None,
    max_turns: int = AgentOptions.max_turns,
    max_tokens: int | None = AgentOptions.max_tokens,
    trial_timeout: float = AgentOptions.timeout_s,
    repeat_limit: int | None = AgentOptions.repeat_limit,
    context_tokens: int | None = None,
) -> Solver:
    """Build the sample's workspace and run ``react()`` with the harness's tools on it.
    ``context_tokens``: the model's context window, for the context budget (none: no
    budget, as for a model whose window the harness does not know)."""
    options = TaskOptions(domain, split, mode, exemplar_seed, data_dir, hub, revision, protocol)
    spec = get_domain(domain)
    budget = AgentOptions(TOOL_SET, max_turns, max_tokens, trial_timeout, repeat_limit)

    run_program = _sandbox_runner(timeout)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        unit = plan_for(options).unit(state.sample_id)
        workdir = Path(tempfile.mkdtemp(prefix="deonticbench-inspect-"))
        workspace = build_workspace(unit.case, unit.mode, workdir / "workspace", unit.exemplars)
        toolbox = _toolbox(unit, workspace.root, spec, run_program, timeout)
        rails = Rails(toolbox, RepeatGuard(budget.repeat_limit), window=context_tokens)
        submitted: dict[str, Any] = {}
        start = time.monotonic()
        agent = _react_agent(rails, budget, submitted, start)
        limits = _trial_limits(budget)
        state.messages = to_inspect(opening_messages(unit.case, unit.mode, TOOL_SET, native=True))
        toolbox.deadline = start + budget.timeout_s
        try:
            state = await as_solver(agent, limits=limits)(state, generate)
        finally:
            toolbox.close()
        wall = time.monotonic() - start
        state.store.set(
            AGENT_KEY, _trial_facts(state, workspace.root, workdir, submitted, wall, budget, rails)
        )
        return state

    return solve


def _toolbox(
    unit: Unit, workspace: Path, spec: Domain, run_program: Execute, timeout: float
) -> ToolBox:
    """The trial's ToolBox on ``workspace``, its programs run by ``run_program`` within
    ``timeout`` seconds each."""
    toolbox = ToolBox(TOOL_SET, workspace, spec, run_program, limits=Limits(timeout_s=timeout))
    # The guard on an early submit (agents.guards), as the harness's loop sets it: its
    # error is a tool error, which react() does not take as a submission.
    toolbox.mode = unit.mode
    return toolbox


def _trial_limits(budget: AgentOptions) -> list[Limit]:
    """inspect's own limits on a trial: its wall clock, and its tokens when capped."""
    limits: list[Limit] = [time_limit(budget.timeout_s)]
    if budget.max_tokens is not None:
        limits.append(token_limit(budget.max_tokens))
    return limits


def _trial_facts(
    state: TaskState,
    workspace: Path,
    workdir: Path,
    submitted: dict[str, Any],
    wall: float,
    budget: AgentOptions,
    rails: Rails,
) -> dict[str, Any]:
    """What the solver hands the scorer in the sample's store (``AGENT_KEY``): where the
    workspace is, what was submitted, the trial's wall time, usage and budget, and what
    the rails saw (a stop of their own, each turn's extras, whether a program ran)."""
    return {
        "workspace": str(workspace),
        "workdir": str(workdir),
        "submitted": submitted.get("answer"),
        "was_submitted": "answer" in submitted,
        "wall_s": wall,
        "usage": _usage_by_turn(),
        "budget": budget.to_json(),
        "stopped": rails.stopped,
        "extras": rails.extras(state.messages),
        "ran_program": ran_program(state.messages),
    }


def _react_agent(
    rails: Rails, budget: AgentOptions, submitted: dict[str, Any], start: float
) -> Agent:
    """react() with the harness's tools (``submit`` as its submit tool), the rails' model
    hook, and the harness's stop rules asked after every turn."""
    tools = [_inspect_tool(t, rails, submitted) for t in tools_of(TOOL_SET)]
    plain = [t for t in tools if t.name != SUBMIT]
    (submit,) = [t for t in tools if t.name == SUBMIT]

    async def go_on(agent_state: AgentState) -> bool | str:
        # The harness's stop rules: the guard rails first (a repeat, a reply without a
        # call, a truncated reply answered), then a budget (inspect's own limits stop a
        # turn in flight).
        said = rails.after_turn(agent_state.messages)
        if said is False:
            return False
        used = budget_stop(
            budget,
            turns=_turns(agent_state.messages),
            tokens=sum(sum(u) for u in _usage_by_turn()),
            elapsed_s=time.monotonic() - start,
        )
        return said if used is None else False

    return react(
        prompt=None,
        tools=[t.as_tool() for t in plain],
        model=rails.generate,
        submit=AgentSubmit(tool=submit.as_tool(), answer_only=True, keep_in_messages=True),
        on_continue=go_on,
    )


def _usage_by_turn() -> list[list[int]]:
    """(input, output) tokens of each model call of this sample, in order."""
    out = []
    for event in transcript().events:
        if isinstance(event, ModelEvent) and event.output is not None:
            usage = event.output.usage
            out.append([usage.input_tokens, usage.output_tokens] if usage else [0, 0])
    return out


def _opening(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The messages before the first reply: the trajectory's opening steps.  A later
    user message (the answer to a truncated reply without calls) is recorded, as the
    loop records it, in that turn's ``extra.guard``."""
    replies = [i for i, m in enumerate(messages) if isinstance(m, ChatMessageAssistant)]
    return messages[: replies[0]] if replies else messages


def _trajectory(
    state: TaskState, usage: list[list[int]], session: str, extras: list[dict[str, Any]]
) -> dict[str, Any]:
    """The sample's conversation as ATIF, as the harness's loop writes it."""
    model = str(state.model)
    atif = new_trial_trajectory(session, model_name=model, tool_set=TOOL_SET, opening=())
    messages = list(state.messages)
    for m in _opening(messages):
        add_step(atif, m.role, m.text)
    for turn in turns_of(messages):
        tokens = usage[turn.index] if turn.index < len(usage) else [0, 0]
        add_agent_turn(
            atif,
            turn.index,
            turn.reply.text,
            [(c.id, c.name, c.arguments) for c in turn.calls],
            turn.observations,
            tokens=(tokens[0], tokens[1]),
            model_name=model,
            extra=extras[turn.index] if turn.index < len(extras) else None,
        )
    return atif


@scorer(metrics=[])
def deonticbench_agent_scorer(
    domain: str,
    split: str = "hard",
    mode: str = "agent-zero-shot",
    timeout: float = Limits.timeout_s,
    exemplar_seed: int = 0,
    data_dir: str | None = None,
    hub: bool = False,
    revision: str | None = None,
    protocol: str | None = None,
) -> Scorer:
    """Judge what the sample's workspace holds, as ``deonticbench eval`` judges a trial."""

    options = TaskOptions(domain, split, mode, exemplar_seed, data_dir, hub, revision, protocol)
    spec = get_domain(domain)

    run_program = _sandbox_runner(timeout)

    async def score(state: TaskState, target: Target) -> Score:
        unit = plan_for(options).unit(state.sample_id)
        facts: dict[str, Any] = state.store.get(AGENT_KEY)
        try:
            judgement = await ajudge_workspace(
                spec, unit.mode, Path(facts["workspace"]), run_program, facts["submitted"]
            )
        finally:
            shutil.rmtree(facts["workdir"], ignore_errors=True)
        record, atif = _trial_record(state, unit, spec, judgement, facts)
        return score_of(record, **{TRAJECTORY_KEY: json.loads(json.dumps(atif))})

    return score


def _trial_record(
    state: TaskState, unit: Unit, spec: Domain, judgement: Judgement, facts: dict[str, Any]
) -> tuple[Record, dict[str, Any]]:
    """The sample's record, as the harness's loop writes a trial's (its one judged
    attempt, its ``AgentInfo``), and its ATIF trajectory, from the judged workspace and
    the facts the solver stored (``_trial_facts``)."""
    usage = facts["usage"]
    tokens = (sum(u[0] for u in usage), sum(u[1] for u in usage))
    turns = _turns(state.messages)
    extras: list[dict[str, Any]] = facts["extras"]
    stop = _stop_of(facts, extras, turns=turns, tokens=sum(tokens))
    sample = state.epoch - 1
    session = session_id(spec.name, unit.case.id, unit.mode, sample)
    atif = _trajectory(state, usage, session, extras)
    finish_trial_trajectory(
        atif, stop_reason=stop, tool_set=TOOL_SET, tool_mode="native", judgement=judgement
    )
    attempt = trial_attempt(
        judgement,
        spec,
        unit.case.gold,
        prompt_hash=prompt_hash(opening_messages(unit.case, unit.mode, TOOL_SET, native=True)),
        tokens=tokens,
        ended=trial_ended(stop),
    )
    info = agent_info(
        TOOL_SET,
        turns=turns,
        atif=atif,
        stop_reason=stop,
        wall_s=float(facts["wall_s"]),
        tool_mode="native",
        ran_program=bool(facts["ran_program"]),
    )
    record = Record(
        domain=spec.name,
        case_id=unit.case.id,
        mode=unit.mode,
        sample=sample,
        gold=unit.case.gold,
        model=str(state.model),
        attempts=[attempt],
        agent=info,
    )
    return record, atif


def _stop_of(
    facts: dict[str, Any], extras: list[dict[str, Any]], *, turns: int, tokens: int
) -> str:
    """Why the trial stopped.  A rail that ended it (repeat, context) names its own stop
    reason, as in the loop; otherwise the stop rules read it from what the trial did."""
    return facts["stopped"] or stop_reason(
        AgentOptions.from_json(facts["budget"]),
        submitted=bool(facts["was_submitted"]),
        ended_without_call=_ended_without_call(extras),
        turns=turns,
        tokens=tokens,
        elapsed_s=float(facts["wall_s"]),
    )
