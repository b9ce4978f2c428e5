"""The harness's guard rails and context budget around inspect's ``react()``.

react() drives the turns; ``Rails`` holds what the harness's loop applies between them,
each rule stated once in ``agents.guards`` and ``agents.context``:

* ``generate`` is react()'s model (react() takes an agent of the state and the tools in
  its place): before each model call it fits the conversation to the window (``fit``:
  the oldest observations become stubs; a conversation that cannot fit stops the trial,
  ``context``), and it answers a reply cut off at the output-token limit itself, each
  call with ``TRUNCATED``, so none of them runs: react() runs the calls of the last
  message only, and that is then an answer, not the reply.
* ``after_turn`` is asked first by react()'s ``on_continue``: the repeat guard (a note
  after the last observation, then the stop ``repeat``), a truncated reply (go on; one
  without calls is answered ``TRUNCATED`` as a user message), a reply without a call.
* ``extras`` and ``ran_program`` read the finished conversation into what the loop
  records of each turn (``extra.kind``, ``extra.guard``, ``extra.elided``,
  ``extra.errors``) and of the trial.

The stubs live here, not in the conversation: react()'s messages keep every observation
as it was, so the log and the trajectory show what the tools said, and the model is sent
the elided copy, as the loop sends its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from inspect_ai.agent import AgentState
from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ModelOutput,
    get_model,
)
from inspect_ai.tool import Tool, ToolCallError

from ...agents import (
    MAX_CALLS_PER_TURN,
    TRUNCATED,
    Elidable,
    RepeatGuard,
    ToolBox,
    fit,
    ran_written_program,
    refusal_rule,
    repeat_note,
    turn_kind,
)
from ...store import STOP_REASONS
from ...vocabulary.chat import ToolCall
from ._messages import harness_call, native_conversation, observation_text

CUT_OFF = "max_tokens"
"""inspect's stop reason for a reply cut off by the output-token limit: the harness's
finish reason ``length`` (``agents.guards.truncated``)."""
REPEAT_STOPPED = "stopped: the same turn again"
"""What the loop records of the turn the repeat guard stops on."""


@dataclass
class Turn:
    """One model turn of the conversation: its reply, and the answer to each call (None
    for a call nothing answered)."""

    index: int
    reply: ChatMessageAssistant
    calls: list[ToolCall]
    answers: list[ChatMessageTool | None]

    @property
    def observations(self) -> list[str]:
        return [observation_text(a) if a is not None else "" for a in self.answers]


def turns_of(messages: list[ChatMessage]) -> Iterator[Turn]:
    """The model turns of a conversation, in order."""
    replies = [m for m in messages if isinstance(m, ChatMessageAssistant)]
    answers = {m.tool_call_id: m for m in messages if isinstance(m, ChatMessageTool)}
    for index, reply in enumerate(replies):
        sent = list(reply.tool_calls or ())
        calls = [harness_call(c) for c in sent]
        yield Turn(index, reply, calls, [answers.get(c.id) for c in sent])


def _refusal(call: ToolCall) -> ChatMessageTool:
    """The answer to a call of a truncated reply (``TRUNCATED``, as an error)."""
    return ChatMessageTool(
        content="",
        tool_call_id=call.id,
        function=call.name,
        error=ToolCallError("unknown", TRUNCATED.removeprefix("error: ")),
    )


def _with_note(answer: ChatMessageTool, note: str) -> None:
    """Append the repeat guard's note to an observation, as the loop appends it."""
    if answer.error is not None:
        answer.error = ToolCallError(answer.error.type, f"{answer.error.message}\n\n{note}")
    else:
        answer.content = f"{answer.text}\n\n{note}"


def _with_stub(message: ChatMessage, line: str) -> ChatMessage:
    # The stub replaces the whole observation, an error's message too (a provider shows
    # a tool error's message in place of its content).
    return message.model_copy(update={"content": line, "error": None})


@dataclass
class Rails:
    """The guard rails and context budget of one trial in inspect (see the docstring)."""

    toolbox: ToolBox
    repeats: RepeatGuard
    window: int | None = None
    """The model's context window in tokens, or None: no budget."""
    stopped: str | None = None
    """``repeat`` or ``context`` when a rail ended the trial."""
    stubs: dict[int, str] = field(default_factory=dict)
    """Message index -> the stub it is sent as (elisions stay, as in the loop)."""
    truncated: set[int] = field(default_factory=set)
    """The turns cut off at the output-token limit."""
    guards: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Turn -> the rails that acted on it (truncated, repeat), as the loop records them."""
    elided: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    """Turn -> the elisions made before it."""
    refusals: set[str] = field(default_factory=set)
    """Observations of a well-formed ``submit`` the toolbox refused: the early-submit rail
    (``submit`` itself never fails), seen by the tool that ran it."""
    calls_in_turn: int = 0
    """Calls run since the last model call (at most ``MAX_CALLS_PER_TURN``, as the loop)."""

    def admit_call(self) -> bool:
        """Whether a tool call of this turn may run (counted), or is one too many."""
        if self.calls_in_turn >= MAX_CALLS_PER_TURN:
            return False
        self.calls_in_turn += 1
        return True

    def _stop(self, reason: str) -> None:
        if reason not in STOP_REASONS:
            raise ValueError(f"{reason!r} is not a stop reason of the store")
        self.stopped = reason

    def saw(self, call: ToolCall, is_error: bool, text: str) -> None:
        """Note what the toolbox answered a call (the tools call this)."""
        if is_error and not self.toolbox.malformed(call) and refusal_rule(text) is not None:
            self.refusals.add(text)

    async def generate(self, state: AgentState, tools: list[Tool]) -> AgentState:
        """react()'s model: one model call on the conversation fitted to the window.

        Args:
          state: the conversation so far.
          tools: the tools offered.
        """
        turn = sum(1 for m in state.messages if isinstance(m, ChatMessageAssistant))
        self.calls_in_turn = 0
        sent = self._fitted(state.messages, turn)
        model = get_model()
        if sent is None:
            # No model call: react() sees a reply with no call and asks after_turn,
            # which ends the trial; nothing is added to the conversation.
            self._stop("context")
            state.output = ModelOutput.from_content(str(model), "")
            return state
        state.output = await model.generate(sent, tools)
        state.messages.append(state.output.message)
        if state.output.stop_reason == CUT_OFF:
            self.truncated.add(turn)
            self.guards.setdefault(turn, []).append({"rule": "truncated", "observation": TRUNCATED})
            calls = [harness_call(c) for c in state.output.message.tool_calls or ()]
            state.messages.extend(_refusal(c) for c in calls)
        return state

    def _fitted(self, messages: list[ChatMessage], turn: int) -> list[ChatMessage] | None:
        """The messages to send within the window (stubs for elided observations), or
        None when even that cannot fit."""
        if self.window is None:
            return messages
        view = native_conversation(messages)
        view = tuple(
            m if i not in self.stubs else replace(m, content=self.stubs[i])
            for i, m in enumerate(view)
        )
        result = fit(view, list(_elidable(messages)), self.window)
        if result is None:
            return None
        fitted, elided = result
        for index, (before, after) in enumerate(zip(view, fitted, strict=True)):
            if before.content != after.content:
                self.stubs[index] = after.content
        if elided:
            self.elided.setdefault(turn, []).extend(elided)
            transcript().info(f"elided {len(elided)} observations to fit the context window")
        return [
            m if i not in self.stubs else _with_stub(m, self.stubs[i])
            for i, m in enumerate(messages)
        ]

    def after_turn(self, messages: list[ChatMessage]) -> bool | str:
        """After a turn: False ends the trial (a rail, or a reply without a call), True
        goes on, a string goes on with it as the user's message."""
        if self.stopped is not None:
            return False
        turns = list(turns_of(messages))
        if not turns:
            return False
        last = turns[-1]
        if last.index in self.truncated:
            return True if last.calls else TRUNCATED
        if not last.calls:
            return False
        verdict = self.repeats.after(list(zip(last.calls, last.observations, strict=True)))
        if verdict == "note" and last.answers[-1] is not None:
            note = repeat_note(self.repeats.times)
            self.guards.setdefault(last.index, []).append({"rule": "repeat", "observation": note})
            _with_note(last.answers[-1], note)
        elif verdict == "stop":
            guard = {"rule": "repeat", "observation": REPEAT_STOPPED}
            self.guards.setdefault(last.index, []).append(guard)
            self._stop("repeat")
            return False
        return True

    def extras(self, messages: list[ChatMessage]) -> list[dict[str, Any]]:
        """Each turn's ``extra`` as the loop records it: the errors among its calls'
        observations, the rails that acted, the elisions before it, its kind."""
        return [self._extra(turn) for turn in turns_of(messages)]

    def _extra(self, turn: Turn) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if turn.calls:
            extra["errors"] = [
                i for i, a in enumerate(turn.answers) if a is not None and a.error is not None
            ]
        refused = [
            {"rule": refusal_rule(text), "call": i, "observation": text}
            for i, text in enumerate(turn.observations)
            if text in self.refusals
        ]
        guards = self.guards.get(turn.index, []) + refused
        if guards:
            extra["guard"] = guards
        if turn.index in self.elided:
            extra["elided"] = self.elided[turn.index]
        extra["kind"] = turn_kind(
            truncated=turn.index in self.truncated,
            calls=len(turn.calls),
            malformed=sum(self.toolbox.malformed(c) for c in turn.calls),
            refused=len(refused),
        )
        return extra


def _elidable(messages: list[ChatMessage]) -> Iterator[Elidable]:
    """Each observation of the conversation, with the turn it answers and its call."""
    turn = -1
    calls: dict[str, ToolCall] = {}
    for index, message in enumerate(messages):
        if isinstance(message, ChatMessageAssistant):
            turn += 1
            calls = {c.id: harness_call(c) for c in message.tool_calls or ()}
        elif isinstance(message, ChatMessageTool) and message.tool_call_id in calls:
            yield Elidable(index, turn, (calls[message.tool_call_id],))


def ran_program(messages: list[ChatMessage]) -> bool:
    """Whether the agent ran a program it had written (``agents.ran_written_program``)."""
    return ran_written_program(
        (call, answer is not None and answer.error is None)
        for turn in turns_of(messages)
        for call, answer in zip(turn.calls, turn.answers, strict=True)
    )
