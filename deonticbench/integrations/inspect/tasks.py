"""The inspect tasks: ``deonticbench`` for any domain, and one named task per domain.

    inspect eval deonticbench/deonticbench -T domain=airline -T mode=few-shot --model ...
    inspect eval deonticbench/airline -T mode=few-shot --model ...

Samples are the harness's cases (``cases.load_cases`` through ``plan_run``: the local
folder of ``DEONTICBENCH_DATA`` or ``data_dir``, else the hub at ``revision``), one per
case id, with the gold label as target.  Epochs default to the paper's K for the domain
(``Domain.default_k``); ``--epochs`` overrides it, as ``-k`` does for ``deonticbench eval``.
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Metric, Scorer
from inspect_ai.solver import Solver

from ...data.cases import describe_source
from ...data.domains import Domain
from ...errors import ConfigError
from ...prompting import template_hashes
from ...scoring.encoding import STAGES
from ...scoring.metrics import DEFAULT_BOOTSTRAP
from ...solver import Limits
from ...store.spec import AgentOptions
from ...vocabulary.chat import Message
from ...vocabulary.modes import is_agentic
from ._messages import to_inspect
from ._plan import Plan, TaskOptions, option_args, plan_for
from .agent import deonticbench_agent_scorer, deonticbench_agent_solver
from .paper_metric import paper_metric
from .scorer import deonticbench_scorer
from .steps import deonticbench_solver


@task
def deonticbench(
    domain: str,
    split: str = "hard",
    mode: str = "zero-shot",
    attempts: int = 1,
    timeout: float = Limits.timeout_s,
    exemplar_seed: int = 0,
    epochs: int | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    bootstrap_seed: int = 0,
    data_dir: str | None = None,
    hub: bool = False,
    revision: str | None = None,
    max_turns: int = AgentOptions.max_turns,
    max_tokens: int | None = AgentOptions.max_tokens,
    trial_timeout: float = AgentOptions.timeout_s,
    repeat_limit: int | None = AgentOptions.repeat_limit,
    context_tokens: int | None = None,
    protocol: str | None = None,
) -> Task:
    """DeonticBench on one domain and mode, scored as the paper scores it.

    Args:
      domain: sara_numeric, sara_binary, airline, housing or uscis.
      split: hard (the paper's), smoke (its first five cases) or whole.
      mode: direct, zero-shot or few-shot; a setting, rules-given or facts-given
        (docs/settings.md); or agent-direct, agent-zero-shot, agent-few-shot: inspect's
        react() agent with the harness's prolog tools on a workspace of the case's files
        (docs/agents.md).
      attempts: 1 is the first attempt alone; 2 adds one retry with SWI-Prolog's feedback
        when a program gave no answer (the final stage's metrics are ``final_*``).
      timeout: wall-clock seconds each program may run (the paper's 20).
      exemplar_seed: chooses the few-shot exemplars, as ``deonticbench eval
        --exemplar-seed``.
      epochs: samples per case; the paper's K for the domain when not given.
      bootstrap: bootstrap replicates of the metrics.
      bootstrap_seed: the bootstrap's seed, as ``deonticbench score --bootstrap-seed``.
      data_dir: a local data folder (default: ``DEONTICBENCH_DATA``, else the hub).
      hub: read the hub dataset even when ``DEONTICBENCH_DATA`` is set.
      revision: the hub revision to pin.
      max_turns: agentic modes: model turns per trial.
      max_tokens: agentic modes: tokens in+out per trial (no limit when not given).
      trial_timeout: agentic modes: wall-clock seconds per trial.
      repeat_limit: agentic modes: the same turn this many times in a row is told so
        once, then stopped (``repeat``); None: no limit.
      context_tokens: agentic modes: the model's context window in tokens; the oldest
        tool observations are elided to stay within it (none: no budget).
      protocol: paper (the prompts upstream's released scripts send, from its pinned
        files) or harness (this project's templates), as ``deonticbench eval --protocol``;
        None: eval's default.  Direct, zero-shot and few-shot only; inspect's own
        generate config still decides the sampling.
    """
    _check_numbers(timeout=timeout, bootstrap=bootstrap, context_tokens=context_tokens)
    asked = TaskOptions(domain, split, mode, exemplar_seed, data_dir, hub, revision, protocol)
    run = asked.spec(attempts=attempts, timeout=timeout, k=epochs)
    (spec,) = run.domain_specs
    # The spec resolves the domain's and the mode's names (aliases, case) once.
    options = TaskOptions(
        spec.name, split, run.modes[0], exemplar_seed, data_dir, hub, revision, run.protocol
    )
    plan = plan_for(options)
    if is_agentic(options.mode) and attempts != 1:
        raise ConfigError("an agentic trial is one attempt: leave attempts at 1.")
    budget = _budget(max_turns, max_tokens, trial_timeout, repeat_limit)
    chosen_solver, chosen_scorer = _steps(
        options, attempts=attempts, timeout=timeout, budget=budget, context_tokens=context_tokens
    )
    return Task(
        dataset=_dataset(plan, options),
        solver=chosen_solver,
        scorer=chosen_scorer,
        metrics=_paper_metrics(attempts, bootstrap, bootstrap_seed),
        epochs=Epochs(run.k_for(spec)),
        metadata={
            **dict(harness="deonticbench", domain=spec.name, split=split, mode=mode),
            **dict(attempts=attempts, exemplar_seed=exemplar_seed, timeout=timeout),
            "protocol": run.protocol,
            **_provenance(plan, spec),
        },
    )


def _budget(
    max_turns: int, max_tokens: int | None, trial_timeout: float, repeat_limit: int | None
) -> AgentOptions:
    """An agentic trial's budget, checked here so that a bad one is one sentence before
    any sample runs."""
    return AgentOptions(
        max_turns=max_turns,
        max_tokens=max_tokens,
        timeout_s=trial_timeout,
        repeat_limit=repeat_limit,
    )


def _check_numbers(*, timeout: float, bootstrap: int, context_tokens: int | None) -> None:
    """The task's numeric options, each one sentence before any sample runs."""
    if timeout <= 0:
        raise ConfigError("timeout must be a positive number of seconds.")
    if bootstrap < 1:
        raise ConfigError("bootstrap needs at least one replicate.")
    if context_tokens is not None and context_tokens < 1:
        raise ConfigError(f"context_tokens must be at least 1, not {context_tokens}.")


def _provenance(plan: Plan, spec: Domain) -> dict[str, Any]:
    """Where the task's cases, prompts and few-shot pool came from, for the log."""
    return {
        "data": describe_source(plan.source),
        "templates": template_hashes([spec]),
        "few_shot_pool": plan.pool_note,
    }


def _paper_metrics(
    attempts: int, bootstrap: int, bootstrap_seed: int
) -> list[Metric | dict[str, list[Metric]]]:
    """The paper's metric per stage: the first attempt's, and the final one's after a retry."""
    stages = STAGES if attempts > 1 else STAGES[:1]
    return [paper_metric(stage=stage, bootstrap=bootstrap, seed=bootstrap_seed) for stage in stages]


def _steps(
    options: TaskOptions,
    *,
    attempts: int,
    timeout: float,
    budget: AgentOptions,
    context_tokens: int | None,
) -> tuple[Solver, Scorer]:
    """The solver and scorer of the task: inspect's react() agent with the harness's tools
    in an agentic mode, else the prompted protocol (one generation, optional retry)."""
    args = option_args(options)
    if is_agentic(options.mode):
        return (
            deonticbench_agent_solver(
                timeout=timeout,
                max_turns=budget.max_turns,
                max_tokens=budget.max_tokens,
                trial_timeout=budget.timeout_s,
                repeat_limit=budget.repeat_limit,
                context_tokens=context_tokens,
                **args,
            ),
            deonticbench_agent_scorer(timeout=timeout, **args),
        )
    return (
        deonticbench_solver(attempts=attempts, timeout=timeout, **args),
        deonticbench_scorer(timeout=timeout, **args),
    )


def _dataset(plan: Plan, options: TaskOptions) -> MemoryDataset:
    samples = []
    for unit in plan.units:
        # An agentic sample's input is set by its solver (the instruction names no case).
        messages = (
            unit.render().messages
            if not is_agentic(unit.mode)
            else (Message(role="user", content=f"case {unit.case.id}"),)
        )
        samples.append(
            Sample(
                id=unit.case.id,
                input=to_inspect(messages),
                target=str(unit.case.gold),
                metadata={
                    "domain": unit.domain.name,
                    "case_id": unit.case.id,
                    "mode": unit.mode,
                    "split": options.split,
                    "exemplars": [e.id for e in unit.exemplars],
                },
            )
        )
    return MemoryDataset(samples, name=f"deonticbench-{options.domain}-{options.split}")


# One task per domain, so that `inspect eval deonticbench/airline` needs no -T domain=.


@task
def sara_numeric(
    split: str = "hard",
    mode: str = "zero-shot",
    attempts: int = 1,
    exemplar_seed: int = 0,
    protocol: str | None = None,
) -> Task:
    """SARA numeric (tax amounts; accuracy within $1)."""
    return _named("sara_numeric", split, mode, attempts, exemplar_seed, protocol)


@task
def sara_binary(
    split: str = "hard",
    mode: str = "zero-shot",
    attempts: int = 1,
    exemplar_seed: int = 0,
    protocol: str | None = None,
) -> Task:
    """SARA binary (entailment; macro-F1)."""
    return _named("sara_binary", split, mode, attempts, exemplar_seed, protocol)


@task
def airline(
    split: str = "hard",
    mode: str = "zero-shot",
    attempts: int = 1,
    exemplar_seed: int = 0,
    protocol: str | None = None,
) -> Task:
    """Airline baggage fees (accuracy within $1)."""
    return _named("airline", split, mode, attempts, exemplar_seed, protocol)


@task
def housing(
    split: str = "hard",
    mode: str = "zero-shot",
    attempts: int = 1,
    exemplar_seed: int = 0,
    protocol: str | None = None,
) -> Task:
    """Housing law by state (macro-F1)."""
    return _named("housing", split, mode, attempts, exemplar_seed, protocol)


@task
def uscis(
    split: str = "hard",
    mode: str = "zero-shot",
    attempts: int = 1,
    exemplar_seed: int = 0,
    protocol: str | None = None,
) -> Task:
    """USCIS-AAO appeals (macro-F1)."""
    return _named("uscis", split, mode, attempts, exemplar_seed, protocol)


def _named(
    domain: str, split: str, mode: str, attempts: int, exemplar_seed: int, protocol: str | None
) -> Task:
    """A named task: ``deonticbench`` with its domain fixed (the same -T options)."""
    return deonticbench(
        domain,
        split=split,
        mode=mode,
        attempts=attempts,
        exemplar_seed=exemplar_seed,
        protocol=protocol,
    )
