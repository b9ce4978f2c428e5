"""The JSON schema of one tool call (``call_schema``: a union with a branch per tool),
the order a decoder writes its keys in (``property_order``), and the call read back from
a schema-decoded reply (``schema_calls``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..vocabulary.chat import ToolCall, ToolSpec
from .tool_calls import call_from_json


def call_schema(tools: Sequence[ToolSpec]) -> dict[str, Any]:
    """The JSON schema of one call of one of ``tools``: a union with one branch per tool,
    its name a constant and its arguments the tool's own argument schema."""
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {"name": {"const": tool.name}, "arguments": dict(tool.parameters)},
                "required": ["name", "arguments"],
                "additionalProperties": False,
            }
            for tool in tools
        ]
    }


def property_order(tools: Sequence[ToolSpec]) -> list[str]:
    """The order in which a decoder should emit an object's keys: ``name`` before
    ``arguments`` (a small model that writes the arguments first has chosen its tool by
    accident), then each tool's arguments as the tool declares them (``path`` before a
    file's ``content``).  Grammar converters otherwise sort keys alphabetically."""
    order = ["name", "arguments"]
    for tool in tools:
        for key in tool.parameters.get("properties", {}):
            if key not in order:
                order.append(key)
    return order


def schema_calls(text: str | None, *, turn: int) -> tuple[ToolCall, ...]:
    """The call a schema-constrained reply holds (id ``t<turn>_0``, as the text tool mode
    numbers them).  A reply cut short is not valid JSON: it becomes a call with an
    ``error``, answered with that error like any malformed call."""
    if not (text or "").strip():
        return ()
    return (call_from_json(str(text), f"t{turn}_0"),)
