"""Prompting, after data and before the models: a case becomes chat messages.

The templates under ``prompts/`` and their hashes (``templates``), rendering a case and
the retry prompt (``render``), the leak-free few-shot exemplars, seeded or retrieved by
BM25 (``exemplars``), distractor statutes (``distractors``), upstream's texts for the
paper protocol (``paper``) and the plan of a run (``plan``: every domain x case x mode
with its exemplars).  The words it shares with every stage (modes, protocols, chat
messages) live in ``deonticbench.vocabulary``.  Hands a ``Prompt`` (messages, template
hash, prompt hash) to a model.
"""

from __future__ import annotations

from .dar_task import DAR_PROMPT_MODES, DarTask, check_dar_domain, dar_task
from .distractors import statute_sections
from .exemplars import (
    HardComplement,
    choose_exemplars,
    excluded_ids,
    exemplar_pool,
    hard_complement,
    problem_key,
)
from .paper import UPSTREAM_FLAGS, Departures, PaperSampling, paper_sampling
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
    "DAR_PROMPT_MODES",
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
    "NO_PROGRAM_REPORT",
    "SYNTHETIC_POOL_FILE",
    "SYSTEM_FILE",
    "UPSTREAM_FLAGS",
    "DarTask",
    "Departures",
    "HardComplement",
    "PaperSampling",
    "Prompt",
    "RunPlan",
    "TemplateError",
    "Unit",
    "agent_template_hash",
    "check_dar_domain",
    "choose_exemplars",
    "dar_task",
    "demonstration",
    "excluded_ids",
    "exemplar_pool",
    "fill",
    "hard_complement",
    "hash_template_files",
    "paper_sampling",
    "placeholders",
    "plan_run",
    "problem_key",
    "prompt_hash",
    "prompts_root",
    "read_template",
    "render",
    "render_feedback",
    "solver_report",
    "stable_paths",
    "statute_sections",
    "template_files",
    "template_hashes",
]
