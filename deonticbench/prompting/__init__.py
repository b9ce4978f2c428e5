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
from .exemplars import choose_exemplars, exemplar_pool, hard_complement, problem_key
from .paper import UPSTREAM_FLAGS, Departures, paper_sampling
from .plan import RunPlan, Unit, plan_run
from .render import (
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
    SYSTEM_FILE,
    agent_template_hash,
    fill,
    hash_template_files,
    prompts_root,
    read_template,
    template_hashes,
)

__all__ = [
    "AGENT_DIR",
    "DAR_PROMPT_MODES",
    "NO_PROGRAM_REPORT",
    "SYSTEM_FILE",
    "UPSTREAM_FLAGS",
    "DarTask",
    "Departures",
    "Prompt",
    "RunPlan",
    "Unit",
    "agent_template_hash",
    "check_dar_domain",
    "choose_exemplars",
    "dar_task",
    "demonstration",
    "exemplar_pool",
    "fill",
    "hard_complement",
    "hash_template_files",
    "paper_sampling",
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
    "template_hashes",
]
