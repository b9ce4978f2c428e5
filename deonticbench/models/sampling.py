"""A run's sampling rule: which ``GenerateConfig`` each request goes with.

The caller decides, the backend maps (as inspect_ai's ``GenerateConfig``): the runner
asks ``RunSampling.config`` for every request it builds (``evaluation.requests.
prompt_request``, ``evaluation.trials.turn_request``), and the dry run asks for the very
same requests.  Every request samples as the backend's settings say (the registry's,
with ``--param``), except a paper-protocol first attempt of direct, zero-shot and
few-shot, which sends upstream's fields verbatim (``prompting.paper.sampling``) and
takes a short reply as upstream does (docs/prompts.md, "Server faults").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import ConfigError
from ..vocabulary.modes import Mode
from ..vocabulary.protocols import mode_protocol
from .base import GenerateConfig, Model
from .registry import SAMPLING_KEYS

LOGPROB_FIELDS = frozenset({"logprobs", "top_logprobs"})
"""Request fields that ask for what was drawn, not how: kept on a paper-protocol call."""


class FirstAttempt(Protocol):
    """What upstream's script sends on a paper-protocol first attempt
    (``prompting.paper.PaperSampling`` is one): its sampling fields under its own names,
    and whether it draws one sample per call."""

    @property
    def fields(self) -> Mapping[str, Any]: ...

    @property
    def one_per_call(self) -> bool: ...

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready and stable: part of the response-cache key (``identity``)."""
        ...


@dataclass(frozen=True)
class RunSampling:
    """How every request of one run is sampled (built by ``run_sampling``)."""

    base: GenerateConfig
    """Every request's config but a paper-protocol first attempt's."""
    first_attempt: FirstAttempt | None = None
    """Under ``--protocol paper``: upstream's fields for this model name and server."""

    def config(self, mode: Mode, attempt: int = 0, *, agentic: bool = False) -> GenerateConfig:
        """The config of a request of ``mode``'s ``attempt`` (an agent turn: ``agentic``)."""
        paper = self.first_attempt
        if paper is None or attempt != 0 or agentic or mode_protocol("paper", mode) != "paper":
            return self.base
        return dataclasses.replace(
            self.base,
            verbatim=dict(paper.fields),
            n_per_call=1 if paper.one_per_call else None,
            extra={k: v for k, v in self.base.extra.items() if k in LOGPROB_FIELDS},
            refetch_missing=False,
        )

    def without_prompt_cache(self) -> RunSampling:
        """``--no-prompt-cache``: how we ask, not what comes back (no key changes)."""
        return dataclasses.replace(self, base=dataclasses.replace(self.base, prompt_cache=False))

    def identity(self, model: Model) -> dict[str, Any]:
        """What determines the run's outputs (the response-cache key, config.json's
        ``identity``): the backend's identity and, under the paper protocol only,
        upstream's first-attempt fields (a harness run's keys stay what they were)."""
        ident = model.identity()
        if self.first_attempt is not None:
            ident["paper_sampling"] = self.first_attempt.to_dict()
        return ident


def fixed_params(overrides: Mapping[str, Any], flags: Mapping[str, str]) -> dict[str, Any]:
    """Under the paper protocol, the ``--param`` values of upstream's own flags (``flags``:
    parameter -> flag); any other parameter that decides how a first attempt samples is
    refused in one sentence, before any request (it would otherwise be dropped)."""
    fixed = [
        key
        for key in overrides
        if key in (*SAMPLING_KEYS, "reasoning")
        or (key.startswith("extra.") and key[6:] not in LOGPROB_FIELDS)
    ]
    refused = [key for key in fixed if key not in flags]
    if refused:
        names = ", ".join(refused)
        taken = " and ".join(f"{flag} (--param {key}=...)" for key, flag in flags.items())
        raise ConfigError(
            f"--param {names}: the paper protocol sends upstream's own sampling fields, and "
            f"upstream's script takes only {taken}; use --protocol harness to set {names}."
        )
    return {key: overrides[key] for key in fixed}


def run_sampling(model: Model, first_attempt: FirstAttempt | None = None) -> RunSampling:
    """The rule of a run with ``model``: its settings' sampling, prompt caching where the
    backend offers it, and upstream's ``first_attempt`` fields under the paper protocol."""
    return RunSampling(
        GenerateConfig.of(model.params, prompt_cache=model.prompt_cache), first_attempt
    )


__all__ = ["LOGPROB_FIELDS", "FirstAttempt", "RunSampling", "fixed_params", "run_sampling"]
