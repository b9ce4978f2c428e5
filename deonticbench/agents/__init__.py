"""Stage 6b, agents: agentic trials, between the backends and the runner.

An agentic mode (``agent-direct``, ``agent-zero-shot``, ``agent-few-shot``) gives a model
a workspace of files (``workspace``: the statutes, the case, few-shot examples) and tools
to read them, write and run Prolog in the sandbox, and repair in a loop; when the trial
ends, the harness judges what it left (``judge``) exactly as it judges a prompted answer.
Hands the runner a judged attempt, the trial's facts (``AgentInfo``) and its trajectory.

One module per rule: the loop (``loop``), when it stops (``stops``), how a conversation
starts and is cached (``conversation``), the one tool table (``tool_table``) with its
handlers (``file_tools``, ``shell_tool``), their shared state (``tool_base``) and
dispatch (``tools``), the text protocol (``protocol``), and what a finished trial becomes
(``trial_record``: the judged attempt, ``AgentInfo``, the trajectory), which inspect's
agent and Harbor's import use too.  This ``__init__`` imports only what Harbor's
verifier may load under a bare interpreter (no ``jsonschema``): the workspace and judge.
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
