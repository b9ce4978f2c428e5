"""The constrained tool protocol: each agent turn decoded as exactly one tool call.

Small and open models often cannot write a well-formed tool call on their own: a reply
of prose ends the trial before any program is written (issue 28).  Under the
constrained protocol (``--param tool_protocol=constrained``, the default for ``local:``)
the backend makes a call the only thing the model can emit:

* engines that decode under a JSON schema (``local:`` through llama.cpp's own
  schema-to-grammar conversion, ``vllm:`` through its structured outputs,
  ``openai-compatible:`` servers through ``response_format``) decode the reply under
  ``call_schema(tools)``: one object ``{"name": <an offered tool>, "arguments": {...}}``
  with the arguments valid for that tool.  The conversation is the text protocol's
  (no native tool messages), and the decoded object is read back by ``schema_calls``
  into the same ``ToolCall`` the other protocols produce;
* the API providers (``openai:``, ``anthropic:``) keep their native tool calling and
  force exactly one call (``tool_choice``).

Whatever shapes the reply beyond the conversation (the schema, ``tool_choice``,
``response_format``) is the backend's ``Model.reply_shape``, which the response cache
keys an agentic turn on; the protocol itself is recorded in config.json, each trial's
trajectory and record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ..prompting.chat import ToolCall, ToolSpec
from .tool_calls import call_from_json

TOOL_PROTOCOL_PARAM = "tool_protocol"
"""``--param tool_protocol=native|text|constrained``."""
NATIVE, TEXT, CONSTRAINED = "native", "text", "constrained"
TOOL_PROTOCOLS = (NATIVE, TEXT, CONSTRAINED)
"""The three protocols an agentic trial can use (docs/agents.md)."""
CONSTRAINED_MAX_TOKENS_PARAM = "constrained_max_tokens"
"""``--param constrained_max_tokens=N``: the output limit of a constrained turn, which may
need more room than a text turn for a ``write_file`` of a whole program.  It changes
what comes back, so a backend puts it in its identity (the cache key)."""


def tool_protocol(
    options: Mapping[str, Any] | None,
    *,
    default: str = NATIVE,
    offered: Sequence[str] = TOOL_PROTOCOLS,
    backend: str = "this backend",
) -> str:
    """The protocol the backend's options ask for (``default`` when they name none); one
    that the backend does not offer is one sentence naming those it does."""
    value = str((options or {}).get(TOOL_PROTOCOL_PARAM) or default).strip().lower()
    if value not in TOOL_PROTOCOLS:
        raise ConfigError(
            f"tool_protocol should be one of {', '.join(TOOL_PROTOCOLS)}, not {value!r}."
        )
    if value not in offered:
        raise ConfigError(
            f"{backend} has no {value} tool protocol; use tool_protocol={' or '.join(offered)}."
        )
    return value


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
    """The call a schema-constrained reply holds (id ``t<turn>_0``, as the text protocol
    numbers them).  A reply cut short is not valid JSON: it becomes a call with an
    ``error``, answered with that error like any malformed call."""
    if not (text or "").strip():
        return ()
    return (call_from_json(str(text), f"t{turn}_0"),)


def constrained_max_tokens(options: Mapping[str, Any] | None, default: int | None) -> int | None:
    """The output limit of a constrained turn: the option when set, else ``default``."""
    value = (options or {}).get(CONSTRAINED_MAX_TOKENS_PARAM)
    if value is None:
        return default
    limit = int(value)
    if limit < 1:
        raise ConfigError(f"{CONSTRAINED_MAX_TOKENS_PARAM} should be at least 1, not {limit}.")
    return limit
