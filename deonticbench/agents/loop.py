"""One agentic trial: the loop of model turns and tool calls.

    trial = await run_trial(setup, generate, execute)

Each turn sends the whole conversation (with the tools, natively or in the text
protocol) and hands the calls of the reply to ``tools.execute_calls``.  The trial ends on
``submit``, on a reply with no tool call, or on a budget of ``setup.budget`` (the run's
``AgentOptions``; the rules are ``stops``); the reason is kept.  Then the harness judges
what the workspace holds (``judge``): the stop reason never decides the outcome.  The
guard rails of ``guards`` (an early ``submit``, a repeating agent, a truncated reply) and
the context budget of ``context`` are applied here, each recorded in the step's
``extra``.  A malformed call (unknown tool, bad JSON, a missing or mistyped argument)
is answered with an error and costs its turn; nothing an agent does raises out of the
loop.  The record, ``AgentInfo`` and trajectory are built by ``trial_record``.

``generate`` is the runner's: one model call for a conversation, through the response
cache (keyed by ``conversation_hash``), so a resumed or repeated trial pays for nothing
twice.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.cases import Case
from ..data.domains import Domain
from ..models.base import Completion
from ..models.constrained import at_bound, bound_note, bounded, decoded_under_schema
from ..prompting.render import prompt_hash
from ..solver import DEFAULT_TIMEOUT_S as DEFAULT_PROLOG_TIMEOUT_S
from ..solver import Limits, ShellLimits
from ..store.record import AgentInfo, Attempt
from ..store.spec import AgentOptions
from ..store.trajectory import add_agent_turn
from ..vocabulary.chat import Message, ToolCall, ToolSpec
from ..vocabulary.modes import Mode
from .context import Elidable, fit
from .conversation import conversation_hash, decode_turn, encode_turn, opening_messages
from .dar_judge import dar_verdict, harness_domain
from .guards import (
    HARNESS_INPUTS,
    TRUNCATED,
    Inputs,
    RepeatGuard,
    admitted,
    dar_inputs,
    refusal_rule,
    repeat_note,
    truncated,
)
from .judge import Judgement, ajudge_workspace
from .stops import budget_stop
from .tool_base import Observation
from .tool_mode import parse_text_calls, result_message
from .tools import Execute, ToolBox, TurnCalls, execute_calls
from .trial_record import (
    AGENT_NAME,
    AGENT_VERSION,
    agent_info,
    finish_trial_trajectory,
    new_trial_trajectory,
    ran_written_program,
    session_id,
    trial_attempt,
    trial_ended,
    turn_kind,
)
from .workspace import Workspace, build_dar_workspace, build_workspace

if TYPE_CHECKING:
    from ..prompting.dar_task import DarTask
    from ..reading.dar_verifier import RunsPrograms

logger = logging.getLogger(__name__)

__all__ = [
    "AGENT_NAME",
    "AGENT_VERSION",
    "Generate",
    "TrialResult",
    "TrialSetup",
    "conversation_hash",
    "decode_turn",
    "encode_turn",
    "first_messages",
    "offered_tools",
    "run_trial",
]

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
    """Offer the tools natively (``Request.tools``) or through the text tool mode."""
    workdir: Path
    """An empty folder for the workspace (the caller removes it afterwards)."""
    model_name: str
    exemplars: Sequence[Case] = ()
    budget: AgentOptions = field(default_factory=AgentOptions)
    """The run's agent options: turns, tokens and wall clock per trial."""
    shell_limits: ShellLimits | None = None
    context_tokens: int | None = None
    """The model's context window in tokens (``context.context_length``): the loop elides
    old observations to stay within it; None: no budget."""
    constrained: bool = False
    """The constrained tool mode (``models.constrained``): every turn's request carries
    the tools (as the schema its reply is decoded under, or forced natively), and the
    reply's calls are the backend's, never parsed from its text here."""
    argument_chars: int | None = None
    """Under a schema, the bound on each free-text argument (``models.base.turn_argument_chars``):
    written into the tools offered, and an argument that reached it is told so."""
    dar: DarTask | None = None
    """Under ``--protocol dar``, the case's DAR task: its instruction and /app files are
    the trial's, and DAR's verifier judges the final state beside the harness."""

    @property
    def schema_decoded(self) -> bool:
        """Its turns are decoded under the call schema (``decoded_under_schema``)."""
        return decoded_under_schema(self.constrained, self.native)

    @property
    def tool_mode(self) -> str:
        """``constrained``, ``native`` or ``text``: what the trajectory and record say."""
        return "constrained" if self.constrained else "native" if self.native else "text"

    @property
    def inputs(self) -> Inputs:
        """What the workspace gives the agent, which no write may replace: the harness's
        files, or under the dar protocol DAR's /app files (``guards.Inputs``)."""
        return HARNESS_INPUTS if self.dar is None else dar_inputs(self.dar)


@dataclass
class TrialResult:
    """What one finished trial of the loop leaves: its judgement, facts and trajectory."""

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
    cache_tokens: tuple[int, int, int] = (0, 0, 0)
    """Of ``tokens_in``, summed over the turns: read from the provider's prompt cache,
    written to it, and of those written, with the 1-hour TTL."""

    def attempt(self, gold: int | str) -> Attempt:
        """The record's one attempt: the judged final state, tokens summed over turns."""
        attempt = self._judged(gold)
        read, written, hour = self.cache_tokens
        attempt.cache_read_tokens, attempt.cache_write_tokens = read, written
        attempt.cache_write_1h_tokens = hour
        return attempt

    def _judged(self, gold: int | str) -> Attempt:
        return trial_attempt(
            self.judgement,
            self.domain,
            gold,
            prompt_hash=self.prompt_hash,
            tokens=(self.tokens_in, self.tokens_out),
            ended=trial_ended(self.info.stop_reason),
            latency_s=self.latency_s,
            cached=self.cached,
            error=self.error,
        )


def first_messages(setup: TrialSetup, *, prompts_dir: Path | None = None) -> tuple[Message, ...]:
    """The conversation a trial of ``setup`` starts with (``conversation.opening_messages``)."""
    return opening_messages(
        setup.case,
        setup.mode,
        setup.tool_set,
        native=setup.native,
        constrained=setup.constrained,
        tool_timeout_s=setup.shell_limits.timeout_s
        if setup.shell_limits
        else DEFAULT_PROLOG_TIMEOUT_S,
        prompts_dir=prompts_dir,
        dar=setup.dar,
    )


def _workspace(setup: TrialSetup) -> Workspace:
    if setup.dar is not None:
        return build_dar_workspace(setup.dar, setup.mode, setup.workdir)
    return build_workspace(setup.case, setup.mode, setup.workdir, setup.exemplars)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class _Progress:
    """What a trial has done so far (the loop's running totals)."""

    setup: TrialSetup
    toolbox: ToolBox
    messages: tuple[Message, ...]
    atif: dict[str, Any]
    turns: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    all_cached: bool = True
    error: str | None = None
    submitted: str | None = None
    cache_tokens: tuple[int, int, int] = (0, 0, 0)
    repeats: RepeatGuard = field(default_factory=lambda: RepeatGuard(None))
    elidable: list[Elidable] = field(default_factory=list)
    elided: list[dict[str, Any]] = field(default_factory=list)
    """Elisions made before the turn not yet recorded (go into its step's ``extra``)."""
    withheld: list[str] = field(default_factory=list)
    """Tools the turn's schema left out (``guards.admitted``): its step's ``extra``."""
    answered: list[tuple[ToolCall, bool]] = field(default_factory=list)
    """Every call run so far, with whether it was answered without an error."""

    def took(self, completion: Completion, cached: bool, calls: tuple[ToolCall, ...]) -> None:
        """Count a reply and add it to the conversation."""
        self.turns += 1
        self.all_cached = self.all_cached and cached
        self.tokens_in += completion.tokens_in
        self.tokens_out += completion.tokens_out
        read, written, hour = self.cache_tokens
        self.cache_tokens = (
            read + completion.cache_read_tokens,
            written + completion.cache_write_tokens,
            hour + completion.cache_write_1h_tokens,
        )
        self.latency_s += completion.latency_s
        native = self.setup.native
        reply = Message(
            role="assistant", content=completion.text or "", tool_calls=calls if native else ()
        )
        self.messages += (reply,)

    def _turn_extra(
        self, completion: Completion, cached: bool, calls: Sequence[ToolCall],
        done: TurnCalls | None, guards: list[dict[str, Any]] | None,
    ) -> dict[str, Any]:  # fmt: skip
        """A turn's step's ``extra``: cached or not, the calls that erred, the rails that
        acted, what was elided or withheld, its kind and the calls it could not read."""
        results = done.results if done is not None else ()
        extra: dict[str, Any] = {"cached": cached}
        if done is not None:
            extra["errors"] = [i for i, (_, o) in enumerate(results) if o.is_error]
        guards = list(guards or ())
        guards += [
            {"rule": rule, "call": i, "observation": o.text}
            for i, (_, o) in enumerate(results)
            if (rule := refusal_rule(o.text)) is not None
        ]
        # Only when a rail acted or something was elided, so that a trial neither touches
        # records exactly what it did before they existed.
        if guards:
            extra["guard"] = guards
        if self.elided:
            extra["elided"], self.elided = self.elided, []
        if self.withheld:
            extra["withheld"], self.withheld = self.withheld, []
        if completion.decode_s is not None:
            extra["decode_s"] = completion.decode_s
        extra["kind"] = turn_kind(
            truncated=any(g["rule"] == "truncated" for g in guards),
            calls=len(calls),
            malformed=sum(self.toolbox.malformed(c) for c in calls),
            refused=sum("call" in g for g in guards),
        )
        malformed = {
            str(i): {"arguments": c.raw_arguments, "error": c.error}
            for i, c in enumerate(calls)
            if c.error is not None
        }
        if malformed:
            # ATIF's arguments must be an object, so a call whose arguments could not be
            # read keeps them here as sent, with why: a replay answers it as the trial did.
            extra["malformed_calls"] = malformed
        return extra

    def _answer(self, turn: int, results: Sequence[tuple[ToolCall, Any]]) -> None:
        """The calls' results as the next messages (one tool message a call, natively;
        one user message for all of them otherwise), each elidable later."""
        if results:
            first = len(self.messages)
            count = len(results) if self.setup.native else 1
            calls_answered = tuple(c for c, _ in results)
            self.elidable += [
                Elidable(first + n, turn, calls_answered[n : n + 1] if self.setup.native
                         else calls_answered)
                for n in range(count)
            ]  # fmt: skip
        if self.setup.native:
            self.messages += tuple(
                Message(role="tool", content=o.text, tool_call_id=c.id, name=c.name,
                        is_error=o.is_error)
                for c, o in results
            )  # fmt: skip
        else:
            self.messages += (result_message([(c, o.text) for c, o in results]),)

    def record_turn(
        self, turn: int, completion: Completion, cached: bool, calls: Sequence[ToolCall],
        done: TurnCalls | None, guards: list[dict[str, Any]] | None = None,
    ) -> None:  # fmt: skip
        """The turn as a trajectory step, and its calls' results as the next messages.
        ``guards`` are the guard rails that acted on the turn (rule and observation)."""
        results = done.results if done is not None else ()
        extra = self._turn_extra(completion, cached, calls, done, guards)
        self.answered += [(c, not o.is_error) for c, o in results]
        add_agent_turn(
            self.atif,
            turn,
            completion.text or "",
            [(c.id, c.name, c.arguments) for c in calls],
            [o.text for _, o in results],
            tokens=(completion.tokens_in, completion.tokens_out),
            model_name=self.setup.model_name,
            timestamp=_now(),
            extra=extra,
            cache=(completion.cache_read_tokens, completion.cache_write_tokens),
        )
        if done is not None:
            self._answer(turn, results)


def _tell_bounds(
    done: TurnCalls, offered: tuple[ToolSpec, ...], guards: list[dict[str, Any]]
) -> TurnCalls:
    """Each observation of a call whose arguments reached their bounds in ``offered``
    (the decoder closed them there) with ``bound_note`` added, the note in ``guards``."""
    results = []
    for call, observation in done.results:
        reached = at_bound(call, offered)
        if reached:
            note = bound_note(reached)
            guards.append({"rule": "argument_bound", "observation": note})
            observation = observation.noted(note)
        results.append((call, observation))
    return TurnCalls(tuple(results), done.timed_out)


def offered_tools(setup: TrialSetup, specs: Sequence[ToolSpec], root: Path) -> tuple[ToolSpec, ...]:
    """What a turn of ``setup`` offers, with the workspace at ``root`` as it is: nothing
    in the text tool mode; the tool set, natively (a forced native call keeps this one
    list: a provider's prompt cache starts with the tools); under a schema, the calls
    the rails would accept now, bounded to fit the turn (``guards.admitted``,
    ``constrained.bounded``).  The dry run asks it for a first turn, to key it as the
    run will."""
    if setup.native:
        return tuple(specs)
    if not setup.constrained:
        return ()
    return bounded(admitted(specs, setup.mode, root, setup.inputs), setup.argument_chars)


async def _take_turns(run: _Progress, generate: Generate, start: float, deadline: float) -> str:
    """Turns until one of the stop rules holds; returns the stop reason."""
    setup = run.setup
    every = run.toolbox.specs
    schema_decoded = setup.schema_decoded
    for turn in itertools.count():
        tokens = run.tokens_in + run.tokens_out
        elapsed = time.monotonic() - start
        stop = budget_stop(setup.budget, turns=turn, tokens=tokens, elapsed_s=elapsed)
        if stop is not None:
            return stop
        if setup.context_tokens is not None:
            fitted = fit(run.messages, run.elidable, setup.context_tokens)
            if fitted is None:
                return "context"
            run.messages, elided = fitted
            run.elided += elided
        offered = offered_tools(setup, every, run.toolbox.root)
        if schema_decoded:
            names = {spec.name for spec in offered}
            run.withheld = [spec.name for spec in every if spec.name not in names]
        try:
            completion, cached = await asyncio.wait_for(
                generate(run.messages, offered, turn), deadline - time.monotonic()
            )
        except TimeoutError:
            return "timeout"
        if completion.error is not None or completion.text is None:
            run.error = completion.error or "the backend returned no text"
            return "error"
        calls = (
            completion.tool_calls
            if setup.native or setup.constrained
            else parse_text_calls(completion.text, turn=turn)
        )
        run.took(completion, cached, calls)
        if truncated(completion):
            _answer_truncated(run, turn, completion, cached, calls)
            continue
        if not calls:
            run.record_turn(turn, completion, cached, calls, None)
            return "no_tool_call"
        done = await execute_calls(run.toolbox, calls, deadline)
        guards: list[dict[str, Any]] = []
        if schema_decoded:
            done = _tell_bounds(done, offered, guards)
        verdict = run.repeats.after([(c, o.text) for c, o in done.results])
        if verdict == "note" and done.results:
            note = repeat_note(run.repeats.times)
            guards.append({"rule": "repeat", "observation": note})
            call, last = done.results[-1]
            done = TurnCalls((*done.results[:-1], (call, last.noted(note))), done.timed_out)
        elif verdict == "stop":
            guards.append({"rule": "repeat", "observation": "stopped: the same turn again"})
        run.record_turn(turn, completion, cached, calls, done, guards)
        if done.submitted is not None:
            run.submitted = done.submitted.answer
            return "submit"
        if done.timed_out:
            return "timeout"
        if verdict == "stop":
            return "repeat"
    raise AssertionError("unreachable: itertools.count() does not end")


def _answer_truncated(
    run: _Progress, turn: int, completion: Completion, cached: bool, calls: Sequence[ToolCall]
) -> None:
    """A reply cut off by the output-token limit: its calls may be cut short too, so none
    is run; each is answered with ``TRUNCATED`` (a reply without calls gets it as a user
    message), and the turn is spent."""
    guards = [{"rule": "truncated", "observation": TRUNCATED}]
    if calls:
        refused = Observation(TRUNCATED, is_error=True)
        done = TurnCalls(tuple((c, refused) for c in calls), timed_out=False)
        run.record_turn(turn, completion, cached, calls, done, guards)
        return
    run.record_turn(turn, completion, cached, calls, None, guards)
    run.messages += (Message(role="user", content=TRUNCATED),)


async def run_trial(
    setup: TrialSetup,
    generate: Generate,
    execute: Execute,
    *,
    limits: Limits | None = None,
    programs: RunsPrograms | None = None,
) -> TrialResult:
    """Carry out one trial in ``setup.workdir`` and judge what it left (under the dar
    protocol, by DAR's verifier too, its program run through ``programs``)."""
    workspace = _workspace(setup)
    toolbox = _toolbox(setup, workspace.root, execute, limits)
    opening = first_messages(setup)
    session = session_id(setup.domain.name, setup.case.id, setup.mode, setup.sample)
    atif = new_trial_trajectory(
        session, model_name=setup.model_name, tool_set=setup.tool_set, opening=opening
    )
    toolbox.mode = setup.mode
    run = _Progress(setup, toolbox, opening, atif, repeats=RepeatGuard(setup.budget.repeat_limit))
    logger.debug("trial %s starts (%s tools, %s)", session, setup.tool_set, setup.budget)
    start = time.monotonic()
    toolbox.deadline = deadline = start + setup.budget.timeout_s
    try:
        stop = await _take_turns(run, generate, start, deadline)
    finally:
        toolbox.close()
    wall = time.monotonic() - start
    logger.debug("trial %s stopped: %s after %d turns", session, stop, run.turns)
    judgement, dar = await _judge_final(setup, workspace.root, run, execute, programs)
    finish_trial_trajectory(
        atif, stop_reason=stop, tool_set=setup.tool_set, tool_mode=setup.tool_mode,
        judgement=judgement,
    )  # fmt: skip
    info = agent_info(
        setup.tool_set,
        turns=run.turns,
        atif=atif,
        stop_reason=stop,
        wall_s=wall,
        tool_mode=setup.tool_mode,
        ran_program=ran_written_program(run.answered),
    )
    info.dar = dar
    return TrialResult(
        domain=setup.domain,
        judgement=judgement,
        info=info,
        trajectory=atif,
        prompt_hash=prompt_hash(opening),
        tokens_in=run.tokens_in,
        tokens_out=run.tokens_out,
        latency_s=run.latency_s,
        cached=run.all_cached and run.turns > 0,
        error=run.error,
        cache_tokens=run.cache_tokens,
    )


def _toolbox(setup: TrialSetup, root: Path, execute: Execute, limits: Limits | None) -> ToolBox:
    """The trial's tools over its workspace (shown at /app under the dar protocol)."""
    return ToolBox(setup.tool_set, root, setup.domain, execute,
                   shell_limits=setup.shell_limits, limits=limits, inputs=setup.inputs)  # fmt: skip


async def _judge_final(
    setup: TrialSetup,
    root: Path,
    run: _Progress,
    execute: Execute,
    programs: RunsPrograms | None,
) -> tuple[Judgement, dict[str, Any] | None]:
    """The harness's judgement of the final workspace, and under the dar protocol DAR's
    verifier's too (its program run through ``programs``); the harness reads DAR's
    ``Answer:`` line there (``dar_judge.harness_domain``)."""
    toolbox = run.toolbox
    if setup.dar is None:
        judged = await ajudge_workspace(setup.domain, setup.mode, root, execute, run.submitted,
                                        last_run=toolbox.last_run)  # fmt: skip
        return judged, None
    if programs is None:
        raise ValueError("a dar-protocol trial needs a runner of DAR's verifier programs")
    judged = await ajudge_workspace(harness_domain(setup.domain), setup.mode, root, execute,
                                    run.submitted, last_run=toolbox.last_run)  # fmt: skip
    return judged, await dar_verdict(setup.dar, root, programs)
