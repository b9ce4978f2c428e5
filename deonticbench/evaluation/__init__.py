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
from .validate import DomainReport, reference_program, validate

if TYPE_CHECKING:
    from .batch_admin import (
        adopt,
        ask_provider,
        cancel_open,
        parse_adoption,
        refresh_states,
        rows_text,
    )
    from .batching import BatchBroker, BatchStats
    from .cache import (
        CachedResponse,
        ResponseCache,
        cache_key,
        default_cache_path,
        prompted_key,
        prompted_keys,
    )
    from .catalog import build_catalog
    from .dryrun import DryRunEstimate, estimate
    from .dryrun_text import dry_run_lines, dry_run_text
    from .preflight import (
        LOGPROB_CACHE_NOTE,
        CacheChoice,
        batch_preflight,
        check_logprobs,
        open_cache,
        run_cache,
    )
    from .program_file import ProgramRun, find_case, run_program_file
    from .progress import ConsoleProgress, LiveProgress, fit_block, summary_rows, summary_table
    from .provenance import build_config, imported_config
    from .requests import prompt_request
    from .run_options import EvalOptions, RunOptions
    from .runner import Observer, Runner, evaluate_attempt
    from .stopping import STOP_SIGNALS, stopped_by_signals
    from .trials import (
        TrialDriver,
        batch_interactive_note,
        check_dar_tasks,
        goes_by_batch,
        trial_setup,
        turn_key,
        turn_request,
    )
    from .validate_text import validate_json, validate_lines

_HOME = {
    "STOP_SIGNALS": "stopping",
    "stopped_by_signals": "stopping",
    "LOGPROB_CACHE_NOTE": "preflight",
    "batch_interactive_note": "trials",
    "dry_run_text": "dryrun_text",
    "CacheChoice": "preflight",
    "batch_preflight": "preflight",
    "check_logprobs": "preflight",
    "open_cache": "preflight",
    "run_cache": "preflight",
    "BatchBroker": "batching",
    "BatchStats": "batching",
    "CachedResponse": "cache",
    "DryRunEstimate": "dryrun",
    "ConsoleProgress": "progress",
    "LiveProgress": "progress",
    "Observer": "runner",
    "adopt": "batch_admin",
    "ask_provider": "batch_admin",
    "parse_adoption": "batch_admin",
    "rows_text": "batch_admin",
    "cancel_open": "batch_admin",
    "refresh_states": "batch_admin",
    "ResponseCache": "cache",
    "Runner": "runner",
    "build_catalog": "catalog",
    "build_config": "provenance",
    "imported_config": "provenance",
    "cache_key": "cache",
    "default_cache_path": "cache",
    "estimate": "dryrun",
    "dry_run_lines": "dryrun_text",
    "evaluate_attempt": "runner",
    "fit_block": "progress",
    "summary_rows": "progress",
    "summary_table": "progress",
    "prompted_key": "cache",
    "prompted_keys": "cache",
    "prompt_request": "requests",
    "goes_by_batch": "trials",
    "TrialDriver": "trials",
    "trial_setup": "trials",
    "turn_key": "trials",
    "turn_request": "trials",
    "EvalOptions": "run_options",
    "RunOptions": "run_options",
    "ProgramRun": "program_file",
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
    "LOGPROB_CACHE_NOTE",
    "STOP_SIGNALS",
    "BatchBroker",
    "BatchStats",
    "CacheChoice",
    "CachedResponse",
    "ConsoleProgress",
    "DomainReport",
    "DryRunEstimate",
    "EvalOptions",
    "LiveProgress",
    "Observer",
    "ProgramRun",
    "ResponseCache",
    "RunOptions",
    "Runner",
    "TrialDriver",
    "adopt",
    "ask_provider",
    "batch_interactive_note",
    "batch_preflight",
    "build_catalog",
    "build_config",
    "cache_key",
    "cancel_open",
    "check_dar_tasks",
    "check_logprobs",
    "default_cache_path",
    "dry_run_lines",
    "dry_run_text",
    "estimate",
    "evaluate_attempt",
    "find_case",
    "fit_block",
    "goes_by_batch",
    "imported_config",
    "open_cache",
    "parse_adoption",
    "prompt_request",
    "prompted_key",
    "prompted_keys",
    "reference_program",
    "refresh_states",
    "rows_text",
    "run_cache",
    "run_program_file",
    "stopped_by_signals",
    "summary_rows",
    "summary_table",
    "trial_setup",
    "turn_key",
    "turn_request",
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
