"""The library's two entry points: ``evaluate`` a spec into a run folder, ``score`` runs.

    from deonticbench import RunSpec, evaluate, score
    run = evaluate(RunSpec(model="reference", domains=("airline",), split="smoke"))
    print(score(run).to_frame())

``evaluate`` returns the ``Run`` it made, as ``read_run`` reads a run folder, with what
its session did (``Run.session``); ``score`` and every other reader of a run take it, or
the folder's path.

A run is given by two objects: the ``RunSpec`` (what it does, fingerprinted in its
config.json) and the ``RunOptions`` (how it is carried out: the folder, concurrency,
caches, batches, workers, who is told of progress), passed per call as inspect_ai's
generate takes a ``GenerateConfig``.  ``evaluate(spec, options)`` runs them as
``deonticbench eval`` does: the model, the data and the run folder are checked before
anything is written (a missing key or an unusable cache or sandbox is one sentence and
the folder is untouched); a folder with a matching config is resumed.  ``--score`` is
``score`` and ``report.write_report`` afterwards.  The command line parses its flags into
the same two objects, calls these steps and prints what they return.

The steps are public too, for callers that print between them (the CLI) or run inside
their own event loop: ``prepare`` (model, plan, config and folder), ``dry_run`` (what
would be sent) and ``arun`` (the run itself, async; ``evaluate`` is ``asyncio.run`` of
it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .data.sources import resolve_source
from .errors import ConfigError, DeonticBenchError, missing_extra
from .evaluation.batching import BatchBroker
from .evaluation.cache import ResponseCache
from .evaluation.dryrun import DryRunEstimate, estimate
from .evaluation.preflight import (
    CacheChoice,
    batch_preflight,
    check_logprobs,
    open_cache,
    run_cache,
)
from .evaluation.provenance import build_config
from .evaluation.run_options import RunOptions
from .evaluation.runner import Runner
from .evaluation.trials import check_dar_tasks
from .models import Model, count_prompt_tokens, load_model, token_count_method
from .models.anthropic_tokens import count_by_endpoint, counts_by_endpoint
from .models.batch import BatchAPI
from .models.loader import check_spec
from .models.sampling import RunSampling, fixed_params, run_sampling
from .prompting.paper import UPSTREAM_FLAGS, Departures, paper_sampling
from .prompting.plan import RunPlan, plan_run
from .scoring.metrics import DEFAULT_BOOTSTRAP
from .scoring.results import write_results
from .scoring.rows import ScoreRow, score_rows
from .scoring.scores import RunScores, score_runs
from .settings.given import SettingParts
from .solver import Solver
from .store.batches import BatchLog
from .store.config import check_existing, recorded_model_spec
from .store.folder import RunFolder, is_run_folder, set_aside
from .store.naming import find_resumable, new_run_path, new_run_pattern
from .store.record import Record, RecordKey
from .store.records_file import RECORDS_NAME, read_records
from .store.run import Run, RunLike, Session, read_run
from .store.spec import DEFAULT_ATTEMPTS, RunSpec
from .vocabulary.chat import Message

if TYPE_CHECKING:
    import pandas


@runtime_checkable
class FolderObserver(Protocol):
    """An observer that also wants to know what happened to the run folder: a sentence
    when an old run is moved aside (``fresh``), and the folder once it is opened."""

    def note(self, text: str) -> None: ...

    def opened(self, run: RunFolder) -> None: ...


@dataclass(frozen=True)
class PreparedRun:
    """A run ready to start: the spec with its attempts resolved, the options it runs
    with, the model it names, the plan (cases loaded, exemplars chosen), the config.json
    it will write, and the folder it will write to."""

    spec: RunSpec
    options: RunOptions
    model: Model
    plan: RunPlan
    config: dict[str, Any]
    out: Path
    sampling: RunSampling
    """Which generation settings each request goes with (``models.sampling``)."""
    named: bool = False
    """``out`` was named here (no folder given, none to resume): a run names it anew by
    its own start time."""

    @property
    def fresh(self) -> bool:
        """Start ``out`` afresh: a run already in it is moved aside (never deleted)."""
        return self.options.fresh

    @property
    def folder_text(self) -> str:
        """Where the run will write, as a dry run made now can say it: the folder given,
        the one it resumes, or how a new one is named (the time in its name is the run's
        own start, so this prepare's clock would name a folder the run never uses)."""
        if self.named:
            return new_run_pattern(self.model.spec, self.spec.split)
        if not self.fresh and is_run_folder(self.out):
            return f"{self.out} (resumed)"
        return str(self.out)

    def sample_keys(self) -> set[RecordKey]:
        return {key for unit in self.plan.units for key in unit.sample_keys()}


def prepare(spec: RunSpec, options: RunOptions | None = None) -> PreparedRun:
    """Load the model and the cases, and choose the folder; nothing is written yet.

    Without ``options.out`` the newest folder under ``runs/`` with a matching
    configuration is resumed (unless ``options.fresh``), else a new one is named.  With
    ``out`` and ``fresh``, a run already in ``out`` is moved aside when the run starts.
    """
    options = options if options is not None else RunOptions()
    check_spec(spec.model)  # a misspelt model is one sentence before any data is loaded
    source = spec.data if spec.data is not None else resolve_source()
    parts = SettingParts(spec.limits)
    plan = plan_run(
        spec.domain_specs,
        split=spec.split,
        modes=spec.modes,
        source=source,
        k=spec.k,
        limit=spec.case_range,
        seed=spec.exemplar_seed,
        case_ids=spec.case_ids or None,
        exemplars=spec.exemplars,
        distractors=spec.distractors,
        given_parts=parts,
        protocol=spec.protocol,
    )
    check_dar_tasks(plan)
    model = load_model(
        spec.model,
        overrides=spec.param_overrides or None,
        cases=(unit.case for unit in plan.units),
        parts=parts.answers(),
    )
    check_logprobs(spec, model)
    sampling = _run_sampling(spec, model, plan)
    if spec.attempts is None:
        # A replay can only give as many attempts as were saved.
        spec = spec.with_attempts(getattr(model, "max_attempts", None) or DEFAULT_ATTEMPTS)
    # The spec the run is made with says where its data came from (pinned, for the hub).
    spec = dataclasses.replace(spec, data=plan.source or source)
    config = build_config(
        spec, model, plan, sampling.identity(model), concurrency=options.concurrency
    )
    if options.out is None:
        found = None if options.fresh else find_resumable(config)
        folder = found or new_run_path(model.spec, spec.split)
    else:
        found, folder = None, Path(options.out)
    named = options.out is None and found is None
    return PreparedRun(spec, options, model, plan, config, folder, sampling, named=named)


def _run_sampling(spec: RunSpec, model: Model, plan: RunPlan) -> RunSampling:
    """How the run's requests are sampled: as the model's settings say, except that the
    paper protocol's first attempts sample as upstream's script does for this model name
    and server (``prompting.paper.sampling``), with upstream's own flags where
    ``--param`` gives them (any other sampling ``--param`` is refused)."""
    paper = next((unit.paper for unit in plan.units if unit.paper is not None), None)
    if paper is None:
        return run_sampling(model)
    given = fixed_params(spec.param_overrides, UPSTREAM_FLAGS)
    flags = Departures(
        temperature=model.params.temperature if "temperature" in given else None,
        reasoning_effort=model.params.reasoning_effort if "reasoning_effort" in given else None,
    )
    base_url = getattr(model, "base_url", None)
    return run_sampling(model, paper_sampling(paper, model.model_name, base_url, flags))


def dry_run(prepared: PreparedRun) -> DryRunEstimate:
    """What the run would send (first-attempt requests and prompt tokens), with the
    options it was prepared with; sends nothing.

    Refuses a folder, or options, the real run would refuse, now rather than after the
    estimate."""
    options = prepared.options
    cache = run_cache(prepared.spec, options.cache)
    batches = batch_preflight(
        prepared.model, options.batch, cache, logprobs=prepared.spec.asks_logprobs
    )
    out = prepared.out
    done: dict[RecordKey, Record] = {}
    if prepared.fresh:
        pass  # the real run would move the old run aside and start from nothing
    else:
        check_existing(out, prepared.config)
        if (out / RECORDS_NAME).exists():
            done = read_records(out / RECORDS_NAME).records
    if options.retry_errors:
        done = {key: r for key, r in done.items() if r.final.error is None}
    opened = open_cache(cache)
    try:
        walk = functools.partial(
            estimate,
            prepared.model,
            prepared.plan,
            done=done,
            cache=opened,
            attempts=prepared.spec.attempts or DEFAULT_ATTEMPTS,
            agent=prepared.spec.agent,
            batches=batches,
            sampling=_sampling(prepared),
        )
        count, method, asked = _provider_counter(prepared.model, walk)
        est = walk(count_tokens=count)
    finally:
        if opened is not None:
            opened.close()
    return dataclasses.replace(est, token_count_method=method, count_calls=asked)


def _provider_counter(
    model: Model, walk: Callable[..., DryRunEstimate]
) -> tuple[Callable[[Model, Sequence[Message]], int], str, int]:
    """How the dry run counts prompt tokens, and the phrase that says so.  A provider with
    a counting endpoint (Anthropic) is asked once per distinct prompt the run would send,
    found by a first ``walk`` of the estimate itself, so nothing it sends is left
    uncounted and nothing it does not send is asked.  Also says how many counts were
    asked."""
    method = token_count_method(model)
    if not counts_by_endpoint(model):
        return count_prompt_tokens, method, 0
    asked: list[Sequence[Message]] = []

    def record(model: Model, messages: Sequence[Message]) -> int:
        asked.append(tuple(messages))
        return count_prompt_tokens(model, messages)

    walk(count_tokens=record)
    found = count_by_endpoint(model, asked)
    if found.problem is not None:
        return count_prompt_tokens, f"{method}; count_tokens was not asked: {found.problem}", 0

    def endpoint(model: Model, messages: Sequence[Message]) -> int:
        counted = found.get(messages)
        return counted if counted is not None else count_prompt_tokens(model, messages)

    method = "Anthropic's count_tokens endpoint (it counts as the API bills)"
    return endpoint, method, len(found.counts)


async def arun(spec: RunSpec | PreparedRun, options: RunOptions | None = None) -> Run:
    """Run a spec with its options (or a run ``prepare`` made, with the options it was
    prepared with); the ``Run`` made, with what this session did (``Run.session``).

    Cancelling it stops cleanly: finished records are on disk and the session says
    ``interrupted``.  A cancellation before the run folder is opened propagates (nothing
    was changed)."""
    if isinstance(spec, PreparedRun):
        if options is not None:
            raise ConfigError(
                "a prepared run carries the options it was prepared with: give them to "
                "prepare(spec, options), not to arun."
            )
        prepared = spec
    else:
        prepared = prepare(spec, options)
    options = prepared.options
    observer = options.observer
    model = prepared.model
    started = time.monotonic()
    try:
        batches, opened_cache, solver = await _preflight(prepared)
        interrupted = False
        try:
            if options.fresh:
                moved = _set_aside_run(prepared.out)
                if moved is not None and isinstance(observer, FolderObserver):
                    observer.note(moved)
            with RunFolder.open(
                prepared.out, prepared.config, retry_errors=options.retry_errors
            ) as run:
                if isinstance(observer, FolderObserver):
                    observer.opened(run)
                runner = _wired(prepared, run, solver, opened_cache, batches)
                try:
                    await runner.run(prepared.plan)
                except asyncio.CancelledError:
                    interrupted = True
        finally:
            # Kill running programs now rather than waiting for their timeouts.
            solver.close()
            if opened_cache is not None:
                opened_cache.close()
    finally:
        await model.aclose()
    return _closing(prepared, run, runner.result, interrupted=interrupted, started=started)


async def _preflight(
    prepared: PreparedRun,
) -> tuple[BatchAPI | None, ResponseCache | None, Solver]:
    """Before any work: a refused option, a missing key or an unreachable server is one
    sentence, and so is an unusable cache or sandbox; only then is the run folder
    touched.  The batch API (or None), the opened response cache and the solver."""
    options = prepared.options
    cache = run_cache(prepared.spec, options.cache)
    batches = batch_preflight(
        prepared.model, options.batch, cache, logprobs=prepared.spec.asks_logprobs
    )
    await prepared.model.check()
    opened_cache = open_cache(cache)
    try:
        solver = Solver(
            workers=options.workers, limits=prepared.spec.limits, executor=options.executor
        )
    except BaseException:
        if opened_cache is not None:
            opened_cache.close()
        raise
    return batches, opened_cache, solver


def _wired(
    prepared: PreparedRun,
    run: RunFolder,
    solver: Solver,
    opened_cache: ResponseCache | None,
    batches: BatchAPI | None,
) -> Runner:
    """The runner of an opened run folder, with its batch broker under ``--batch``."""
    spec, model, observer = prepared.spec, prepared.model, prepared.options.observer
    sampling = _sampling(prepared)
    batcher = None
    if batches is not None and opened_cache is not None:
        batcher = BatchBroker(
            model,
            batches,
            BatchLog(run.path),
            opened_cache,
            notify=observer.note if isinstance(observer, FolderObserver) else None,
            show=getattr(observer, "batches", None),
            identity=sampling.identity(model),
        )
    return Runner(
        model,
        solver,
        run,
        opened_cache,
        attempts=spec.attempts or DEFAULT_ATTEMPTS,
        concurrency=prepared.options.concurrency,
        observer=observer,
        agent=spec.agent,
        batcher=batcher,
        sampling=sampling,
        spend=prepared.options.spend,
    )


def _sampling(prepared: PreparedRun) -> RunSampling:
    sampling = prepared.sampling
    return sampling if prepared.options.prompt_cache else sampling.without_prompt_cache()


def _closing(
    prepared: PreparedRun,
    run: RunFolder,
    session: Session,
    *,
    interrupted: bool,
    started: float,
) -> Run:
    """After a run, a stopped one too: its results.json (what is there so far), and
    what ``arun`` returns: the folder read back, with what this session did."""
    in_plan = prepared.sample_keys()
    write_run_results(prepared.out, wall_time_s=time.monotonic() - started)
    session.planned = len(in_plan)
    session.missing = sum(1 for key in in_plan if key not in run.done)
    session.interrupted = interrupted
    session.truncated = run.loaded.truncated
    session.dropped_errors = run.loaded.dropped_errors
    made = read_run(prepared.out)
    made.session = session
    return made


def write_run_results(run: RunLike, *, wall_time_s: float | None = None) -> Path | None:
    """Score a run (or run folder) and write its results.json; None when it holds no
    record."""
    (scores,) = score_runs([run])
    if not scores.run.records:
        return None
    return write_results(scores, wall_time_s=wall_time_s)


def _set_aside_run(out: Path) -> str | None:
    """``fresh`` with a folder that holds a run: keep nothing of it in ``out``, lose
    nothing.  Returns the sentence saying where it went (None: there was no run)."""
    if not is_run_folder(out):
        return None
    records = out / RECORDS_NAME
    count = records.read_bytes().count(b"\n") if records.exists() else 0
    try:
        spec = recorded_model_spec(out)
        model = spec if spec is not None else "an unknown model"
    except DeonticBenchError:
        model = "an unreadable configuration"
    moved = set_aside(out)
    return (
        f"--fresh: the run in {out} ({count} records, {model}) was moved to {moved}; "
        f"{out} starts afresh with none of it."
    )


def evaluate(spec: RunSpec | PreparedRun, options: RunOptions | None = None) -> Run:
    """Evaluate ``spec`` as ``options`` say (``RunOptions``: the folder, resumed when it
    holds this run, the caches, concurrency, batches, workers, progress); the ``Run``
    made, with what this session did (``Run.session``).

    Refused in the sentences ``deonticbench eval`` says.  A spec that asks for
    log-probabilities (``RunSpec.with_confidence("logprob")``) reads and writes no
    response cache (``evaluation.preflight.run_cache``).  Must not be called from a
    running event loop: ``await arun(spec, options)`` there.
    """
    if isinstance(spec, PreparedRun):
        return asyncio.run(arun(spec, options))  # which refuses options given twice
    # Prepared before the loop starts: loading the model and the cases blocks.
    return asyncio.run(arun(prepare(spec, options)))


# --- scoring ---------------------------------------------------------------------------


@dataclass
class ScoreResult:
    """The scores of one or more run folders (paper B.3: accuracy or macro-F1 with
    bootstrap intervals), per run x domain x mode x stage."""

    runs: list[RunScores]
    notes: list[str] = field(default_factory=list)
    """What loading skipped or noticed, each prefixed by its run folder."""

    @property
    def rows(self) -> list[ScoreRow]:
        """The long table: one typed row per run x domain x mode x stage."""
        return score_rows(self.runs)

    def to_frame(self) -> pandas.DataFrame:
        """The long table as a pandas DataFrame (pandas is an optional dependency)."""
        try:
            import pandas  # optional: pandas is no dependency of the package
        except ImportError:
            raise missing_extra(
                "ScoreResult.to_frame", "reliability", package="pandas", also="(or use .rows)"
            ) from None
        return pandas.DataFrame([row.to_dict() for row in self.rows], columns=ScoreRow.columns())


def score(
    runs: RunLike | Sequence[RunLike],
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    bootstrap_seed: int = 0,
) -> ScoreResult:
    """Score runs: a ``Run`` (what ``read_run`` or ``evaluate`` returned) or a run
    folder's path, or a list of them; every path is checked before any is scored.
    ``bootstrap`` replicates are drawn with ``bootstrap_seed``.  The library form of
    ``deonticbench score``."""
    items = [runs] if isinstance(runs, Run | str | os.PathLike) else list(runs)
    scores = score_runs(items, bootstrap=bootstrap, seed=bootstrap_seed)
    notes = [f"{s.run.path}: {note}" for s in scores for note in s.notes]
    return ScoreResult(scores, notes)


__all__ = [
    "CacheChoice",
    "FolderObserver",
    "PreparedRun",
    "ScoreResult",
    "ScoreRow",
    "arun",
    "dry_run",
    "evaluate",
    "prepare",
    "score",
    "write_run_results",
]
