"""``deonticbench eval``'s options as the command line gives them, turned into what the
library takes: the spec (what to run) and the run options (how).  Every check a library
user also needs is the spec's, the data source's or ``prepare``'s, in the same sentence;
here are only the checks of options that exist on the command line alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

from ..data.domains import DAR_DOMAINS, default_domains, names_every_domain, parse_domains
from ..data.selection import parse_ids, parse_limit
from ..data.sources import resolve_source
from ..errors import ConfigError
from ..models import Model, ignored_params_note, model_notes
from ..solver import ExecutorKind, Limits
from ..store.spec import AgentOptions, RunSpec, parse_params
from ..vocabulary.exemplars import ExemplarChoice
from ..vocabulary.modes import parse_modes
from ..vocabulary.protocols import DAR_PROTOCOL, check_protocol, default_modes
from .preflight import LOGPROB_CACHE_NOTE, CacheChoice


@dataclass(frozen=True)
class RunOptions:
    """How to run, as opposed to what (the spec): ``arun``'s and ``dry_run``'s keywords."""

    cache: CacheChoice
    workers: int | None
    retry_errors: bool
    executor: ExecutorKind
    batch: bool = False
    prompt_cache: bool = True
    """``--no-prompt-cache``: False (how we ask, not what comes back)."""


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
            concurrency=self.concurrency,
            data=resolve_source(self.data_dir, hub=self.hub, revision=self.revision),
            exemplars=self.exemplar_choice,
            distractors=self.distractors,
            agent=AgentOptions(
                self.agent_tools, self.agent_max_turns, self.agent_max_tokens, self.agent_timeout
            ),
            limits=Limits(timeout_s=self.program_timeout),
            protocol=check_protocol(self.protocol),
        ).with_confidence(*self.confidence)

    def run_options(self) -> RunOptions:
        """How to run: the response cache, the sandbox's workers and executor, batches."""
        return RunOptions(
            False if self.no_cache else self.cache_path,
            self.workers,
            self.retry_errors,
            cast(ExecutorKind, self.executor),  # a click.Choice of EXECUTORS
            self.batch,
            prompt_cache=not self.no_prompt_cache,
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
