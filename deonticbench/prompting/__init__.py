"""Prompting, after data and before the models: a case becomes chat messages.

The modes, the agentic modes and the two diagnostic settings (``modes``), chat messages
and tool calls (``chat``), the templates under ``prompts/`` and their hashes
(``templates``), rendering a case and the retry prompt (``render``), the leak-free few-shot
exemplars, seeded or retrieved by BM25 (``exemplars``), distractor statutes
(``distractors``) and the plan of a run (``plan``: every domain x case x mode with its
exemplars).  Hands a ``Prompt`` (messages, template hash, prompt hash) to a model.
"""

from __future__ import annotations

from .chat import Message, Role, ToolCall, ToolSpec
from .distractors import statute_sections
from .exemplars import choose_exemplars, excluded_ids, exemplar_pool, problem_key
from .modes import (
    ALL_MODES,
    DIRECT_MODES,
    MODE_TITLES,
    MODES,
    SETTINGS,
    TABLE_MODE_ORDER,
    VERBAL_MODE,
    Mode,
    is_agentic,
    mode_rank,
    parse_modes,
    prompted_counterpart,
    writes_program,
)
from .plan import EXEMPLAR_CHOICES, ExemplarChoice, RunPlan, Unit, plan_run
from .render import (
    FEEDBACK_OUTPUT_LIMIT,
    FEEDBACK_STDERR_CHARS,
    FEEDBACK_STDOUT_CHARS,
    NO_PROGRAM_REPORT,
    Prompt,
    demonstration,
    prompt_hash,
    render,
    render_feedback,
    solver_report,
    stable_paths,
)
from .templates import (
    AGENT_DIR,
    EXCLUDE_FILE,
    EXEMPLAR_FILE,
    FEEDBACK_FILE,
    FEEDBACK_FILES,
    FEEDBACK_NO_ANSWER_FILE,
    FEEDBACK_NO_PROGRAM_FILE,
    FEEDBACK_REPORT_FILE,
    SYNTHETIC_POOL_FILE,
    SYSTEM_FILE,
    TemplateError,
    agent_template_hash,
    fill,
    hash_template_files,
    placeholders,
    prompts_root,
    read_template,
    template_files,
    template_hashes,
)

__all__ = [
    "AGENT_DIR",
    "ALL_MODES",
    "DIRECT_MODES",
    "EXCLUDE_FILE",
    "EXEMPLAR_CHOICES",
    "EXEMPLAR_FILE",
    "FEEDBACK_FILE",
    "FEEDBACK_FILES",
    "FEEDBACK_NO_ANSWER_FILE",
    "FEEDBACK_NO_PROGRAM_FILE",
    "FEEDBACK_OUTPUT_LIMIT",
    "FEEDBACK_REPORT_FILE",
    "FEEDBACK_STDERR_CHARS",
    "FEEDBACK_STDOUT_CHARS",
    "MODES",
    "MODE_TITLES",
    "NO_PROGRAM_REPORT",
    "SETTINGS",
    "SYNTHETIC_POOL_FILE",
    "SYSTEM_FILE",
    "TABLE_MODE_ORDER",
    "VERBAL_MODE",
    "ExemplarChoice",
    "Message",
    "Mode",
    "Prompt",
    "Role",
    "RunPlan",
    "TemplateError",
    "ToolCall",
    "ToolSpec",
    "Unit",
    "agent_template_hash",
    "choose_exemplars",
    "demonstration",
    "excluded_ids",
    "exemplar_pool",
    "fill",
    "hash_template_files",
    "is_agentic",
    "mode_rank",
    "parse_modes",
    "placeholders",
    "plan_run",
    "problem_key",
    "prompt_hash",
    "prompted_counterpart",
    "prompts_root",
    "read_template",
    "render",
    "render_feedback",
    "solver_report",
    "stable_paths",
    "statute_sections",
    "template_files",
    "template_hashes",
    "writes_program",
]
