"""``deonticbench score``: score run folders.  Thin: the library does the work."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..scoring.comparisons import requested_comparisons
from ..scoring.notes import against_paper_notes
from ..scoring.rereading import SensitivityRow, labelled_sensitivity
from ..scoring.rows import require_scorable
from ..scoring.scores import RunScores, run_folders, score_runs
from ..scoring.stdout import stdout_text
from ..scoring.tables import TABLE_FORMATS, terminal_width
from ..vocabulary.protocols import DAR_PROTOCOL, READERS
from ._options import (
    bootstrap_options,
    json_option,
    reader_sensitivity_option,
    signal_option,
)

if TYPE_CHECKING:
    from ..reliability.api import ScoreExtras
    from ..scoring.comparisons import Comparison


@click.command(name="score")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@bootstrap_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(TABLE_FORMATS),
    default="table",
    show_default=True,
    help="What to print: Table 2 as text/markdown/latex, or one CSV table: the long "
    "table (with the paper's cells under --against paper) or, with --compare, the paired "
    "differences.",
)
@json_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write every table, the per-case CSV and the figures to this folder.",
)
@click.option(
    "--against",
    type=click.Choice(["paper", "dar"]),
    help="Show the published rows beside: the paper's, or DAR's Appendix Table 1 (runs of "
    "the dar protocol only).",
)
@click.option("--compare", is_flag=True, help="Paired differences of each run against the first.")
@click.option(
    "--pair",
    "pairs",
    multiple=True,
    metavar="MODE:BASELINE",
    help="Paired difference MODE - BASELINE on the cases both scored, e.g. "
    "rules-given:zero-shot; each mode from the first run folder that has it (repeatable).",
)
@click.option(
    "--pair-modes",
    is_flag=True,
    help="Paired differences of each agentic mode against its prompted counterpart on the "
    "same cases (agent-zero-shot - zero-shot), from the same run folder or another given one.",
)
@click.option(
    "--reliability",
    is_flag=True,
    help="Also the confidence signals' calibration and selective metrics "
    "(docs/reliability.md); with --out, in results.json and report.html too.",
)
@click.option(
    "--costs",
    "costs_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="YAML of what an abstention and a wrong answer cost per domain: expected cost per "
    "case of always-answer, always-abstain and the best selective policy.",
)
@signal_option
@click.option(
    "--reading",
    type=click.Choice(READERS),
    help="Read every run's stored replies (first attempts and retries) again with this "
    "reader before scoring: paper (upstream's scripts') or harness; programs run again in "
    "the sandbox where needed; records.jsonl is not changed.",
)
@reader_sensitivity_option
@click.option(
    "--dar-rules",
    is_flag=True,
    help="Also score each run imported with import-harbor by DAR's rules (their default "
    "and --errors-as-incorrect), beside the paper's; given Harbor jobs folders instead, "
    "print what DAR's own scorer prints for them (docs/harbor.md).",
)
@click.option("--errors-as-incorrect", is_flag=True, help="DAR's strict scoring, for jobs folders.")
@click.option(
    "--dar-scorer",
    type=click.Choice(["auto", "adapters", "meta-harness"]),
    default="auto",
    show_default=True,
    help="With --dar-rules on jobs folders: DAR's adapters' scorer or its meta-harness "
    "(terminus-KIRA) scorer; auto takes meta-harness when every trial's agent is loaded "
    "by import path.",
)
def command(
    run_dirs: tuple[Path, ...],
    replicates: int,
    bootstrap_seed: int,
    fmt: str,
    as_json: bool,
    out: Path | None,
    against: str | None,
    compare: bool,
    pairs: tuple[str, ...],
    pair_modes: bool,
    reliability: bool,
    costs_file: Path | None,
    signal: str,
    reading: str | None,
    reader_sensitivity: bool,
    dar_rules: bool,
    errors_as_incorrect: bool,
    dar_scorer: str,
) -> None:
    """Score RUN_DIR(s): accuracy / macro-F1 with bootstrap 95% intervals (paper B.3).

    An eval set's folder stands for its run folders, in the set's order."""
    run_dirs = tuple(run_folders(run_dirs))
    if dar_rules:
        from ..integrations.harbor.dar_scoring import jobs_folders_report  # start-up

        report = jobs_folders_report(run_dirs, errors_as_incorrect, dar_scorer, as_json=as_json)
        if report is not None:  # Harbor jobs folders: what DAR's own scorer prints
            return click.echo(report, nl=False)
    fmt = _checked_options(run_dirs, fmt, as_json, compare, signal)
    scores = _scores(run_dirs, reading, replicates, bootstrap_seed, against == "paper")
    comparisons, across = requested_comparisons(
        scores, compare, pairs, pair_modes, replicates, bootstrap_seed
    )
    _say([f"note: {across}"] if across else [])
    extras = None
    if reliability or costs_file is not None:
        # start-up: ``deonticbench --help`` imports every command's module
        from ..reliability.api import score_extras

        extras = score_extras(
            scores, reliability=reliability, costs=costs_file, signal=signal,
            bootstrap=replicates, seed=bootstrap_seed,
        )  # fmt: skip
        _say(extras.notes)
    sensitivity = []
    if reader_sensitivity:
        sensitivity = labelled_sensitivity(scores, bootstrap=replicates, seed=bootstrap_seed)
    _show(scores, comparisons, extras, sensitivity, fmt, out, against, dar_rules)


def _show(
    scores: list[RunScores],
    comparisons: list[Comparison],
    extras: ScoreExtras | None,
    sensitivity: list[tuple[str, SensitivityRow]],
    fmt: str,
    out: Path | None,
    against: str | None,
    dar_rules: bool,
) -> None:
    """The tables on stdout, or every file written to ``out``.  DAR's readings are in
    every run's JSON (``dar_readings``: stdout's document, results.json, the report);
    in the text formats their tables follow the others, so that --json and csv stay
    one loadable document."""
    paper = against == "paper"
    dar_table = against == "dar"
    if dar_rules:
        # start-up: ``deonticbench --help`` imports every command's module
        from ..integrations.harbor.dar_scoring import require_dar_views

        require_dar_views(scores)
    if out is None:
        tables = extras.tables if extras is not None else None
        text, notes = stdout_text(
            scores, comparisons, fmt, paper, sensitivity, tables, against_dar=dar_table
        )
        click.echo(text, nl=False)
        _say(notes, wrap=False)
    dar_run = any(s.run.protocol == DAR_PROTOCOL for s in scores)
    if dar_rules or dar_table or dar_run:
        if out is not None or fmt not in ("json", "csv"):
            _print_dar_tables(scores, dar_rules, dar_table, fmt)
        elif fmt == "csv":
            _say(["note: DAR's readings are in score --json and in --out's results.json."])
    if out is not None:
        # start-up: ``deonticbench --help`` imports every command's module
        from ..report.score_files import write_score_files

        written = write_score_files(out, scores, comparisons, paper, extras, sensitivity)
        click.echo(f"wrote {len(written)} files to {out}: {', '.join(p.name for p in written)}")


def _checked_options(
    run_dirs: tuple[Path, ...], fmt: str, as_json: bool, compare: bool, signal: str
) -> str:
    """The output format asked for (``--json`` is the format ``json``), once the options
    that can be checked before any scoring are."""
    if as_json:
        fmt = "json"
    if compare and len(run_dirs) < 2:
        raise click.UsageError("--compare needs at least two run folders.")
    # start-up: ``deonticbench --help`` imports every command's module
    from ..reliability.signals import check_signal

    check_signal(signal)
    return fmt


def _scores(
    run_dirs: Sequence[Path], reading: str | None, replicates: int, seed: int, paper: bool
) -> list[RunScores]:
    """The runs scored, each run's notes said; with ``--reading`` each read again first,
    one line per run saying what was read again; with ``--against paper``, what sets the
    runs apart from the paper's said too."""
    if not reading:
        scores = score_runs(run_dirs, bootstrap=replicates, seed=seed)
    else:
        from ..scoring.rereading import reread_scores  # start-up: only --reading needs it

        scored = reread_scores(run_dirs, reading, replicates, seed)
        _say(line for _, line in scored)
        scores = [s for s, _ in scored]
    _say(f"{s.run.path}: {note}" for s in scores for note in s.notes)
    require_scorable(scores)
    if paper:
        protocols, splits = against_paper_notes([s.run for s in scores])
        _say(protocols)
        _say(splits, wrap=False)
    return scores


def _say(notes: Iterable[str], wrap: bool = True) -> None:
    """Notes on stderr, each within the terminal's width, continuation lines indented."""
    for note in notes:
        width = terminal_width()
        text = textwrap.fill(note, width, subsequent_indent="  ", break_on_hyphens=False)
        click.echo(text if wrap else note, err=True)


def _print_dar_tables(scores: list[RunScores], rules: bool, table: bool, fmt: str) -> None:
    """--dar-rules: each imported run scored DAR's way beside the paper's; --against dar:
    DAR's published cells beside the runs of the dar protocol."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..integrations.harbor.dar_scoring import against_dar_text, dar_rules_text

    click.echo(dar_rules_text(scores, every=rules), nl=False)
    if table:
        notes, text = against_dar_text(scores, fmt)
        _say(notes)
        click.echo(text, nl=False)
