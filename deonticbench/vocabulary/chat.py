"""A chat message: the unit a prompt is made of and a backend receives.

Prompted modes use ``system``, ``user`` and ``assistant`` messages of plain text.  An
agentic trial adds tool calling: an assistant message may carry ``tool_calls``, and each
call is answered by a ``tool`` message naming its ``tool_call_id``; the tools a model
may call are described by ``ToolSpec`` (a name, a description, a JSON-schema object).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    """One call a model asked for."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    error: str | None = None
    """Why the call could not be read (arguments that are not a JSON object): the call is
    answered with this error instead of being run."""
    raw_arguments: str | None = None
    """With ``error``: the arguments as the model sent them, kept so that the trajectory
    holds what was sent and a replay answers the call as the trial did."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": dict(self.arguments)}
        if self.error is not None:
            out["error"] = self.error
        if self.raw_arguments is not None:
            out["raw_arguments"] = self.raw_arguments
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ToolCall:
        return cls(
            id=str(obj["id"]),
            name=str(obj["name"]),
            arguments=dict(obj.get("arguments") or {}),
            error=obj.get("error"),
            raw_arguments=obj.get("raw_arguments"),
        )


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model is told about it."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    """A JSON schema of type object: the arguments."""

    def narrowed(
        self, arguments: Mapping[str, Mapping[str, Any]], *, required: Sequence[str] | None = None
    ) -> ToolSpec:
        """This tool with some arguments' schemas extended by ``arguments`` (argument name
        -> the keywords to add or replace, e.g. ``{"path": {"maxLength": 127}}``), and its
        ``required`` list replaced when given.  The constrained tool mode narrows a tool
        this way for one turn."""
        properties = dict(self.parameters.get("properties", {}))
        for name, keywords in arguments.items():
            properties[name] = {**properties.get(name, {}), **keywords}
        parameters = {**self.parameters, "properties": properties}
        if required is not None:
            parameters["required"] = list(required)
        return ToolSpec(self.name, self.description, parameters)

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI chat-completions form (also vLLM's and ATIF's ``tool_definitions``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


@dataclass(frozen=True)
class Message:
    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    """An assistant message's tool calls (agentic trials only)."""
    tool_call_id: str | None = None
    """A tool message: the call it answers."""
    name: str | None = None
    """A tool message: the tool's name."""
    is_error: bool = False
    """A tool message: the call failed (unknown tool, bad arguments, refused)."""
