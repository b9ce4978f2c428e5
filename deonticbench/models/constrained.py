"""The constrained tool protocol: each agent turn decoded as exactly one tool call.

Small and open models often cannot write a well-formed tool call on their own: a reply
of prose ends the trial before any program is written (issue 28).  Under the
constrained protocol (``--param tool_protocol=constrained``, the default for ``local:``)
the backend makes a call the only thing the model can emit:

* engines that decode under a JSON schema (``local:`` through llama.cpp's own
  schema-to-grammar conversion, ``vllm:`` through its structured outputs,
  ``openai-compatible:`` servers through the structured-output field they take,
  ``openai_backend.CONSTRAINED_FIELDS``) decode the reply under
  ``call_schema(tools)``: one object ``{"name": <an offered tool>, "arguments": {...}}``
  with the arguments valid for that tool.  The conversation is the text protocol's
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

import functools
import string
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


CALL_FRAME_TOKENS = 64
"""Output tokens kept for a call's frame around its arguments: the tool's name, the
arguments' keys, and the quotes and braces that close them."""
_FIRST = string.ascii_letters + string.digits + "_-"
_REST = _FIRST + "."
_SEGMENT_TAIL = 30
_SEGMENTS = 4
PATH_CHARS = _SEGMENTS * (_SEGMENT_TAIL + 1) + _SEGMENTS - 1
"""The bound on a ``path`` argument (at most a quarter of a call's, and the most a
``path_pattern`` admits): a path of the workspace needs no more, and the rest is left
to the free text beside it."""


def argument_chars(max_tokens: int | None) -> int | None:
    """The characters the string arguments of one schema-decoded call may have between
    them: what fits in a turn of ``max_tokens`` output tokens at one token per character
    (a run of digits, commas and spaces is that dense) after ``CALL_FRAME_TOKENS``; None
    without a limit.  Real programs run at two to three characters per token, so one cut
    by this bound would have come near the limit anyway; raise the limit for longer ones
    (``constrained_max_tokens``)."""
    if max_tokens is None:
        return None
    return max(max_tokens - CALL_FRAME_TOKENS, 16)


def path_chars(chars: int) -> int:
    """The bound on a ``path`` argument in a call of ``chars`` characters: ``PATH_CHARS``
    (the most ``path_pattern`` admits), at most a quarter of the call."""
    return min(PATH_CHARS, chars // 4)


def bounded(tools: Sequence[ToolSpec], chars: int | None) -> tuple[ToolSpec, ...]:
    """``tools`` with each string argument given a ``maxLength`` so that the arguments
    of any one call have at most ``chars`` characters between them: a ``path`` gets
    ``path_chars`` (or less, if it came with less: a path pattern's own ``PATH_CHARS``
    never overrides the call's budget), another string with a bound keeps it, and the
    other strings of the tool share the rest.  Unchanged when ``chars`` is None."""
    if chars is None:
        return tuple(tools)
    out = []
    for tool in tools:
        properties = tool.parameters.get("properties", {})
        strings = [k for k, v in properties.items() if v.get("type") == "string"]
        given = {k: properties[k]["maxLength"] for k in strings if "maxLength" in properties[k]}
        if "path" in strings:
            given["path"] = min(given.get("path", PATH_CHARS), path_chars(chars))
        free = [k for k in strings if k not in given]
        rest = max((chars - sum(given.values())) // max(len(free), 1), 1)
        out.append(tool.narrowed({key: {"maxLength": given.get(key, rest)} for key in strings}))
    return tuple(out)


@functools.cache
def path_pattern(excluded_files: tuple[str, ...] = (), excluded_dirs: tuple[str, ...] = ()) -> str:
    """A JSON-schema ``pattern`` (anchored, as llama.cpp's converter needs) for a
    workspace path in canonical form, so that one file has one spelling: up to four
    segments joined by "/", each a letter, digit, "_" or "-" then up to 30 of those or
    "." (no leading "/", no "." or ".." segment, no empty one), none of
    ``excluded_files`` (single names) and nothing in ``excluded_dirs`` or the folder
    itself.  Regular expressions have no "not", so the exclusions are spelled out as a
    trie of the names: each step either follows a name or leaves it for good."""
    if any("/" in name for name in (*excluded_files, *excluded_dirs)):
        raise ValueError("path_pattern excludes single names, not paths with '/'")
    any_segment = f"{_klass(_FIRST)}{_klass(_REST)}{{0,{_SEGMENT_TAIL}}}"
    alone = _segment_except([*excluded_files, *excluded_dirs])
    first = _segment_except(list(excluded_dirs))
    more = f"(/{any_segment}){{1,{_SEGMENTS - 1}}}"
    return f"^({alone}|{first}{more})$"


def _segment_except(words: Sequence[str]) -> str:
    """A regular expression for one path segment other than each of ``words``."""

    def node(prefix: str) -> str:
        depth = len(prefix)
        alphabet = _FIRST if depth == 0 else _REST
        children = sorted({w[depth] for w in words if w.startswith(prefix) and len(w) > depth})
        branches = [_klass([c]) if c == "." else c for c in children]
        branches = [b + node(prefix + c) for b, c in zip(branches, children, strict=True)]
        others = [c for c in alphabet if c not in children]
        left = _SEGMENT_TAIL - depth  # characters the segment may still have after this one
        if others and left >= 0:
            branches.append(_klass(others) + (f"{_klass(_REST)}{{0,{left}}}" if left else ""))
        if not branches:
            return ""
        group = f"({'|'.join(branches)})"
        # A segment may end once it has left the names, or short of one of them.
        return group if depth == 0 or prefix in words else group + "?"

    return node("")


def _klass(chars: Sequence[str]) -> str:
    """A character class of exactly ``chars`` (letters, digits, "_", "-", "."), written
    so that Python's ``re`` and llama.cpp's grammar read it alike: no escapes (the
    grammar knows few), "-" first, "." as itself, runs of letters or digits as ranges."""
    runs: list[list[str]] = []
    for char in sorted(set(chars) - {"-"}):
        last = runs[-1][1] if runs else None
        if last is not None and ord(char) == ord(last) + 1 and char.isalnum() and last.isalnum():
            runs[-1][1] = char
        else:
            runs.append([char, char])
    parts = [a if a == b else f"{a}-{b}" for a, b in runs]
    return "[" + ("-" if "-" in chars else "") + "".join(parts) + "]"


def at_bound(call: ToolCall, tools: Sequence[ToolSpec]) -> dict[str, int]:
    """The string arguments of ``call`` that reached their ``maxLength`` in ``tools``
    (the decoder had to close them there, so they may be cut short), with that bound."""
    spec = next((t for t in tools if t.name == call.name), None)
    if spec is None or call.error is not None:
        return {}
    properties = spec.parameters.get("properties", {})
    reached = {}
    for key, value in call.arguments.items():
        bound = properties.get(key, {}).get("maxLength")
        if isinstance(value, str) and isinstance(bound, int) and len(value) >= bound:
            reached[key] = bound
    return reached


def bound_note(reached: Mapping[str, int]) -> str:
    """What the model is told when arguments of its call reached their bounds."""
    which = ", ".join(
        f"{key} reached its limit of {bound} characters" for key, bound in reached.items()
    )
    return (
        f"note: {which} in one call and may be cut short there; keep files shorter "
        f"(or raise {CONSTRAINED_MAX_TOKENS_PARAM})"
    )


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
