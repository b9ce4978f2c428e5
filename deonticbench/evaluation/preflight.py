"""The option checks a run makes before any work, owned here so that the library
(``deonticbench.evaluate``, ``arun``, ``dry_run``) and ``deonticbench eval`` refuse alike,
in the same sentence: log-probabilities from a backend that gives none, ``--batch`` where
it cannot work, and what ``--confidence logprob`` means for the response cache."""

from __future__ import annotations

import os
from typing import Literal

from ..errors import ConfigError
from ..models import Model
from ..models.batch import BatchAPI, batch_api
from ..store.spec import LOGPROB_PARAM, RunSpec
from .cache import ResponseCache, default_cache_path

CacheChoice = str | os.PathLike[str] | Literal[False] | None
"""Where the response cache is: None for the default file, False for no cache."""


def check_logprobs(spec: RunSpec, model: Model) -> None:
    """``--confidence logprob`` (``extra.logprobs``) with a backend whose replies carry
    none would give a run whose logprob signal is n/a everywhere: one sentence instead."""
    if LOGPROB_PARAM in spec.param_overrides and not model.logprobs:
        raise ConfigError(
            f"--confidence logprob asks an OpenAI-compatible server for token "
            f"log-probabilities; {model.provider} gives none (use openai: or "
            "openai-compatible:)."
        )


def run_cache(spec: RunSpec, cache: CacheChoice) -> CacheChoice:
    """The response cache the run uses: none when it asks for log-probabilities
    (``--confidence logprob``), since the cache keeps text, not log-probabilities, and a
    cached answer would leave its sample without the signal, silently."""
    return False if spec.asks_logprobs else cache


LOGPROB_CACHE_NOTE = (
    "--confidence logprob does not read the response cache (it keeps no "
    "log-probabilities): every response is requested anew."
)
"""What ``run_cache`` means for the user, said before a run that asks for log-probabilities."""


def open_cache(cache: CacheChoice) -> ResponseCache | None:
    if cache is False:
        return None
    return ResponseCache(cache if cache is not None else default_cache_path())


def batch_preflight(
    model: Model, batch: bool, cache: CacheChoice, *, logprobs: bool = False
) -> BatchAPI | None:
    """The batch API ``--batch`` will use (None without ``--batch``), or the sentence
    the run refuses it with: a backend without one, no response cache to keep the
    results in, or log-probabilities asked for (``--confidence logprob``), which batch
    results, read back through that cache, would lose.  The run and its dry run refuse
    alike."""
    if not batch:
        return None
    if logprobs:
        raise ConfigError(
            "--confidence logprob and --batch do not go together: batch results are read "
            "back through the response cache, which keeps no log-probabilities."
        )
    batches = batch_api(model)
    if cache is False:
        raise ConfigError(
            "--batch keeps each result in the response cache as soon as it is read, "
            "so that a stopped run loses nothing: run it without --no-cache."
        )
    return batches


__all__ = [
    "LOGPROB_CACHE_NOTE",
    "CacheChoice",
    "batch_preflight",
    "check_logprobs",
    "open_cache",
    "run_cache",
]
