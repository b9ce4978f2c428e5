"""Stage 2, prompting: a case becomes chat messages.

The three modes (``modes``), the templates under ``prompts/`` and their hashes
(``templates``), rendering a case and the retry prompt (``render``), the leak-free few-shot
exemplars (``exemplars``) and the plan of a run (``plan``: every domain x case x mode with
its exemplars).  Hands a ``Prompt`` (messages, template hash, prompt hash) to a model.
"""

from __future__ import annotations

from .chat import Message, Role
from .exemplars import choose_exemplars, excluded_ids, exemplar_pool, problem_key
from .modes import MODE_TITLES, MODES, TABLE_MODE_ORDER, Mode, mode_rank
from .plan import RunPlan, Unit, plan_run
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
)
from .templates import (
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
    fill,
    placeholders,
    template_files,
    template_hashes,
)

__all__ = [
    "EXCLUDE_FILE",
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
    "SYNTHETIC_POOL_FILE",
    "SYSTEM_FILE",
    "TABLE_MODE_ORDER",
    "Message",
    "Mode",
    "Prompt",
    "Role",
    "RunPlan",
    "TemplateError",
    "Unit",
    "choose_exemplars",
    "demonstration",
    "excluded_ids",
    "exemplar_pool",
    "fill",
    "mode_rank",
    "placeholders",
    "plan_run",
    "problem_key",
    "prompt_hash",
    "render",
    "render_feedback",
    "solver_report",
    "template_files",
    "template_hashes",
]
