"""A trial's conversation: how it starts, and how a turn is keyed and cached.

``opening_messages`` is the conversation every trial starts with, from plain facts (the
case, the mode, the tool set, whether the tools are offered natively): the harness's
loop, the dry run and inspect's agent all start from it.  ``conversation_hash`` keys an
agentic turn in the response cache; ``encode_turn``/``decode_turn`` are how a reply is
stored there.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..data.cases import Case
from ..models.base import Completion
from ..prompting.templates import SYSTEM_FILE, prompts_root, read_template
from ..solver import DEFAULT_TIMEOUT_S as DEFAULT_PROLOG_TIMEOUT_S
from ..vocabulary.chat import Message, ToolCall, ToolSpec
from ..vocabulary.modes import Mode
from .tool_mode import constrained_section, protocol_section
from .tool_table import tool_specs
from .workspace import dar_instruction_text, instruction_text

if TYPE_CHECKING:
    from ..prompting.dar_task import DarTask


def opening_messages(
    case: Case,
    mode: Mode,
    tool_set: str,
    *,
    native: bool,
    constrained: bool = False,
    tool_timeout_s: float = DEFAULT_PROLOG_TIMEOUT_S,
    prompts_dir: Path | None = None,
    dar: DarTask | None = None,
) -> tuple[Message, ...]:
    """The paper's system message and the instruction, with a section listing the tool
    set's tools when they are not offered natively: the constrained tool mode's when each
    reply is decoded as one call (``constrained``), else the text tool mode's.
    ``tool_timeout_s`` is the time limit of one tool run the instruction states.  Under
    the dar protocol (``dar``: the case's DAR task) the instruction is DAR's
    (``workspace.dar_instruction_text``)."""
    root = prompts_root(prompts_dir)
    if dar is not None:
        instruction = dar_instruction_text(
            dar, tool_set, timeout_s=tool_timeout_s, prompts_dir=root
        )
    else:
        instruction = instruction_text(
            case, mode, tool_set, prompts_dir=root, timeout_s=tool_timeout_s
        )
    specs = tool_specs(tool_set)
    if not native and constrained:
        instruction += "\n\n" + constrained_section(specs, tool_set, mode, prompts_dir=root)
    elif not native:
        instruction += "\n\n" + protocol_section(specs, prompts_dir=root)
    return (
        Message(role="system", content=read_template(root, SYSTEM_FILE)),
        Message(role="user", content=instruction),
    )


def conversation_hash(
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    shape: Mapping[str, Any] | None = None,
    *,
    case: str | None = None,
) -> str:
    """sha256 over everything a turn sends: every message (with its tool calls and ids),
    the tools offered, and the request fields that shape the reply (``shape``: the
    backend's ``reply_shape``, e.g. the constrained tool mode's schema, so a constrained
    turn is never served a reply drawn without it), and the trial's ``case``
    (``<domain>/<case id>``): an agent's opening names no case (it reads case.txt), so
    the trials of different cases send the same first turns, and each must draw its own
    reply, not be served another case's.  The response cache keys an agentic turn on it."""
    payload: dict[str, Any] = {
        "messages": [
            [
                m.role,
                m.content,
                [c.to_json() for c in m.tool_calls],
                m.tool_call_id,
                m.name,
                m.is_error,
            ]
            for m in messages
        ],
        "tools": [t.to_openai() for t in tools],
    }
    if shape:
        # Only when there is one: a native or text turn keeps the key it always had.
        payload["shape"] = dict(shape)
    if case is not None:
        payload["case"] = case
    canonical = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", errors="surrogatepass")).hexdigest()


def encode_turn(completion: Completion) -> str:
    """A reply as the response cache stores it: text and tool calls in one JSON string."""
    return json.dumps(
        {"text": completion.text, "tool_calls": [c.to_json() for c in completion.tool_calls]},
        ensure_ascii=False,
    )


def decode_turn(stored: str) -> tuple[str, tuple[ToolCall, ...]]:
    obj = json.loads(stored)
    return str(obj.get("text") or ""), tuple(ToolCall.from_json(c) for c in obj["tool_calls"])
