"""Between inspect's chat messages and model outputs and the harness's: text unchanged."""

from __future__ import annotations

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
)
from inspect_ai.tool import ToolCall as InspectCall

from ...models.base import Completion
from ...vocabulary.chat import Message, Role, ToolCall


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


def harness_call(call: InspectCall) -> ToolCall:
    """An inspect tool call as the harness's: a call inspect could not parse keeps why."""
    return ToolCall(call.id, call.function, dict(call.arguments), error=call.parse_error)


def observation_text(message: ChatMessageTool) -> str:
    """A tool message's observation as the harness's tools word it: a failed call is
    ``error: ...`` (inspect keeps the message of a raised ``ToolError`` apart)."""
    return f"error: {message.error.message}" if message.error else message.text


def native_conversation(messages: list[ChatMessage]) -> tuple[Message, ...]:
    """Inspect's conversation as the harness's loop holds it with native tool calling:
    the assistant's calls on its messages, each observation a tool message."""
    out: list[Message] = []
    for m in messages:
        if isinstance(m, ChatMessageAssistant):
            calls = tuple(harness_call(c) for c in m.tool_calls or ())
            out.append(Message(role="assistant", content=m.text, tool_calls=calls))
        elif isinstance(m, ChatMessageTool):
            out.append(
                Message(role="tool", content=observation_text(m), tool_call_id=m.tool_call_id,
                        name=m.function, is_error=m.error is not None)
            )  # fmt: skip
        else:
            role: Role = "system" if m.role == "system" else "user"
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
