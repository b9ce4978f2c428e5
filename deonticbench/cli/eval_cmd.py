"""``deonticbench eval``: run a model over the benchmark into a resumable run folder."""

from __future__ import annotations

import asyncio
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from ..api import CacheChoice, EvalResult, PreparedRun, arun, dry_run, prepare, score
from ..data.domains import DOMAINS, parse_domains
from ..data.selection import parse_ids, parse_limit
from ..data.sources import resolve_source
from ..errors import ConfigError
from ..evaluation.batching import BatchStats
from ..evaluation.progress import LiveProgress, summary_table
from ..evaluation.trials import goes_by_batch
from ..models import backend_notes, cacheable, end_of_life
from ..scoring.notes import run_notes
from ..solver import ExecutorKind, Limits
from ..store.batches import BatchLog
from ..store.config import CONFIG_NAME
from ..store.folder import RunFolder
from ..store.naming import new_run_pattern
from ..store.spec import AGENT_TOOL_SETS, DEFAULT_CONCURRENCY, AgentOptions, RunSpec
from ..vocabulary.exemplars import EXEMPLAR_CHOICES, ExemplarChoice
from ..vocabulary.modes import MODES, VERBAL_MODE, Mode, parse_modes
from ..vocabulary.protocols import DEFAULT_PROTOCOL, PROTOCOLS, check_protocol
from ._options import (
    RENAMED_SEED,
    RenamingCommand,
    data_dir_option,
    domains_option,
    executor_option,
    exemplar_seed_option,
    hub_option,
    json_option,
    limit_option,
    revision_option,
    split_option,
    timeout_option,
    workers_option,
)

if TYPE_CHECKING:
    from ..evaluation.dryrun import DryRunEstimate
    from ..models.registry import Cost


def _parse_modes(value: str) -> list[Mode]:
    return list(parse_modes(value))


def _parse_params(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param takes key=value, not {item!r}.")
        out[key.strip()] = value.strip()
    return out


def _confidence_modes(modes: list[Mode], confidence: tuple[str, ...]) -> list[Mode]:
    """``--confidence verbal``: the direct-verbal variant joins the run's modes."""
    if "verbal" in confidence and VERBAL_MODE not in modes:
        return [*modes, VERBAL_MODE]
    return modes


def _confidence_params(params: dict[str, str], confidence: tuple[str, ...]) -> dict[str, str]:
    """``--confidence logprob``: the request field ``logprobs: true`` (OpenAI wire format;
    part of the response-cache key, so such runs never share cached answers)."""
    if "logprob" in confidence:
        return {**params, "extra.logprobs": "true"}
    return params


def _positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise ConfigError(f"{name} must be at least 1, not {value}.")


@click.command("eval", cls=RenamingCommand, renamed=RENAMED_SEED)
@click.option(
    "--model",
    "model_spec",
    required=True,
    help="<backend>:<model>, e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5, "
    "openai-compatible:<model>@<url>, local:gemma3-270m, replay:<file>, reference "
    "(see deonticbench list).",
)
@domains_option()
@split_option()
@click.option(
    "--modes",
    default=",".join(MODES),
    show_default=True,
    help="direct (answer in prose), zero-shot and few-shot (write Prolog), the agentic "
    "agent-direct, agent-zero-shot, agent-few-shot (docs/agents.md), and the settings "
    "rules-given and facts-given (docs/settings.md), comma-separated; all: the paper's three.",
)
@click.option(
    "--exemplars",
    "exemplar_choice",
    type=click.Choice(EXEMPLAR_CHOICES),
    default="paper",
    show_default=True,
    help="The harness's exemplars (few-shot under --protocol harness, and the settings): "
    "the paper's seeded choice, or the most similar pool cases (BM25).  The paper "
    "protocol's few-shot shows upstream's own exemplars.",
)
@click.option(
    "--protocol",
    type=click.Choice(PROTOCOLS),
    default=DEFAULT_PROTOCOL,
    show_default=True,
    help="What direct, zero-shot and few-shot send and how they are read: paper (what "
    "upstream's released scripts send: their own prompt texts, read from the pinned upstream "
    "files, their exemplars, including airline's leave-one-out retrieval from the evaluated "
    "split, and their sampling per model) or harness (this project's templates, leak-free "
    "exemplars, the registry's sampling).  Agentic modes and the settings always use the "
    "harness's templates (docs/prompts.md, Protocols).",
)
@timeout_option("program_timeout")
@click.option(
    "--distractors",
    type=click.IntRange(min=0),
    default=None,
    help="Unrelated statute sections shuffled into each case's statutes; for SARA, the "
    "sections the case uses plus N others, 0 for those alone (docs/settings.md).",
)
@click.option(
    "--agent-tools",
    type=click.Choice(AGENT_TOOL_SETS),
    default=AgentOptions.tool_set,
    show_default=True,
    help="Agentic modes: file and run_prolog tools, or one sandboxed bash tool.",
)
@click.option(
    "--agent-max-turns",
    type=int,
    default=AgentOptions.max_turns,
    show_default=True,
    help="Agentic modes: model turns per trial.",
)
@click.option(
    "--agent-max-tokens",
    type=int,
    default=None,
    help="Agentic modes: tokens in+out per trial [default: no limit].",
)
@click.option(
    "--agent-timeout",
    type=float,
    default=AgentOptions.timeout_s,
    show_default=True,
    help="Agentic modes: wall-clock seconds per trial.",
)
@click.option("-k", "k", type=int, default=None, help="Samples per case [default: per domain].")
@click.option(
    "--attempts",
    type=int,
    default=None,
    help="Attempts per sample [default: 2; replay: as many as the file holds].",
)
@click.option(
    "--concurrency",
    type=int,
    default=DEFAULT_CONCURRENCY,
    show_default=True,
    help="HTTP requests in flight.",
)
@limit_option
@click.option(
    "--sample-id",
    "sample_ids",
    multiple=True,
    help="Only these case ids (comma-separated or repeated); with --fresh, a new run of them.",
)
@exemplar_seed_option
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run folder [default: the matching unfinished run, else runs/<model>-<split>-<time>].",
)
@click.option("--fresh", is_flag=True, help="Start a new run folder even if one matches.")
@data_dir_option()
@hub_option
@revision_option
@click.option(
    "--param",
    "params",
    multiple=True,
    help="Model parameter key=value, e.g. temperature=0 (repeatable; see eval/models.yaml).",
)
@click.option(
    "--cache",
    "cache_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Response cache file [default: responses.sqlite in the DEONTICBENCH_CACHE folder, "
    "else in the user cache folder].",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the response cache.")
@click.option(
    "--retry-errors", is_flag=True, help="Redo samples of this run whose last request failed."
)
@workers_option
@executor_option
@click.option(
    "--dry-run",
    is_flag=True,
    help="Count the calls and prompt tokens the first attempts will be billed for, and "
    "price their input with and without prompt caching and batches; then exit.",
)
@json_option
@click.option(
    "--assume-output-tokens",
    type=int,
    default=None,
    help="With --dry-run: price this many output tokens per sample too, for a full "
    "estimate (output cannot be known beforehand).",
)
@click.option(
    "--no-prompt-cache",
    is_flag=True,
    help="Do not ask the provider to cache shared prompt prefixes (on by default for "
    "Anthropic and OpenAI; docs/cost.md); every request goes out at once.",
)
@click.option(
    "--batch",
    "batch",
    is_flag=True,
    help="Send the prompted modes' requests through the provider's batch API (OpenAI, "
    "Anthropic: half price, results within 24 h); agentic modes stay interactive. "
    "Stopped or killed, the same command resumes its batches (docs/running.md).",
)
@click.option(
    "--score",
    "score_after",
    is_flag=True,
    help="Finish with the paper's metrics (Table 2 layout, bootstrap CIs) for this run and "
    "write its report.html (results.json is written after every run).",
)
@click.option(
    "--confidence",
    "confidence",
    type=click.Choice(["verbal", "logprob"]),
    multiple=True,
    help="Opt-in confidence signals (docs/reliability.md): verbal adds the direct-verbal "
    "mode (its own template: a last line 'Confidence: NN%'); logprob asks an "
    "OpenAI-compatible server for token log-probabilities.",
)
def command(
    model_spec: str,
    domains: str,
    split: str,
    modes: str,
    exemplar_choice: ExemplarChoice,
    protocol: str,
    program_timeout: float,
    distractors: int | None,
    agent_tools: str,
    agent_max_turns: int,
    agent_max_tokens: int | None,
    agent_timeout: float,
    k: int | None,
    attempts: int | None,
    concurrency: int,
    limit_text: str | None,
    sample_ids: tuple[str, ...],
    seed: int,
    out: Path | None,
    fresh: bool,
    data_dir: Path | None,
    hub: bool,
    revision: str | None,
    params: tuple[str, ...],
    cache_path: Path | None,
    no_cache: bool,
    retry_errors: bool,
    workers: int | None,
    executor: str,
    dry_run: bool,
    as_json: bool,
    assume_output_tokens: int | None,
    no_prompt_cache: bool,
    batch: bool,
    score_after: bool,
    confidence: tuple[str, ...],
) -> None:
    """Evaluate a model: records.jsonl and config.json in a run folder (resumable)."""
    _check_flags(
        model_spec,
        k=k,
        attempts=attempts,
        concurrency=concurrency,
        workers=workers,
        confidence=confidence,
        batch=batch,
        hub=hub,
        revision=revision,
        data_dir=data_dir,
        dry_run=dry_run,
        as_json=as_json,
        assume_output_tokens=assume_output_tokens,
    )
    spec = RunSpec(
        model=model_spec,
        params=tuple(_confidence_params(_parse_params(params), confidence).items()),
        domains=tuple(d.name for d in parse_domains(domains)),
        split=split,
        modes=tuple(_confidence_modes(_parse_modes(modes), confidence)),
        k=k,
        attempts=attempts,
        seed=seed,
        limit=parse_limit(limit_text),
        case_ids=tuple(parse_ids(sample_ids)),
        concurrency=concurrency,
        data=resolve_source(data_dir, hub=hub, revision=revision),
        exemplars=exemplar_choice,
        distractors=distractors,
        agent=AgentOptions(agent_tools, agent_max_turns, agent_max_tokens, agent_timeout),
        limits=Limits(timeout_s=program_timeout),
        protocol=check_protocol(protocol),
    )
    prepared = prepare(spec, out, fresh=fresh)
    logprob_uncached = "logprob" in confidence and not no_cache
    _model_notes(
        prepared,
        params=bool(params),
        quiet=as_json,
        logprob_uncached=logprob_uncached and not dry_run,
    )
    options = _Options(
        False if no_cache or logprob_uncached else cache_path,
        workers,
        retry_errors,
        cast(ExecutorKind, executor),  # a click.Choice of EXECUTORS
        batch,
        prompt_cache=not no_prompt_cache,
    )
    if dry_run:
        _dry_run(
            prepared,
            options,
            as_json=as_json,
            assume_output_tokens=assume_output_tokens,
            named_here=out is None,
        )
    else:
        _run(prepared, options, score_after=score_after)


def _run(prepared: PreparedRun, options: _Options, *, score_after: bool) -> None:
    """The run, then (``--score``) its table and report, then the notes under them."""
    notes: list[str] = []
    code = asyncio.run(_evaluate(prepared, options, notes))
    if code:
        sys.exit(code)
    if score_after:
        _score_and_report(prepared.out)
    # Last, under the numbers they explain (the summary, or the paper's table).
    for note in notes:
        click.echo(note)


def _check_flags(
    model_spec: str,
    *,
    k: int | None,
    attempts: int | None,
    concurrency: int,
    workers: int | None,
    confidence: tuple[str, ...],
    batch: bool,
    hub: bool,
    revision: str | None,
    data_dir: Path | None,
    dry_run: bool,
    as_json: bool,
    assume_output_tokens: int | None,
) -> None:
    """Flags that contradict each other or are out of range: one sentence each, before
    anything is prepared (so a refused command leaves no run folder behind)."""
    for name, value in (("-k", k), ("--attempts", attempts), ("--concurrency", concurrency)):
        _positive(name, value)
    _positive("--workers", workers)
    if "logprob" in confidence and batch:
        raise ConfigError(
            "--confidence logprob and --batch do not go together: batch results are read "
            "back through the response cache, which keeps no log-probabilities."
        )
    if revision and not hub:
        raise ConfigError("--revision picks a hub revision: use it with --hub.")
    if hub and data_dir:
        raise ConfigError("--hub and --data-dir name two data sources: choose one.")
    if (as_json or assume_output_tokens is not None) and not dry_run:
        raise ConfigError("--json and --assume-output-tokens go with --dry-run.")
    if assume_output_tokens is not None and assume_output_tokens < 0:
        raise ConfigError("--assume-output-tokens should be 0 or more.")


def _model_notes(
    prepared: PreparedRun, *, params: bool, quiet: bool, logprob_uncached: bool
) -> None:
    """One line each, on stderr: what the user should know about the model before the run."""
    model = prepared.model
    end = end_of_life(model)
    if end and not quiet:
        click.echo(
            f"note: {model.model_name} reaches end of life on {end} (the "
            f"{model.provider} SDK's deprecation table); choose a newer model.",
            err=True,
        )
    if not quiet:
        for sentence in backend_notes(model):
            click.echo(f"note: {sentence}", err=True)
    if params and not cacheable(model):
        click.echo(f"note: {model.provider} generates nothing, so --param is ignored.", err=True)
    if logprob_uncached:
        # The response cache keeps text, not log-probabilities: a cached answer would
        # leave its sample without the signal, silently.
        click.echo(
            "note: --confidence logprob does not read the response cache (it keeps no "
            "log-probabilities): every response is requested anew.",
            err=True,
        )


def _score_and_report(out: Path) -> None:
    """``eval --score``: Table 2 of the finished run and its HTML report."""
    # start-up: only ``eval --score`` needs the scorer and the report
    from ..report import REPORT_FILE, write_report
    from ..scoring.tables import render, table2

    runs = score(out).runs
    report = write_report(runs, out / REPORT_FILE)
    click.echo(render(table2(runs), "table"))
    click.echo(f"report: {report} (open it in any browser)", err=True)
    click.echo(f"more: deonticbench score {out} --out <folder> (CSV, per-case, figure)")


def _batches_left(out: Path) -> None:
    """After a stop: the batches still running at the provider, and what to do."""
    running = [c for c in BatchLog(out).chunks.values() if c.open]
    if running:
        click.echo(
            f"{len(running)} batches are still running at the provider (stopping does not "
            "cancel them): run the same command to collect their results, or "
            f"'deonticbench batches {out} --cancel' to cancel them.",
            err=True,
        )


@dataclass(frozen=True)
class _Options:
    """How to run, as opposed to what (the spec)."""

    cache: CacheChoice
    workers: int | None
    retry_errors: bool
    executor: ExecutorKind
    batch: bool = False
    prompt_cache: bool = True
    """``--no-prompt-cache``: False (how we ask, not what comes back)."""


def _dry_run(
    prepared: PreparedRun,
    options: _Options,
    *,
    as_json: bool = False,
    assume_output_tokens: int | None = None,
    named_here: bool = False,
) -> None:
    # start-up: ``deonticbench --help`` imports every command's module
    import json

    est = dry_run(
        prepared,
        cache=options.cache,
        retry_errors=options.retry_errors,
        batch=options.batch,
        prompt_cache=options.prompt_cache,
    )
    model, plan = prepared.model, prepared.plan
    if as_json:
        doc = est.to_json(batch=options.batch, assume_output_tokens=assume_output_tokens)
        doc = {"model": model.spec, "split": plan.split, **doc}
        click.echo(json.dumps(doc, indent=2))
        return
    folder = _dry_run_folder(prepared, named_here)
    click.echo(f"dry run for {model.spec} on {plan.split} -> {folder}")
    wide = max([9, *(len(r.mode) for r in est.rows)])
    header = f"{'domain':<13} {'mode':<{wide}} {'samples':>7} {'done':>5} {'cached':>6} "
    click.echo(header + f"{'calls':>6} {'prompt tokens':>13}")
    for r in est.rows:
        click.echo(
            f"{r.domain:<13} {r.mode:<{wide}} {r.samples:>7,} {r.done:>5,} "
            f"{r.response_hits:>6,} {r.calls:>6,} {r.prompt_tokens:>13,}"
            + ("  (first turns)" if r.first_turns else "")
        )
    click.echo(
        f"total: {est.calls:,} calls, {est.prompt_tokens:,} prompt tokens (an estimate) "
        f"for the first attempt of {est.samples_left:,} samples (tokens counted with "
        f"{est.token_count_method})."
    )
    for line in _price_lines(est, options.batch, assume_output_tokens):
        click.echo(line)
    retries = (est.attempts - 1) * est.prompted_left
    if retries:
        click.echo(
            f"retries with feedback add at most {retries:,} requests "
            "(one per prompted sample per extra attempt, only for failed programs or requests)."
        )
    if est.trials_left:
        click.echo(
            f"agentic trials never retry, but each of the {est.trials_left:,} trials may send "
            f"up to {est.max_turns:,} turns, each re-sending the conversation so far: only "
            "their first turns are counted above."
        )
    if est.count_calls:
        click.echo(
            f"nothing was generated: only {est.count_calls:,} calls to the free "
            "count_tokens endpoint were made."
        )
    else:
        click.echo("nothing was sent.")


def _dry_run_folder(prepared: PreparedRun, named_here: bool) -> str:
    """The folder the real run will write: the one given, the one it resumes, or, when it
    will name a new one, how that is named (the name holds the run's own start time, so
    the dry run's clock would name a folder the run never uses)."""
    if not named_here:
        return str(prepared.out)
    if (prepared.out / CONFIG_NAME).exists():
        return f"{prepared.out} (resumed)"
    return new_run_pattern(prepared.model.spec, prepared.plan.split)


def _price_lines(est: DryRunEstimate, batch: bool, assume_output: int | None) -> list[str]:
    """What the first attempts' input costs under each choice, and what cannot be known."""
    if est.prices is None:
        return ["no price for this model in eval/models.yaml: tokens only, no dollar figure."]

    def usd(cost: Cost | None) -> str:
        return "no price" if cost is None else f"${cost.usd:,.2f}"

    expected = est.expected
    lines = []
    if est.prompt_cache:
        lines.append(
            f"prompt caching: expect {expected.cache_write:,} tokens written to the cache and "
            f"{expected.cache_read:,} read from it (order of sending as the runner does it)."
        )
    # Only the choices this backend and these options leave open are priced.
    choices = [f"{usd(est.input_cost(caching=False, batch=False))} uncached"]
    if est.prompt_cache:
        choices.append(f"{usd(est.input_cost(caching=True, batch=False))} with prompt caching")
    if est.batchable:
        choices.append(f"{usd(est.input_cost(caching=False, batch=True))} as batches")
    if est.prompt_cache and est.batchable:
        choices.append(f"{usd(est.input_cost(caching=True, batch=True))} with both")
    interactive = (
        " (agentic trials stay interactive, at full price)"
        if (est.batchable and est.trials_left)
        else ""
    )
    lines.append(
        f"first-attempt input: {', '.join(choices)}{interactive}; "
        f"chosen: {usd(est.input_cost(caching=est.prompt_cache, batch=batch))}."
    )
    if not est.prompt_cache:
        lines.append("prompt caching is off for this run: no breakpoints, no cache key sent.")
    if assume_output is None:
        lines.append(
            "output, reasoning tokens and retries cannot be known beforehand: "
            "--assume-output-tokens N prices N output tokens per sample."
        )
    else:
        out = est.output_cost(assume_output, batch=batch)
        chosen = est.input_cost(caching=est.prompt_cache, batch=batch)
        total = None if out is None or chosen is None else chosen + out
        lines.append(
            f"with {assume_output:,} output tokens per sample: output {usd(out)}, "
            f"first attempts in all {usd(total)} (retries and later agent turns not included)."
        )
    return lines


class _Progress(LiveProgress):
    """The live display, plus what the folder held when it was opened."""

    batch_line = ""
    """``eval --batch``: batches in flight, requests pending / done / failed, elapsed."""

    def note(self, text: str) -> None:
        click.echo(text, err=True)

    def batches(self, stats: BatchStats) -> None:
        line = stats.line()
        if self.tty:
            self.batch_line = line
            self._refresh(force=False)
        elif line.split(",")[:2] != self.batch_line.split(",")[:2]:
            # On a log, a line when the counts move (not every second of elapsed time).
            self.batch_line = line
            self._print(line)

    def _total_line(self) -> str:
        total = super()._total_line()
        return f"{total} | {self.batch_line}" if self.batch_line and self.tty else total

    def opened(self, run: RunFolder) -> None:
        if run.loaded.truncated:
            click.echo("note: cut a truncated last line from records.jsonl (crash).", err=True)
        if run.loaded.dropped_errors:
            click.echo(
                f"redoing {run.loaded.dropped_errors} samples whose last request failed.",
                err=True,
            )
        click.echo(f"run folder: {run.path}", err=True)


async def _evaluate(prepared: PreparedRun, options: _Options, notes: list[str]) -> int:
    """Run; ``notes`` receives the sentences that explain the summary's numbers (see
    ``scoring.notes.run_notes``), for the caller to print under the last table."""
    loop = asyncio.get_running_loop()
    _stop_on_signals(loop)
    _preflight_notes(prepared, options)
    progress = _Progress()
    try:
        try:
            result = await arun(
                prepared,
                progress,
                cache=options.cache,
                retry_errors=options.retry_errors,
                workers=options.workers,
                executor=options.executor,
                batch=options.batch,
                prompt_cache=options.prompt_cache,
            )
        finally:
            if progress.rows:
                progress.finish()
        return _closing_lines(prepared, result, notes)
    except asyncio.CancelledError:
        click.echo("interrupted before any work; nothing was changed.", err=True)
        return 130
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def _stop_on_signals(loop: asyncio.AbstractEventLoop) -> None:
    """Ctrl-C or SIGTERM cancels the running task once: the run stops cleanly."""
    task = asyncio.current_task()
    assert task is not None
    stopping = False

    def stop() -> None:
        nonlocal stopping
        if stopping:
            return  # already stopping; a second Ctrl-C must not break the clean-up
        stopping = True
        click.echo("stopping: finished records are kept...", err=True)
        task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)


def _preflight_notes(prepared: PreparedRun, options: _Options) -> None:
    """What the user should know before the run starts: under ``--batch``, the modes
    that stay interactive (the runner's rule, ``goes_by_batch``)."""
    interactive = [m for m in prepared.spec.modes if not goes_by_batch(m)]
    if options.batch and interactive:
        click.echo(
            f"note: --batch sends the prompted modes as batches; {', '.join(interactive)} "
            "stay interactive (a trial's next turn depends on its last).",
            err=True,
        )


def _closing_lines(prepared: PreparedRun, result: EvalResult, notes: list[str]) -> int:
    """The summary table and the closing line of a run; the exit code (130: stopped)."""
    click.echo(summary_table(result.records, order=DOMAINS))
    reference = prepared.model.provider == "reference"
    notes.extend(f"note: {n}" for n in run_notes(result.records, reference=reference))
    # What the settings left out, and why (also in config.json's "settings").
    notes.extend(f"note: {text}" for text in prepared.plan.setting_notes.values())
    misses = getattr(prepared.model, "misses", 0)
    if prepared.model.provider == "replay" and misses:
        # A partial replay is honest, but its errors must not pass unremarked.
        notes.append(
            f"note: {misses} sample(s) found no saved response in {prepared.model.spec} "
            "(or a saved trajectory that ended early); they are recorded as errors."
        )
    click.echo(
        f"{result.new} new records, {result.resumed} kept from before, "
        f"{result.calls} calls sent, "
        f"{result.cache_hits} cached responses used; "
        f"records in {result.records_path}",
        err=True,
    )
    if result.interrupted:
        click.echo(
            f"interrupted: {result.missing} samples left; run the same command to resume.",
            err=True,
        )
        _batches_left(prepared.out)
        return 130
    return 0
