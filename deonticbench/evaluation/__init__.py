"""Evaluation: carrying a run out, with the agents, before the store.

The runner takes a plan through prompt -> completion -> program -> execution -> answer ->
outcome for every sample, with the response cache (a completion is never paid for twice),
the live progress display, the dry run (what a run would send), the catalog of what
there is to run and a run's provenance (``provenance``: what config.json says produced
its numbers); ``validate`` runs the published reference programs.  Hands records to the
store; no later stage imports it.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Imported now: the function shadows its module's name in this package, as before.
from .validate import reference_program, validate

if TYPE_CHECKING:
    from .batch_admin import adopt, ask_provider, parse_adoption, rows_text
    from .batching import BatchBroker
    from .cache import ResponseCache
    from .catalog import build_catalog
    from .dryrun import DryRunEstimate, estimate
    from .dryrun_text import dry_run_text
    from .preflight import CacheChoice, batch_preflight, check_logprobs, open_cache, run_cache
    from .program_file import find_case, run_program_file
    from .progress import ConsoleProgress, summary_table
    from .provenance import build_config, imported_config
    from .run_options import EvalOptions, RunOptions
    from .runner import Runner, evaluate_attempt
    from .spending import Budget
    from .stopping import stopped_by_signals
    from .trials import batch_interactive_note, check_dar_tasks
    from .validate_text import validate_json, validate_lines

_HOME = {
    "stopped_by_signals": "stopping",
    "batch_interactive_note": "trials",
    "dry_run_text": "dryrun_text",
    "CacheChoice": "preflight",
    "batch_preflight": "preflight",
    "check_logprobs": "preflight",
    "open_cache": "preflight",
    "run_cache": "preflight",
    "BatchBroker": "batching",
    "Budget": "spending",
    "DryRunEstimate": "dryrun",
    "ConsoleProgress": "progress",
    "adopt": "batch_admin",
    "ask_provider": "batch_admin",
    "parse_adoption": "batch_admin",
    "rows_text": "batch_admin",
    "ResponseCache": "cache",
    "Runner": "runner",
    "build_catalog": "catalog",
    "build_config": "provenance",
    "imported_config": "provenance",
    "estimate": "dryrun",
    "evaluate_attempt": "runner",
    "summary_table": "progress",
    "EvalOptions": "run_options",
    "RunOptions": "run_options",
    "run_program_file": "program_file",
    "find_case": "program_file",
    "check_dar_tasks": "trials",
    "validate_json": "validate_text",
    "validate_lines": "validate_text",
}
"""Each public name's module, imported on first use: ``deonticbench validate`` needs
none of the runner, the agents or the dry run, whose imports were most of its start-up
(0.33 s of 0.55 s)."""

__all__ = [
    "BatchBroker",
    "Budget",
    "CacheChoice",
    "ConsoleProgress",
    "DryRunEstimate",
    "EvalOptions",
    "ResponseCache",
    "RunOptions",
    "Runner",
    "adopt",
    "ask_provider",
    "batch_interactive_note",
    "batch_preflight",
    "build_catalog",
    "build_config",
    "check_dar_tasks",
    "check_logprobs",
    "dry_run_text",
    "estimate",
    "evaluate_attempt",
    "find_case",
    "imported_config",
    "open_cache",
    "parse_adoption",
    "reference_program",
    "rows_text",
    "run_cache",
    "run_program_file",
    "stopped_by_signals",
    "summary_table",
    "validate",
    "validate_json",
    "validate_lines",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value
