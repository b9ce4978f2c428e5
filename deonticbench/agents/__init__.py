"""Stage 6b, agents: agentic trials, between the backends and the runner.

An agentic mode (``agent-direct``, ``agent-zero-shot``, ``agent-few-shot``) gives a model
a workspace of files (``workspace``: the statutes, the case, few-shot examples) and tools
to read them, write and run Prolog in the sandbox, and repair in a loop; when the trial
ends, the harness judges what it left (``judge``) exactly as it judges a prompted answer.
Hands the runner a judged attempt, the trial's facts (``AgentInfo``) and its trajectory.
"""

from __future__ import annotations

from .judge import MAX_JUDGED_BYTES, Judgement, ajudge_workspace, judge_workspace, read_left_file
from .workspace import (
    ANSWER_FILE,
    CASE_FILE,
    EXAMPLES_DIR,
    OBSERVATION_CHARS,
    OUTPUT_DIR,
    SOLUTION_FILE,
    STATUTE_FILE,
    TOOL_SETS,
    Workspace,
    answer_line,
    build_workspace,
    case_text,
    instruction_hash,
    instruction_text,
)

__all__ = [
    "ANSWER_FILE",
    "CASE_FILE",
    "EXAMPLES_DIR",
    "MAX_JUDGED_BYTES",
    "OBSERVATION_CHARS",
    "OUTPUT_DIR",
    "SOLUTION_FILE",
    "STATUTE_FILE",
    "TOOL_SETS",
    "Judgement",
    "Workspace",
    "ajudge_workspace",
    "answer_line",
    "build_workspace",
    "case_text",
    "instruction_hash",
    "instruction_text",
    "judge_workspace",
    "read_left_file",
]
