"""The text tool mode: tool calling for models and servers without it (docs/agents.md).

The instruction gains a section (``prompts/agent/text-protocol.txt``) listing the tools;
the model calls one by ending its reply with a fenced block::

    ```tool
    {"name": "read_file", "arguments": {"path": "case.txt"}}
    ```

and the result comes back as the next user message (``prompts/agent/text-result.txt``).
A block that is not such a JSON object is a malformed call, answered with an error.  Any
backend works this way with ``--param tool_mode=text``.

Under the constrained tool mode (``models.constrained``) the conversation has the same
form, but the section (``prompts/agent/constrained-protocol.txt``, with a worked course of
calls for the tool set and mode) asks for one JSON object per reply, and the backend
decodes the reply under the call schema and hands back the call itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from ..models.tool_calls import call_from_json
from ..prompting.templates import fill, prompts_root, read_template
from ..vocabulary.chat import Message, ToolCall, ToolSpec
from ..vocabulary.modes import Mode, prompted_counterpart
from .workspace import AGENT_PROMPTS

PROTOCOL_FILE = f"{AGENT_PROMPTS}/text-protocol.txt"
RESULT_FILE = f"{AGENT_PROMPTS}/text-result.txt"
_BLOCK = re.compile(r"```tool[ \t]*\n(.*?)```", re.DOTALL)


def describe_tools(specs: Sequence[ToolSpec]) -> str:
    """One line per tool: its name, its arguments with their types, what it does."""
    lines = []
    for spec in specs:
        properties = spec.parameters.get("properties", {})
        required = set(spec.parameters.get("required", []))
        args = ", ".join(
            f"{name}: {prop['type']}" + ("" if name in required else " (optional)")
            for name, prop in properties.items()
        )
        lines.append(f"- {spec.name}({args}): {spec.description}")
    return "\n".join(lines)


def protocol_section(specs: Sequence[ToolSpec], *, prompts_dir: Path | None = None) -> str:
    root = prompts_root(prompts_dir)
    return fill(
        read_template(root, PROTOCOL_FILE),
        {"tool_list": describe_tools(specs)},
        name=str(root / PROTOCOL_FILE),
    )


CONSTRAINED_FILE = f"{AGENT_PROMPTS}/constrained-protocol.txt"


def course_file(tool_set: str, mode: Mode) -> str:
    """The constrained section's worked course of calls for the tool set and mode (a
    direct mode ends with an answer, a program mode with a run of solution.pl)."""
    direct = "-direct" if prompted_counterpart(mode) == "direct" else ""
    return f"{AGENT_PROMPTS}/constrained-course-{tool_set}{direct}.txt"


def constrained_section(
    specs: Sequence[ToolSpec], tool_set: str, mode: Mode, *, prompts_dir: Path | None = None
) -> str:
    """The instruction's section under the constrained tool mode (``models.constrained``):
    every reply is one call, as one JSON object; a typical course of calls; the tools.
    The backend decodes the reply under the call schema, so no fence is asked for."""
    root = prompts_root(prompts_dir)
    return fill(
        read_template(root, CONSTRAINED_FILE),
        {
            "course": read_template(root, course_file(tool_set, mode)).strip(),
            "tool_list": describe_tools(specs),
        },
        name=str(root / CONSTRAINED_FILE),
    )


def parse_text_calls(text: str, *, turn: int) -> tuple[ToolCall, ...]:
    """The calls of a reply in the text tool mode (ids ``t<turn>_<n>``)."""
    return tuple(
        call_from_json(match.group(1), f"t{turn}_{index}")
        for index, match in enumerate(_BLOCK.finditer(text or ""))
    )


def text_call(name: str, arguments: dict[str, object]) -> str:
    """A call written in the text tool mode (what a scripted text-tool-mode agent sends)."""
    body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"```tool\n{body}\n```"


def result_message(
    results: Sequence[tuple[ToolCall, str]], *, prompts_dir: Path | None = None
) -> Message:
    """The user message that answers a text-protocol turn's calls."""
    root = prompts_root(prompts_dir)
    template = read_template(root, RESULT_FILE)
    parts = [
        fill(template, {"name": call.name, "output": text}, name=str(root / RESULT_FILE))
        for call, text in results
    ]
    return Message(role="user", content="\n\n".join(parts))
