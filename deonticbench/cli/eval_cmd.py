"""``deonticbench eval``: run a model over the benchmark into a resumable run folder."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import click

from ..errors import ConfigError, DeonticBenchError
from ..modes import MODES, Mode


def _parse_modes(value: str) -> list[Mode]:
    if value.strip().lower() == "all":
        return list(MODES)
    modes = [m.strip().lower() for m in value.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise ConfigError(
            f"unknown mode {', '.join(unknown) or repr(value)}; choose from "
            f"{', '.join(MODES)} (comma-separated) or all."
        )
    return [cast(Mode, m) for m in dict.fromkeys(modes)]  # each once, in the order typed


def _parse_params(values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--param takes key=value, not {item!r}.")
        out[key.strip()] = value.strip()
    return out


def _positive(name: str, value: int | None) -> None:
    if value is not None and value < 1:
        raise ConfigError(f"{name} must be at least 1, not {value}.")


@click.command("eval")
@click.option(
    "--model",
    "model_spec",
    required=True,
    help="<backend>:<model>, e.g. openai:gpt-4.1, anthropic:claude-sonnet-4-5, "
    "openai-compatible:<model>@<url>, local:gemma3-270m, replay:<file>, reference "
    "(see deonticbench list).",
)
@click.option(
    "--domains", default="all", show_default=True, help="Domains, comma-separated, or all."
)
@click.option(
    "--split",
    default="hard",
    show_default=True,
    help="smoke (5 cases), hard (the paper's) or whole.",
)
@click.option(
    "--modes",
    default="direct,zero-shot,few-shot",
    show_default=True,
    help="direct (answer in prose), zero-shot and few-shot (write Prolog), comma-separated.",
)
@click.option("-k", "k", type=int, default=None, help="Samples per case (default: per domain).")
@click.option(
    "--attempts",
    type=int,
    default=None,
    help="Attempts per sample [default: 2; replay: as many as the file holds].",
)
@click.option("--concurrency", type=int, default=8, show_default=True, help="Requests in flight.")
@click.option(
    "--limit",
    "limit_text",
    default=None,
    help="Cases per domain: the first N (10), or a range counted from 1 (11-20).",
)
@click.option(
    "--sample-id",
    "sample_ids",
    multiple=True,
    help="Only these case ids (comma-separated or repeated); with --fresh, a new run of them.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the few-shot exemplar choice."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run folder [default: the matching unfinished run, else runs/<model>-<split>-<time>].",
)
@click.option("--fresh", is_flag=True, help="Start a new run folder even if one matches.")
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Local data mirror (upstream layout) [default: DEONTICBENCH_DATA, else the hub].",
)
@click.option("--hub", is_flag=True, help="Load cases from the Hugging Face hub.")
@click.option("--revision", default=None, help="Hub dataset revision (with --hub).")
@click.option(
    "--param",
    "params",
    multiple=True,
    help="Model parameter key=value, e.g. temperature=0 (repeatable; see eval/models.yaml).",
)
@click.option(
    "--cache",
    "cache_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Response cache file [default: DEONTICBENCH_CACHE, else the user cache folder].",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the response cache.")
@click.option(
    "--retry-errors", is_flag=True, help="Redo samples of this run whose last request failed."
)
@click.option("--workers", type=int, default=None, help="Prolog workers (default: cores).")
@click.option("--dry-run", is_flag=True, help="Count requests and prompt tokens, then exit.")
@click.option(
    "--score",
    "score_after",
    is_flag=True,
    help="Finish with the paper's metrics (Table 2 layout, bootstrap CIs) for this run and "
    "write its report.html (results.json is written after every run).",
)
def command(
    model_spec: str,
    domains: str,
    split: str,
    modes: str,
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
    dry_run: bool,
    score_after: bool,
) -> None:
    """Evaluate a model: records.jsonl and config.json in a run folder (resumable)."""
    from ..data import SPLITS
    from ..domains import parse_domains
    from ..models import load_model
    from ..runner import build_config, plan_run
    from ..selection import parse_ids, parse_limit
    from ..solver import Limits
    from ..sources import resolve_source
    from ..store import find_resumable, new_run_path

    for name, value in (("-k", k), ("--attempts", attempts), ("--concurrency", concurrency)):
        _positive(name, value)
    limit = parse_limit(limit_text)
    case_ids = parse_ids(sample_ids) or None
    _positive("--workers", workers)
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}.")
    chosen = parse_domains(domains)
    mode_list = _parse_modes(modes)
    if revision and not hub:
        raise ConfigError("--revision picks a hub revision: use it with --hub.")
    if hub and data_dir:
        raise ConfigError("--hub and --data-dir name two data sources: choose one.")
    source = resolve_source(data_dir, hub=hub, revision=revision)
    model = load_model(model_spec, overrides=_parse_params(params) or None)
    if params and not model.cacheable:
        click.echo(f"note: {model.provider} generates nothing, so --param is ignored.", err=True)
    if attempts is None:
        # A replay can only give as many attempts as were saved.
        from ..runner import DEFAULT_ATTEMPTS

        attempts = getattr(model, "max_attempts", None) or DEFAULT_ATTEMPTS
    plan = plan_run(
        chosen,
        split=split,
        modes=mode_list,
        source=source,
        k=k,
        limit=limit,
        seed=seed,
        case_ids=case_ids,
    )
    limits = Limits()
    config = build_config(
        model,
        plan,
        source=source,
        attempts=attempts,
        limits=limits,
        session={
            "limit": limit_text,
            "sample_ids": case_ids,
            "concurrency": concurrency,
            "argv": list(sys.argv),
        },
    )
    if out is None:
        found = None if fresh else find_resumable(config)
        out = found or new_run_path(model.spec, split)

    options = _Options(out, cache_path, no_cache, attempts, concurrency, workers, retry_errors)
    if dry_run:
        _dry_run(model, plan, config, options)
        return
    started = time.monotonic()
    code = asyncio.run(_evaluate(model, plan, config, options))
    if code not in (0, 130):
        sys.exit(code)
    from ..run_outputs import write_run_outputs

    # results.json after every run, a stopped one too (it says what is there so far).
    outputs = write_run_outputs(
        out, wall_time_s=time.monotonic() - started, html=score_after and code == 0
    )
    if outputs is not None:
        click.echo(f"wrote {', '.join(str(p) for p in outputs.written)}", err=True)
    if code:
        sys.exit(code)
    if score_after and outputs is not None:
        from ..report import render, table2

        click.echo(render(table2([outputs.scores]), "table"))
        click.echo(f"more: deonticbench score {out} --out <folder> (CSV, per-case, figure)")


@dataclass(frozen=True)
class _Options:
    """How to run, as opposed to what (the plan) and with which model."""

    out: Path
    cache_path: Path | None
    no_cache: bool
    attempts: int
    concurrency: int
    workers: int | None
    retry_errors: bool


def _open_cache(options: _Options) -> Any:
    from ..store import ResponseCache, default_cache_path

    if options.no_cache:
        return None
    return ResponseCache(options.cache_path or default_cache_path())


def _dry_run(model: Any, plan: Any, config: dict[str, Any], options: _Options) -> None:
    from ..models import count_prompt_tokens, token_count_method
    from ..runner import estimate
    from ..store import CONFIG_NAME, RECORDS_NAME, check_resumable, read_records

    if (options.out / CONFIG_NAME).exists():
        # The real run would refuse this folder: say so now, not after the estimate.
        check_resumable(options.out, config)
    done = (
        read_records(options.out / RECORDS_NAME).records
        if (options.out / RECORDS_NAME).exists()
        else {}
    )
    if options.retry_errors:
        done = {key: r for key, r in done.items() if r.final.error is None}
    cache = _open_cache(options)
    try:
        est = estimate(
            model,
            plan,
            done=done,
            cache=cache,
            attempts=options.attempts,
            count_tokens=count_prompt_tokens,
        )
    finally:
        if cache is not None:
            cache.close()
    click.echo(f"dry run for {model.spec} on {plan.split} -> {options.out}")
    header = f"{'domain':<13} {'mode':<9} {'samples':>7} {'done':>5} {'cached':>6} "
    click.echo(header + f"{'requests':>8} {'prompt tokens':>13}")
    for r in est.rows:
        click.echo(
            f"{r.domain:<13} {r.mode:<9} {r.samples:>7} {r.done:>5} {r.cached:>6} "
            f"{r.requests:>8} {r.prompt_tokens:>13,}"
        )
    click.echo(
        f"total: {est.requests} requests, {est.prompt_tokens:,} prompt tokens for the first "
        f"attempt of {est.samples_left} samples (tokens counted with {token_count_method(model)})."
    )
    retries = (options.attempts - 1) * est.samples_left
    if retries:
        click.echo(
            f"retries with feedback add at most {retries} requests "
            "(one per sample per extra attempt, only for failed programs or requests)."
        )
    click.echo("nothing was sent.")


async def _evaluate(model: Any, plan: Any, config: dict[str, Any], options: _Options) -> int:
    from ..domains import DOMAINS
    from ..progress import LiveProgress, summary_table
    from ..runner import Runner
    from ..solver import Limits, Solver
    from ..store import RunFolder

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    interrupted = False

    def stop() -> None:
        nonlocal interrupted
        if interrupted:
            return  # already stopping; a second Ctrl-C must not break the clean-up
        interrupted = True
        click.echo("stopping: finished records are kept...", err=True)
        task.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)
    try:
        # Before any work: a missing key or an unreachable server is one sentence, and so
        # is an unusable cache or sandbox; only then is the run folder touched.
        await model.check()
        cache = _open_cache(options)
        solver = Solver(workers=options.workers, limits=Limits(**config["limits"]))
        try:
            with RunFolder.open(options.out, config, retry_errors=options.retry_errors) as run:
                if run.loaded.truncated:
                    click.echo(
                        "note: cut a truncated last line from records.jsonl (crash).", err=True
                    )
                if run.loaded.dropped_errors:
                    click.echo(
                        f"redoing {run.loaded.dropped_errors} samples whose last request failed.",
                        err=True,
                    )
                click.echo(f"run folder: {options.out}", err=True)
                progress = LiveProgress()
                runner = Runner(
                    model,
                    solver,
                    run,
                    cache,
                    attempts=options.attempts,
                    concurrency=options.concurrency,
                    observer=progress,
                )
                try:
                    await runner.run(plan)
                except asyncio.CancelledError:
                    interrupted = True
                finally:
                    progress.finish()
        finally:
            # Kill running programs now rather than waiting for their timeouts.
            solver.close()
            if cache is not None:
                cache.close()
        result = runner.result
        in_plan = {key for unit in plan.units for key in unit.sample_keys()}
        records = [r for key, r in run.done.items() if key in in_plan]
        click.echo(summary_table(records, order=DOMAINS))
        click.echo(
            f"{result.new} new records, {result.resumed} kept from before, "
            f"{result.requests} requests sent, {result.cache_hits} cached responses used; "
            f"records in {run.records_path}",
            err=True,
        )
        missing = len(in_plan) - len(records)
        if interrupted:
            click.echo(
                f"interrupted: {missing} samples left; run the same command to resume.",
                err=True,
            )
            return 130
        return 0
    except asyncio.CancelledError:
        click.echo("interrupted before any work; nothing was changed.", err=True)
        return 130
    except DeonticBenchError:
        raise
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await model.aclose()
