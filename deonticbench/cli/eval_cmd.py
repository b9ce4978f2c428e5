"""``deonticbench eval``: run a model over the benchmark into a resumable run folder."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import click

from ..api import PreparedRun, arun, dry_run, prepare, score
from ..data.domains import DOMAINS
from ..evaluation.progress import ConsoleProgress, summary_table
from ..evaluation.run_options import EvalOptions, RunOptions
from ..evaluation.stopping import stopped_by_signals
from ..evaluation.trials import batch_interactive_note
from ..scoring.notes import closing_notes
from ..store.batches import BatchLog
from ..store.run import Run
from ..store.spec import (
    AGENT_TOOL_SETS,
    CONFIDENCE_SIGNALS,
    AgentOptions,
)
from ..vocabulary.exemplar_choice import DEFAULT_EXEMPLARS, EXEMPLAR_CHOICES
from ..vocabulary.modes import AGENT_MODES, MODES
from ..vocabulary.protocols import DEFAULT_PROTOCOL, PROTOCOLS
from ._options import (
    assume_output_tokens_option,
    data_dir_option,
    domains_option,
    dry_run_option,
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


@click.command("eval")
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
    help="direct (answer in prose), zero-shot and few-shot (write Prolog), the agentic "
    "agent-direct, agent-zero-shot, agent-few-shot (docs/agents.md), and the settings "
    "rules-given and facts-given (docs/settings.md), comma-separated; all: the paper's three.  "
    f"[default: {','.join(MODES)}; under --protocol dar, {','.join(AGENT_MODES)}]",
)
@click.option(
    "--exemplars",
    "exemplar_choice",
    type=click.Choice(EXEMPLAR_CHOICES),
    default=DEFAULT_EXEMPLARS,
    show_default=True,
    help="The harness's exemplars (few-shot under --protocol harness, and the settings): "
    "seeded (chosen by --exemplar-seed), or retrieved (the most similar pool cases, BM25).  "
    "The paper protocol's few-shot shows upstream's own exemplars.",
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
    "exemplars, the registry's sampling); dar: the agentic modes only, on DAR's tasks and "
    "verifier (docs/agents.md).  Otherwise agentic modes and settings use the harness's.",
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
    default=RunOptions.concurrency,
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
    metavar="KEY=VALUE",
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
@dry_run_option
@json_option
@assume_output_tokens_option
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
    type=click.Choice(CONFIDENCE_SIGNALS),
    multiple=True,
    help="Opt-in confidence signals (docs/reliability.md): verbal adds the direct-verbal "
    "mode (its own template: a last line 'Confidence: NN%'); logprob asks an "
    "OpenAI-compatible server for token log-probabilities.",
)
def command(**options: Any) -> None:
    """Evaluate a model: records.jsonl and config.json in a run folder (resumable)."""
    args = EvalOptions(**options)
    # The library's two objects: what to run and how; then the library's steps.
    progress = ConsoleProgress()
    prepared = prepare(args.spec(), args.run_options(progress))
    for sentence in args.notes_before_run(prepared.model, prepared.spec):
        click.echo(f"note: {sentence}", err=True)
    if args.dry_run:
        _dry_run(prepared, as_json=args.as_json, assume=args.assume_output_tokens)
    else:
        _run(prepared, progress, score_after=args.score_after)


def _run(prepared: PreparedRun, progress: ConsoleProgress, *, score_after: bool) -> None:
    """The run, then (``--score``) its table and report, then the notes under them."""
    notes: list[str] = []
    code = asyncio.run(_evaluate(prepared, progress, notes))
    if code:
        sys.exit(code)
    if score_after:
        _score_and_report(prepared.out)
    # Last, under the numbers they explain (the summary, or the paper's table).
    for note in notes:
        click.echo(note)


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


def _dry_run(prepared: PreparedRun, *, as_json: bool, assume: int | None) -> None:
    from ..evaluation.dryrun_text import dry_run_text  # start-up: only for --dry-run

    est = dry_run(prepared)
    text = dry_run_text(
        est,
        model=prepared.model.spec,
        split=prepared.plan.split,
        folder=prepared.folder_text,
        batch=prepared.options.batch,
        assume_output=assume,
        as_json=as_json,
    )
    click.echo(text)


async def _evaluate(prepared: PreparedRun, progress: ConsoleProgress, notes: list[str]) -> int:
    """Run; ``notes`` receives the sentences that explain the summary's numbers (see
    ``scoring.notes.run_notes``), for the caller to print under the last table.
    ``progress`` is the run options' observer, finished here when it drew rows."""
    with stopped_by_signals(lambda text: click.echo(text, err=True)):
        batch = prepared.options.batch
        interactive = batch_interactive_note(prepared.spec.modes) if batch else None
        if interactive:
            click.echo(f"note: {interactive}", err=True)
        try:
            try:
                result = await arun(prepared)
            finally:
                if progress.rows:
                    progress.finish()
            return _closing_lines(prepared, result, notes)
        except asyncio.CancelledError:
            click.echo("interrupted before any work; nothing was changed.", err=True)
            return 130


def _closing_lines(prepared: PreparedRun, result: Run, notes: list[str]) -> int:
    """The summary table and the closing line of a run; the exit code (130: stopped)."""
    session = result.session
    assert session is not None  # arun says what its session did
    in_plan = prepared.sample_keys()
    records = [r for r in result.records if r.key in in_plan]
    click.echo(summary_table(records, order=DOMAINS))
    model = prepared.model
    closing = closing_notes(
        records,
        reference=model.provider == "reference",
        setting_notes=prepared.plan.setting_notes.values(),
        replay_misses=getattr(model, "misses", 0) if model.provider == "replay" else 0,
        replay_file=model.spec,
    )
    notes.extend(f"note: {n}" for n in closing)
    click.echo(
        f"{session.new} new records, {session.resumed} kept from before, "
        f"{session.calls} calls sent, "
        f"{session.cache_hits} cached responses used; "
        f"records in {result.records_path}",
        err=True,
    )
    if session.interrupted:
        click.echo(
            f"interrupted: {session.missing} samples left; run the same command to resume.",
            err=True,
        )
        running = BatchLog(prepared.out).still_running_note(prepared.out)
        if running:
            click.echo(running, err=True)
        return 130
    return 0
