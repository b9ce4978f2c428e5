"""Agents: agentic trials, between the backends and the runner.

An agentic mode (``agent-direct``, ``agent-zero-shot``, ``agent-few-shot``) gives a model
a workspace of files (the statutes, the case, few-shot examples) and tools to read them,
write and run Prolog in the sandbox, and repair in a loop; when the trial ends, the
harness judges what it left exactly as it judges a prompted answer.  Hands the runner a
judged attempt, the trial's facts (``AgentInfo``) and its trajectory; inspect's agent and
Harbor's import use the same rules for theirs.

One module per rule:

* ``workspace``: the trial's folder of files and its instruction (``prompts/agent/``);
* ``judge``: judging what a trial left in its workspace;
* ``dar_judge``: under ``--protocol dar``, DAR's verifier on the same final state, and the
  harness's reading of DAR's ``Answer:`` line;
* ``tool_table``: the one table of tools, each an entry with its JSON schema and handler,
  checked with ``jsonschema``; the handlers in ``file_tools`` and ``shell_tool``, their
  shared state and observations in ``tool_base``, a turn's calls run by ``tools``
  (``ToolBox``, ``execute_calls``);
* ``tool_mode``: the text tool mode for models without native tool calls;
* ``conversation``: how a trial's conversation starts and how its turns are cached;
* ``stops``: when a trial stops (its budgets are ``AgentOptions``);
* ``guards``: the guard rails every agent meets (a submit with nothing to judge, the same
  call repeated, a reply cut off by the output limit);
* ``context``: the context budget of a small window (the oldest observations elided);
* ``trial_record``: what a finished trial becomes (the judged attempt, ``AgentInfo``,
  the trajectory);
* ``loop``: one trial, from the workspace to the judged result (``run_trial``);
* ``scripted``: agents that replay a reference or a recorded trajectory, with no model.

Harbor's shipped verifier imports this package in a bare interpreter without
third-party packages, so only ``workspace`` and ``judge`` are imported here; every other
name is loaded on first use (the tool table needs ``jsonschema``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .judge import Judgement, ajudge_workspace, judge_workspace
from .workspace import ANSWER_FILE, SOLUTION_FILE, build_workspace, instruction_text

if TYPE_CHECKING:
    from .context import Elidable, context_length, fit
    from .conversation import conversation_hash, decode_turn, encode_turn, opening_messages
    from .guards import TRUNCATED, RepeatGuard, refusal_rule, repeat_note
    from .loop import TrialSetup, first_messages, offered_tools, run_trial
    from .scripted import as_agent
    from .stops import budget_stop, stop_reason
    from .tool_base import MAX_CALLS_PER_TURN, TOO_MANY_CALLS, Execute
    from .tool_table import SUBMIT, Tool, tool_specs, tools_of
    from .tools import ToolBox
    from .trial_record import (
        agent_info,
        count_tool_calls,
        finish_trial_trajectory,
        new_trial_trajectory,
        ran_written_program,
        session_id,
        trial_attempt,
        trial_ended,
        turn_kind,
    )

_HOME = {
    "Elidable": "context",
    "RepeatGuard": "guards",
    "TRUNCATED": "guards",
    "TOO_MANY_CALLS": "tool_base",
    "MAX_CALLS_PER_TURN": "tool_base",
    "fit": "context",
    "ran_written_program": "trial_record",
    "refusal_rule": "guards",
    "repeat_note": "guards",
    "turn_kind": "trial_record",
    "Execute": "tool_base",
    "SUBMIT": "tool_table",
    "Tool": "tool_table",
    "ToolBox": "tools",
    "TrialSetup": "loop",
    "agent_info": "trial_record",
    "as_agent": "scripted",
    "budget_stop": "stops",
    "conversation_hash": "conversation",
    "count_tool_calls": "trial_record",
    "decode_turn": "conversation",
    "encode_turn": "conversation",
    "finish_trial_trajectory": "trial_record",
    "first_messages": "loop",
    "offered_tools": "loop",
    "trial_attempt": "trial_record",
    "new_trial_trajectory": "trial_record",
    "opening_messages": "conversation",
    "run_trial": "loop",
    "session_id": "trial_record",
    "stop_reason": "stops",
    "tool_specs": "tool_table",
    "tools_of": "tool_table",
    "context_length": "context",
    "trial_ended": "trial_record",
}
"""Each lazily offered name's module, imported on first use (see the docstring)."""

__all__ = [
    "ANSWER_FILE",
    "MAX_CALLS_PER_TURN",
    "SOLUTION_FILE",
    "SUBMIT",
    "TOO_MANY_CALLS",
    "TRUNCATED",
    "Elidable",
    "Execute",
    "Judgement",
    "RepeatGuard",
    "Tool",
    "ToolBox",
    "TrialSetup",
    "agent_info",
    "ajudge_workspace",
    "as_agent",
    "budget_stop",
    "build_workspace",
    "context_length",
    "conversation_hash",
    "count_tool_calls",
    "decode_turn",
    "encode_turn",
    "finish_trial_trajectory",
    "first_messages",
    "fit",
    "instruction_text",
    "judge_workspace",
    "new_trial_trajectory",
    "offered_tools",
    "opening_messages",
    "ran_written_program",
    "refusal_rule",
    "repeat_note",
    "run_trial",
    "session_id",
    "stop_reason",
    "tool_specs",
    "tools_of",
    "trial_attempt",
    "trial_ended",
    "turn_kind",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value
