"""The constrained tool mode: each agent turn decoded as exactly one tool call.

Small and open models often cannot write a well-formed tool call on their own: a reply
of prose ends the trial before any program is written.  Under the
constrained tool mode (``--param tool_mode=constrained``, the default for ``local:``)
the backend makes a call the only thing the model can emit:

* engines that decode under a JSON schema (``local:`` through llama.cpp's own
  schema-to-grammar conversion, ``vllm:`` through its structured outputs,
  ``openai-compatible:`` servers through the structured-output field they take,
  ``openai_backend.CONSTRAINED_FIELDS``) decode the reply under
  ``call_schema(tools)``: one object ``{"name": <an offered tool>, "arguments": {...}}``
  with the arguments valid for that tool.  The conversation is the text tool mode's
  (no native tool messages), and the decoded object is read back by ``schema_calls``
  into the same ``ToolCall`` the other protocols produce;
* the API providers (``openai:``, ``anthropic:``) keep their native tool calling and
  force exactly one call (``tool_choice``).

A schema-decoded call must fit in its turn: its string arguments (a file's
``content``, a ``path``) are bounded (``bounded``) to ``argument_chars(max_tokens)``
characters between them, what the turn's output limit holds at one token per character
less the call's frame; a ``path`` gets at most ``path_chars`` of them, whatever bound a
rail's pattern gave it.  A
runaway argument (a small model counting "1, 2, 3, ..." into a ``write_file``) is
then closed by the decoder and run, instead of being cut off mid-call by the limit and
lost; the loop tells the model when an argument reached the bound (``bound_note``).

Whatever shapes the reply beyond the conversation (the schema in the server's
structured-output field, or the forced ``tool_choice``) is the backend's
``Model.reply_shape``, which the response cache
keys an agentic turn on; the protocol itself is recorded in config.json, each trial's
trajectory and record.
"""

from __future__ import annotations

# The protocol in four parts, each its own module; this one names them all, as before.
from .argument_bounds import (
    CALL_FRAME_TOKENS,
    argument_chars,
    at_bound,
    bound_note,
    bounded,
    path_chars,
)
from .call_schema import call_schema, property_order, schema_calls
from .path_pattern import PATH_CHARS, path_pattern
from .tool_modes import (
    CONSTRAINED,
    CONSTRAINED_MAX_TOKENS_PARAM,
    NATIVE,
    REPLY_SHAPE_KEY,
    TEXT,
    TOOL_MODE_PARAM,
    TOOL_MODES,
    constrained_max_tokens,
    decoded_under_schema,
    tool_mode,
)

__all__ = [
    "CALL_FRAME_TOKENS",
    "CONSTRAINED",
    "CONSTRAINED_MAX_TOKENS_PARAM",
    "NATIVE",
    "PATH_CHARS",
    "REPLY_SHAPE_KEY",
    "TEXT",
    "TOOL_MODES",
    "TOOL_MODE_PARAM",
    "argument_chars",
    "at_bound",
    "bound_note",
    "bounded",
    "call_schema",
    "constrained_max_tokens",
    "decoded_under_schema",
    "path_chars",
    "path_pattern",
    "property_order",
    "schema_calls",
    "tool_mode",
]
