"""The context budget of a trial: small windows, long statutes.

The loop knows the model's context window (``context_length``: ``n_ctx`` for a
``local:`` model, else ``--param context_tokens`` or the registry's; none known, no
budget).  Before each turn ``fit`` estimates the conversation's tokens as characters / 4
(no tokenizer is at hand for every backend, so the estimate is the same for all) plus a
reserve for the reply; when that would overflow the window it replaces the oldest tool
observations by a one-line stub saying what was elided and how to get it back, never the
system prompt, the instruction or the latest turn.  It elides down to half the window at
once: elision rewrites history, which defeats the provider's prompt caching from that
turn on, so it should happen rarely and in large steps.  A conversation that does not fit
even then ends the trial (stop reason ``context``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..models.registry import ModelSettings
from ..vocabulary.chat import Message, ToolCall

__all__ = [
    "CHARS_PER_TOKEN",
    "Elidable",
    "call_summary",
    "context_length",
    "estimate_tokens",
    "fit",
    "reply_reserve",
    "stub",
]

CHARS_PER_TOKEN = 4
"""The estimate of tokens from characters: no tokenizer is used (see the docstring)."""
MESSAGE_OVERHEAD = 4
"""Tokens a chat template adds around each message (role markers), roughly."""


def context_length(model: Any) -> int | None:
    """The context window of ``model`` in tokens, or None when nothing says it."""
    n_ctx = getattr(model, "n_ctx", None)
    if isinstance(n_ctx, int) and n_ctx > 0:
        return n_ctx
    settings = getattr(model, "settings", None)
    if isinstance(settings, ModelSettings):
        value = settings.option("context_tokens", None)
        return int(value) if value else None
    return None


def reply_reserve(window: int) -> int:
    """Tokens kept free for the model's reply: an eighth of the window."""
    return window // 8


def estimate_tokens(messages: Sequence[Message]) -> int:
    """Characters / 4 over contents and calls, plus a little per message."""
    chars = 0
    for message in messages:
        chars += len(message.content)
        for call in message.tool_calls:
            chars += len(call.name) + len(call.raw_arguments or str(call.arguments))
    return chars // CHARS_PER_TOKEN + MESSAGE_OVERHEAD * len(messages)


def call_summary(call: ToolCall) -> str:
    """A call in a few words: ``read_file statute.txt offset=401``."""
    arguments = dict(call.arguments)
    path = arguments.pop("path", None)
    parts = [call.name, *([str(path)] if path is not None else [])]
    parts += [f"{k}={str(v)[:40]}" for k, v in sorted(arguments.items()) if k != "content"]
    return " ".join(parts)


def stub(calls: Sequence[ToolCall]) -> str:
    """The line that stands for elided observations, and how to get them back."""
    said = "; ".join(call_summary(c) for c in calls)
    names = ", ".join(dict.fromkeys(c.name for c in calls))
    return f"[elided to fit the context window: the result of {said}; call {names} again to see it]"


@dataclass(frozen=True)
class Elidable:
    """A message holding tool observations that may be elided: its place in the
    conversation, the turn whose calls it answers, and those calls."""

    index: int
    turn: int
    calls: tuple[ToolCall, ...]


def fit(
    messages: tuple[Message, ...], elidable: Sequence[Elidable], window: int
) -> tuple[tuple[Message, ...], list[dict[str, Any]]] | None:
    """The conversation to send within ``window`` tokens, and what was elided (for the
    trajectory), or None when it cannot fit even with every older observation elided."""
    budget = window - reply_reserve(window)
    if estimate_tokens(messages) <= budget:
        return messages, []
    latest = max((e.turn for e in elidable), default=-1)
    target = window // 2
    out = list(messages)
    elided: list[dict[str, Any]] = []
    for entry in sorted(elidable, key=lambda e: e.index):
        if entry.turn == latest or estimate_tokens(out) <= target:
            continue
        old = out[entry.index]
        line = stub(entry.calls)
        if old.content == line:
            continue
        out[entry.index] = Message(
            role=old.role, content=line, tool_call_id=old.tool_call_id, name=old.name,
            is_error=old.is_error,
        )  # fmt: skip
        elided.append({"turn": entry.turn, "chars": len(old.content), "stub": line})
    if estimate_tokens(out) > budget:
        return None
    return tuple(out), elided
