"""How long the string arguments of one schema-decoded call may be, so that the call fits
in its turn (``bounded``: a file's ``content`` and its ``path`` share the turn's
characters, the path at most ``path_chars``), and what the model is told when an
argument reached its bound (``at_bound``, ``bound_note``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..vocabulary.chat import ToolCall, ToolSpec
from .path_pattern import PATH_CHARS
from .tool_modes import CONSTRAINED_MAX_TOKENS_PARAM

CALL_FRAME_TOKENS = 64
"""Output tokens kept for a call's frame around its arguments: the tool's name, the
arguments' keys, and the quotes and braces that close them."""


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
