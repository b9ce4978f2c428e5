"""The one table of the agents' tools, and the tool sets that choose from it.

Each tool is one ``Tool`` entry: its name, what the model is told it does, the JSON
Schema of its arguments and its handler.  Everything else is made from the table: the
native tool specs (``tool_specs``), the text tool mode's tool list (``tool_mode``), the
dispatch (``tools.ToolBox.call``), inspect's tools (``integrations/inspect/agent.py``)
and the argument check (``check_arguments``: one JSON Schema validation by
``jsonschema``, its first error turned into the sentence the agent sees).

Tool sets (docs/agents.md):

* ``prolog``: ``list_files``, ``read_file(path, offset, limit)``, ``search(pattern,
  path)``, ``write_file(path, content)``, ``run_prolog(path)``, ``submit(answer)``.
* ``shell``: ``bash(command)``.
* ``terminal``: none of ours; Harbor's agents bring their own terminal (the instruction
  of an exported task says only that there is one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator, ValidationError
from jsonschema.validators import extend

from ..vocabulary.chat import ToolSpec
from . import file_tools, shell_tool
from .tool_base import Observation, ToolError, ToolState

Handler = Callable[[ToolState, dict[str, Any]], Awaitable[Observation]]
"""(the trial's tool state, the checked arguments) -> the observation."""
SUBMIT = "submit"


@dataclass(frozen=True)
class Tool:
    """One tool: what the model is told (name, description, argument schema) and what runs."""

    name: str
    description: str
    parameters: dict[str, Any]
    """The JSON Schema of the arguments (an object schema; no other argument allowed)."""
    handler: Handler

    @property
    def spec(self) -> ToolSpec:
        """The tool as offered natively (``Request.tools``) and listed in a trajectory."""
        return ToolSpec(self.name, self.description, self.parameters)


def _tool(
    name: str,
    description: str,
    properties: dict[str, Any],
    required: list[str],
    handler: Handler,
) -> Tool:
    schema = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return Tool(name, description, schema, handler)


_PATH = {"type": "string", "description": "A path relative to the workspace."}
_ENTRIES = (
    _tool(
        "list_files",
        "List every file in the workspace with its size in bytes.",
        {},
        [],
        file_tools.list_files,
    ),
    _tool(
        "read_file",
        "Read a text file of the workspace, by lines.",
        {
            "path": _PATH,
            "offset": {"type": "integer", "description": "First line to show, from 1."},
            "limit": {"type": "integer", "description": "How many lines to show (400)."},
        },
        ["path"],
        file_tools.read_file,
    ),
    _tool(
        "search",
        "Find the lines matching a regular expression (grep -E) in a file or folder.",
        {
            "pattern": {"type": "string", "description": "An extended regular expression."},
            "path": {"type": "string", "description": "File or folder; the workspace if absent."},
        },
        ["pattern"],
        file_tools.search,
    ),
    _tool(
        "write_file",
        "Create or replace a text file of the workspace (folders are created).",
        {"path": _PATH, "content": {"type": "string", "description": "The whole file."}},
        ["path", "content"],
        file_tools.write_file,
    ),
    _tool(
        "run_prolog",
        "Run a Prolog file with swipl in the sandbox; shows its status, stdout and stderr.",
        {"path": _PATH},
        ["path"],
        file_tools.run_prolog,
    ),
    _tool(
        SUBMIT,
        "End the work. In direct mode, the answer may be given here instead of a file.",
        {"answer": {"type": "string", "description": "The answer (direct mode only)."}},
        [],
        file_tools.submit,
    ),
    _tool(
        "bash",
        "Run one shell command in the workspace; shows its exit status and output.",
        {"command": {"type": "string", "description": "The command, run by bash -c."}},
        ["command"],
        shell_tool.bash,
    ),
)
TOOLS: dict[str, Tool] = {tool.name: tool for tool in _ENTRIES}
"""Every tool, by name: the one table."""
TOOL_SETS: dict[str, tuple[str, ...]] = {
    "prolog": ("list_files", "read_file", "search", "write_file", "run_prolog", SUBMIT),
    "shell": ("bash",),
    "terminal": (),
}
"""The tool sets, each a choice of table entries in the order they are offered.  The
harness's own (``--agent-tools``) are ``store.spec.AGENT_TOOL_SETS``; ``terminal`` is
Harbor's (no tool of ours)."""


def tools_of(tool_set: str) -> tuple[Tool, ...]:
    """The entries of a tool set, read from the table when asked (so a tool added to the
    table and its set is offered, listed and dispatched at once)."""
    if tool_set not in TOOL_SETS:
        raise ValueError(f"unknown tool set {tool_set!r}; choose from {', '.join(TOOL_SETS)}")
    return tuple(TOOLS[name] for name in TOOL_SETS[tool_set])


def tool_specs(tool_set: str) -> tuple[ToolSpec, ...]:
    """The native tool specs of a tool set (and the trajectory's ``tool_definitions``)."""
    return tuple(tool.spec for tool in tools_of(tool_set))


# The tools' handlers need Python ints where the schema says "integer": JSON Schema would
# also take 1.0, and a bool is never a count.
_TYPES = Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
)
_Validator = extend(Draft202012Validator, type_checker=_TYPES)


def _sentence(tool: Tool, error: ValidationError, arguments: Mapping[str, Any]) -> str:
    """One of jsonschema's errors as the one sentence the agent is shown."""
    properties: Mapping[str, Any] = tool.parameters.get("properties", {})
    if error.validator == "required" and not error.absolute_path:
        missing = [n for n in tool.parameters.get("required", []) if n not in arguments]
        return f"{tool.name} needs the argument(s) {', '.join(missing)}"
    if error.validator == "additionalProperties" and not error.absolute_path:
        unknown = [n for n in arguments if n not in properties]
        return f"{tool.name} takes no argument(s) {', '.join(unknown)}"
    if error.validator == "type" and len(error.absolute_path) == 1:
        name = str(error.absolute_path[0])
        value = arguments[name]
        return f"{tool.name}: {name} must be a {error.validator_value}, not {type(value).__name__}"
    where = "/".join(str(p) for p in error.absolute_path) or "its arguments"
    return f"{tool.name}: {where}: {error.message}"


def check_arguments(tool: Tool, arguments: Mapping[str, Any]) -> None:
    """The arguments against the tool's JSON Schema; the first error (in the order the
    schema lists required, unknown, then mistyped arguments) is raised as a ToolError."""
    errors = list(_Validator(tool.parameters).iter_errors(dict(arguments)))
    if errors:
        order = ("required", "additionalProperties", "type")
        errors.sort(key=lambda e: order.index(e.validator) if e.validator in order else 3)
        raise ToolError(_sentence(tool, errors[0], arguments))
