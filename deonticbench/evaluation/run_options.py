"""How a run is carried out (``RunOptions``), and ``deonticbench eval``'s options as the
command line gives them, turned into what the library takes: the spec (what to run) and
the run options (how).  Every check a library user also needs is the spec's, the run
options', the data source's or ``prepare``'s, in the same sentence; ``EvalOptions`` holds
only the checks of options that exist on the command line alone."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..data.domains import DAR_DOMAINS, default_domains, names_every_domain, parse_domains
from ..data.selection import parse_ids, parse_limit
from ..data.sources import resolve_source
from ..errors import ConfigError
from ..models import Model, ignored_params_note, model_notes
from ..solver import EXECUTORS, ExecutorKind, Limits
from ..store.spec import AgentOptions, RunSpec, parse_params
from ..vocabulary.exemplar_choice import ExemplarChoice
from ..vocabulary.modes import parse_modes
from ..vocabulary.protocols import DAR_PROTOCOL, check_protocol, default_modes
from .preflight import LOGPROB_CACHE_NOTE, CacheChoice
from .runner import DEFAULT_CONCURRENCY, Observer
from .spending import SpendGate


@dataclass(frozen=True)
class RunOptions:
    """How a run is carried out, as opposed to what it does (``RunSpec``): where it
    writes, how much runs at once, the caches, batches and who is told of progress.
    ``evaluate``, ``arun`` and ``prepare`` take it beside the spec, per call, as
    inspect_ai's generate takes a ``GenerateConfig``.  None of it is in config.json's
    fingerprint: a run made with other options resumes, and its records mean the same.
    Each field is checked here, in the sentence ``deonticbench eval`` says for its flag."""

    out: str | os.PathLike[str] | None = None
    """The run folder (``--out``); None: the newest folder under ``runs/`` that holds
    this run is resumed, else a new one is named."""
    fresh: bool = False
    """``--fresh``: a run already in ``out`` is moved aside when the run starts (never
    deleted); without ``out``, a new folder even when one matches."""
    concurrency: int = DEFAULT_CONCURRENCY
    """Model requests in flight at once (``--concurrency``)."""
    cache: CacheChoice = None
    """The response cache: None the default file, False none (``--no-cache``), or a path
    (``--cache``).  A spec asking for log-probabilities uses none."""
    retry_errors: bool = False
    """``--retry-errors``: the folder's samples whose last request failed are done
    again."""
    workers: int | None = None
    """Prolog programs run at once (``--workers``); None: one more than the cores."""
    executor: ExecutorKind = "fork"
    """How each program starts (``--executor``): forked from a booted SWI-Prolog, or a
    fresh process; the same results."""
    batch: bool = False
    """``--batch``: the prompted modes' requests go through the provider's batch API."""
    prompt_cache: bool = True
    """False (``--no-prompt-cache``): no request asks the provider to cache its prefix;
    how we ask, not what comes back, so neither config.json nor a cache key changes."""
    observer: Observer | None = None
    """Told about progress (``evaluation.progress.LiveProgress`` draws it); with
    ``note`` and ``opened`` (``api.FolderObserver``), about the run folder too."""
    spend: SpendGate | None = None
    """A spending cap every request asks for room (``spending``: ``Budget.for_run``;
    ``eval-set --max-usd`` gives one shared by the set's runs); None: no cap."""

    def __post_init__(self) -> None:
        if not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise ConfigError(f"--concurrency must be at least 1, not {self.concurrency}.")
        if self.workers is not None and (not isinstance(self.workers, int) or self.workers < 1):
            raise ConfigError(f"--workers must be at least 1, not {self.workers}.")
        if self.executor not in EXECUTORS:
            raise ConfigError(
                f"unknown executor {self.executor!r}; choose from {', '.join(EXECUTORS)}."
            )


@dataclass(frozen=True)
class EvalOptions:
    """The command line as click parsed it (eval's options, by name)."""

    model_spec: str
    domains: str
    split: str
    modes: str | None
    """``--modes`` as typed; None: the protocol's ``default_modes``."""
    exemplar_choice: ExemplarChoice
    protocol: str
    program_timeout: float
    distractors: int | None
    agent_tools: str
    agent_max_turns: int
    agent_max_tokens: int | None
    agent_timeout: float
    k: int | None
    attempts: int | None
    concurrency: int
    limit_text: str | None
    sample_ids: tuple[str, ...]
    exemplar_seed: int
    out: Path | None
    fresh: bool
    data_dir: Path | None
    hub: bool
    revision: str | None
    params: tuple[str, ...]
    cache_path: Path | None
    no_cache: bool
    retry_errors: bool
    workers: int | None
    executor: str
    dry_run: bool
    as_json: bool
    assume_output_tokens: int | None
    no_prompt_cache: bool
    batch: bool
    score_after: bool
    confidence: tuple[str, ...]

    def __post_init__(self) -> None:
        if (self.as_json or self.assume_output_tokens is not None) and not self.dry_run:
            raise ConfigError("--json and --assume-output-tokens go with --dry-run.")
        if self.assume_output_tokens is not None and self.assume_output_tokens < 0:
            raise ConfigError("--assume-output-tokens should be 0 or more.")

    def spec(self) -> RunSpec:
        """What to run, as the library takes it."""
        return RunSpec(
            model=self.model_spec,
            params=parse_params(self.params),
            domains=self._domain_names(),
            split=self.split,
            modes=default_modes(self.protocol) if self.modes is None else parse_modes(self.modes),
            k=self.k,
            attempts=self.attempts,
            exemplar_seed=self.exemplar_seed,
            case_range=parse_limit(self.limit_text),
            case_ids=tuple(parse_ids(self.sample_ids)),
            data=resolve_source(self.data_dir, hub=self.hub, revision=self.revision),
            exemplars=self.exemplar_choice,
            distractors=self.distractors,
            agent=AgentOptions(
                self.agent_tools, self.agent_max_turns, self.agent_max_tokens, self.agent_timeout
            ),
            limits=Limits(timeout_s=self.program_timeout),
            protocol=check_protocol(self.protocol),
        ).with_confidence(*self.confidence)

    def run_options(self, observer: Observer | None = None) -> RunOptions:
        """How to run: the folder, the concurrency, the response cache, the sandbox's
        workers and executor, batches, prompt caching, and who is told of progress."""
        return RunOptions(
            out=self.out,
            fresh=self.fresh,
            concurrency=self.concurrency,
            cache=False if self.no_cache else self.cache_path,
            retry_errors=self.retry_errors,
            workers=self.workers,
            executor=cast(ExecutorKind, self.executor),  # a click.Choice of EXECUTORS
            batch=self.batch,
            prompt_cache=not self.no_prompt_cache,
            observer=observer,
        )

    def _all_under_dar(self) -> bool:
        """``--domains all`` under ``--protocol dar``: DAR's task set, not every domain."""
        every = names_every_domain(self.domains)
        return every and check_protocol(self.protocol) == DAR_PROTOCOL

    def _domain_names(self) -> tuple[str, ...]:
        """The domains to run: as given, except that ``all`` is the protocol's
        ``default_domains`` (under dar, DAR's task set, as ``export --protocol dar`` takes
        it); a domain outside it named by the user is refused by the spec."""
        if names_every_domain(self.domains):
            return default_domains(check_protocol(self.protocol))
        return tuple(d.name for d in parse_domains(self.domains))

    def notes_before_run(self, model: Model, spec: RunSpec) -> list[str]:
        """What the user should know about the model before the run, one sentence each
        (``--json`` keeps only those about the options given)."""
        notes = [] if self.as_json else model_notes(model)
        ignored = ignored_params_note(model) if self.params else None
        notes += [ignored] if ignored else []
        logprob_uncached = spec.asks_logprobs and not self.no_cache and not self.dry_run
        notes += [LOGPROB_CACHE_NOTE] if logprob_uncached else []
        left_out = [d.name for d in parse_domains(None) if d.name not in DAR_DOMAINS]
        if self._all_under_dar() and left_out:
            notes.append(f"{', '.join(left_out)} left out: not in DAR's task set.")
        return notes
