"""Stage 6, evaluation: carrying a run out.

The runner takes a plan through prompt -> completion -> program -> execution -> answer ->
outcome for every sample, with the response cache (a completion is never paid for twice),
the live progress display, the dry run (what a run would send) and the catalog of what
there is to run; ``validate`` runs the published reference programs.  Hands records to the
store; no later stage imports it.
"""

from __future__ import annotations

from .cache import CachedResponse, ResponseCache, cache_key, default_cache_path
from .catalog import build_catalog
from .dryrun import DryRunEstimate, estimate
from .progress import LiveProgress, fit_block, summary_rows, summary_table
from .runner import Observer, Runner, RunResult, evaluate_attempt
from .validate import DomainReport, reference_program, validate

__all__ = [
    "CachedResponse",
    "DomainReport",
    "DryRunEstimate",
    "LiveProgress",
    "Observer",
    "ResponseCache",
    "RunResult",
    "Runner",
    "build_catalog",
    "cache_key",
    "default_cache_path",
    "estimate",
    "evaluate_attempt",
    "fit_block",
    "reference_program",
    "summary_rows",
    "summary_table",
    "validate",
]
