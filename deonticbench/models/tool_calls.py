"""Tool calling on the wire: our messages and tools in each provider's format, and the
tool calls of a reply read back (OpenAI chat completions, also vLLM's; Anthropic).

An OpenAI reply's arguments are a JSON string: one that is not a JSON object becomes a
``ToolCall`` with an ``error``, answered with that error (never a crash).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..vocabulary.chat import Message, ToolCall, ToolSpec
from ._sdk import MalformedResponse, field_of


def openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": json.dumps(dict(c.arguments), ensure_ascii=False),
                            },
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [t.to_openai() for t in tools]


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Arguments as sent (a JSON string or an object): (the object, None) or ({}, why not)."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if not isinstance(raw, str):
        return {}, f"the arguments are {type(raw).__name__}, not a JSON object"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"the arguments are not valid JSON ({exc.msg})"
    if not isinstance(value, dict):
        return {}, f"the arguments are a JSON {type(value).__name__}, not an object"
    return value, None


def raw_text(raw: Any, error: str | None) -> str | None:
    """A malformed call's arguments as text (None for a call that could be read), so the
    trajectory keeps what the model sent."""
    if error is None:
        return None
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False, default=str)


def read_openai_tool_calls(message: Any) -> tuple[ToolCall, ...]:
    calls = field_of(message, "tool_calls") if message is not None else None
    if not calls:
        return ()
    if not isinstance(calls, list):
        raise MalformedResponse("message.tool_calls is not a list")
    out = []
    for index, call in enumerate(calls):
        function = field_of(call, "function")
        name = field_of(function, "name") if function is not None else None
        if not isinstance(name, str):
            raise MalformedResponse("a tool call has no function name")
        raw = field_of(function, "arguments")
        arguments, error = parse_arguments(raw)
        call_id = field_of(call, "id")
        out.append(
            ToolCall(str(call_id or f"call_{index}"), name, arguments, error, raw_text(raw, error))
        )
    return tuple(out)


def anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Non-system messages in the messages API form: an assistant turn's tool calls are
    ``tool_use`` blocks, and the tool results that follow it are ``tool_result`` blocks of
    one user message."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id,
                "content": m.content,
                "is_error": m.is_error,
            }
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous["role"] == "user"
                and isinstance(previous["content"], list)
            ):
                previous["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.tool_calls:
            blocks: list[dict[str, Any]] = []
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
        for t in tools
    ]


def read_anthropic_tool_calls(content: Any) -> tuple[ToolCall, ...]:
    out = []
    for block in content or []:
        if field_of(block, "type") != "tool_use":
            continue
        name = field_of(block, "name")
        if not isinstance(name, str):
            raise MalformedResponse("a tool_use block has no name")
        raw = field_of(block, "input")
        arguments, error = parse_arguments(raw)
        out.append(
            ToolCall(
                str(field_of(block, "id") or name), name, arguments, error, raw_text(raw, error)
            )
        )
    return tuple(out)


_HERMES_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


def read_hermes_tool_calls(text: str, *, turn_id: str = "call") -> tuple[str, tuple[ToolCall, ...]]:
    """The tool calls a chat template's model wrote as text, in the Hermes form that
    Qwen 2.5/3 and Hermes models use (``<tool_call>{"name": ..., "arguments": {...}}
    </tool_call>``): vLLM's offline engine passes ``tools`` to the template but parses
    nothing back.  Returns the text without the calls, and the calls."""
    calls = tuple(
        call_from_json(match.group(1), f"{turn_id}_{index}")
        for index, match in enumerate(_HERMES_CALL.finditer(text))
    )
    return _HERMES_CALL.sub("", text).strip(), calls


def call_from_json(body: str, call_id: str) -> ToolCall:
    """A call written as ``{"name": ..., "arguments": {...}}`` (the Hermes form, the text
    protocol); one that cannot be read is a call with an ``error``, answered with it."""
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        return ToolCall(call_id, "?", {}, f"the tool call is not valid JSON ({exc.msg})")
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return ToolCall(call_id, "?", {}, 'the tool call needs a "name" string')
    arguments, error = parse_arguments(obj.get("arguments"))
    return ToolCall(call_id, obj["name"], arguments, error, raw_text(obj.get("arguments"), error))
