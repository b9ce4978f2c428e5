"""``deonticbench score``: score run folders.  Thin: the library does the work."""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import ConfigError, DeonticBenchError
from ..scoring.agent_format import FormatRow, format_rows, format_table
from ..scoring.comparisons import Comparison, compare, compare_modes, comparisons_note
from ..scoring.comparisons import pair_modes as pair_modes_of
from ..scoring.notes import protocol_notes
from ..scoring.rereading import sensitivity_table
from ..scoring.rows import NothingToScoreError, require_scorable
from ..scoring.scores import RunScores, score_runs
from ..scoring.tables import (
    COMPARISON_COLUMNS,
    TABLE_FORMATS,
    Table,
    against_paper,
    cases_csv,
    comparison_rows,
    comparison_table,
    long_csv,
    long_csv_with_paper,
    render,
    render_csv,
    render_markdown,
    table2,
    terminal_width,
    to_json,
)
from ..scoring.usage import UsageRow, usage_rows, usage_table
from ..vocabulary.modes import ALL_MODES
from ..vocabulary.protocols import READERS
from ._options import (
    RENAMED_BOOTSTRAP_SEED,
    RenamingCommand,
    bootstrap_options,
    json_option,
    reader_sensitivity_option,
    signal_option,
)

if TYPE_CHECKING:
    from ..reliability.api import ScoreExtras
    from ..scoring.rereading import SensitivityRow

FORMATS = (*TABLE_FORMATS, "json")


class ReportWriteError(DeonticBenchError):
    pass


@click.command(name="score", cls=RenamingCommand, renamed=RENAMED_BOOTSTRAP_SEED)
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@bootstrap_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="What to print: Table 2 as text/markdown/latex, or one CSV table: the long "
    "table (with the paper's cells under --against paper) or, with --compare, the paired "
    "differences (json: the old spelling of --json).",
)
@json_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write every table, the per-case CSV and the figures to this folder.",
)
@click.option("--against", type=click.Choice(["paper"]), help="Show the published rows beside.")
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
    "and --errors-as-incorrect), beside the paper's (docs/harbor.md).",
)
def command(
    run_dirs: tuple[Path, ...],
    replicates: int,
    seed: int,
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
) -> None:
    """Score RUN_DIR(s): accuracy / macro-F1 with bootstrap 95% intervals (paper B.3)."""
    if fmt == "json":
        click.echo(
            "note: score --format json is now --json; the old spelling goes in a later release.",
            err=True,
        )
    elif as_json:
        fmt = "json"
    if compare and len(run_dirs) < 2:
        raise click.UsageError("--compare needs at least two run folders.")
    # start-up: ``deonticbench --help`` imports every command's module
    from ..reliability.signals import SIGNALS

    if signal not in SIGNALS:
        # Checked before scoring: a misspelt signal would otherwise leave no cost table.
        raise ConfigError(f"--signal takes one of {', '.join(SIGNALS)}, not {signal!r}.")
    scores = (
        _reread_scores(run_dirs, reading, replicates, seed)
        if reading
        else score_runs(run_dirs, bootstrap=replicates, seed=seed)
    )
    for s in scores:
        for note in s.notes:
            click.echo(_wrapped(f"{s.run.path}: {note}"), err=True)
    require_scorable(scores)
    if against == "paper":
        _note_against_paper(scores)
    comparisons = _comparisons(scores, compare, pairs, pair_modes, replicates, seed)
    extras = None
    if reliability or costs_file is not None:
        # start-up: ``deonticbench --help`` imports every command's module
        from ..reliability.api import score_extras

        extras = score_extras(
            scores, reliability=reliability, costs=costs_file, signal=signal,
            bootstrap=replicates, seed=seed,
        )  # fmt: skip
        for note in extras.notes:
            click.echo(_wrapped(note), err=True)
    sensitivity = []
    if reader_sensitivity:
        # start-up: only --reader-sensitivity loads re-reading (and the sandbox)
        from ..scoring.rereading import labelled_sensitivity

        sensitivity = labelled_sensitivity(scores, bootstrap=replicates, seed=seed)
    if out is None:
        _print_stdout(scores, comparisons, fmt, against == "paper", sensitivity, extras)
        if dar_rules:
            _print_dar_rules(scores)
        return
    if dar_rules:
        _print_dar_rules(scores)
    try:
        written = _write_all(out, scores, comparisons, against == "paper", extras, sensitivity)
    except OSError as exc:
        raise ReportWriteError(
            f"Cannot write the report to {out}: {exc.strerror or exc}."
        ) from None
    click.echo(f"wrote {len(written)} files to {out}: {', '.join(p.name for p in written)}")


def _note_against_paper(scores: Sequence[RunScores]) -> None:
    """``--against paper``: say which runs' figures the published cells do not compare
    with (another protocol, another split)."""
    for note in protocol_notes([(str(s.run.path), s.run.protocol) for s in scores]):
        click.echo(_wrapped(f"note: {note}"), err=True)
    for s in scores:
        split = s.run.split
        if split not in (None, "hard"):
            click.echo(
                f"{s.run.path}: note: the paper's rows are on the hard split; "
                f"this run is on {split!r}, so the two are not comparable.",
                err=True,
            )


def _comparisons(
    scores: Sequence[RunScores],
    compare: bool,
    pairs: Sequence[str],
    pair_modes: bool,
    replicates: int,
    seed: int,
) -> list[Comparison]:
    """The paired differences asked for (--compare, --pair, --pair-modes), with a note
    when any sets figures of two protocols against each other."""
    comparisons = _compare_all(scores, replicates, seed) if compare else []
    comparisons += [c for p in pairs for c in _pair(scores, p, replicates, seed)]
    if pair_modes:
        paired = pair_modes_of(scores, replicates, seed)
        if not paired:
            raise NothingToScoreError(
                "--pair-modes found no agentic mode with its prompted counterpart in the "
                "given run folders."
            )
        comparisons += paired
    across = comparisons_note(comparisons)
    if across:
        click.echo(_wrapped(f"note: {across}"), err=True)
    return comparisons


def _print_stdout(
    scores: Sequence[RunScores],
    comparisons: Sequence[Comparison],
    fmt: str,
    paper: bool,
    sensitivity: Sequence[tuple[str, SensitivityRow]],
    extras: ScoreExtras | None,
) -> None:
    """Without --out: the tables on stdout in ``fmt``; what one loadable document (CSV,
    JSON) cannot hold is said to go to --out."""
    click.echo(_stdout_text(scores, comparisons, fmt, paper, sensitivity), nl=False)
    if sensitivity and fmt == "csv":
        click.echo("note: the reader-sensitivity table is written with --out.", err=True)
    if extras and fmt in ("csv", "json"):
        # One loadable document on stdout: the extra tables go to --out.
        click.echo("note: the reliability and cost tables are written with --out.", err=True)
    elif extras:
        for table in extras.tables:
            text = render(table, fmt if fmt in ("markdown", "latex") else "table")
            click.echo("\n" + text, nl=False)


def _wrapped(note: str) -> str:
    """A note within the terminal's width, its continuation lines indented."""
    return textwrap.fill(note, terminal_width(), subsequent_indent="  ", break_on_hyphens=False)


def _pair(scores: Sequence[RunScores], spec: str, replicates: int, seed: int) -> list[Comparison]:
    mode, sep, baseline = spec.partition(":")
    if not sep or mode not in ALL_MODES or baseline not in ALL_MODES:
        raise ConfigError(
            f"--pair takes MODE:BASELINE with modes from {', '.join(ALL_MODES)}, not {spec!r}."
        )
    with_mode = next((s for s in scores if mode in s.modes), None)
    with_baseline = next((s for s in scores if baseline in s.modes), None)
    if with_mode is None or with_baseline is None:
        missing = mode if with_mode is None else baseline
        raise ConfigError(f"--pair {spec}: no run folder given holds {missing} records.")
    return compare_modes(with_baseline, baseline, with_mode, mode, replicates, seed)


def _compare_all(scores: Sequence[RunScores], replicates: int, seed: int) -> list[Comparison]:
    base = scores[0]
    return [c for other in scores[1:] for c in compare(base, other, replicates, seed)]


def _stdout_text(
    scores: Sequence[RunScores],
    comparisons: Sequence[Comparison],
    fmt: str,
    paper: bool,
    sensitivity: Sequence[tuple[str, SensitivityRow]] = (),
) -> str:
    if fmt == "json":
        doc = to_json(scores, comparisons)
        if sensitivity:
            doc["reader_sensitivity"] = [
                {"run": label, **dataclasses.asdict(row), "difference": row.difference}
                for label, row in sensitivity
            ]
        doc["usage"] = [row.to_dict() for row in usage_rows(scores)]
        doc["format"] = [row.to_dict() for row in format_rows(scores)]
        if paper:
            table = against_paper(scores)
            doc["against_paper"] = [dict(zip(table.headers, r, strict=True)) for r in table.rows]
        return json.dumps(doc, indent=2) + "\n"
    if fmt == "csv":
        # One table, so that the output loads as CSV: the paired differences with
        # --compare, else the long table (with the paper's cells beside it with --against).
        if comparisons:
            return render_csv(COMPARISON_COLUMNS, comparison_rows(comparisons))
        return long_csv_with_paper(scores) if paper else long_csv(scores)
    tables: list[Table] = [table2(scores)]
    if _has_agents(scores):
        tables.append(usage_table(usage_rows(scores)))
        formats = format_rows(scores)
        if formats:
            # Every run's rows, so a constrained and a text run are read one above the other.
            tables.append(format_table(formats))
    if paper:
        tables.append(against_paper(scores))
    if comparisons:
        tables.append(comparison_table(comparisons))
    if sensitivity:
        tables.append(sensitivity_table(sensitivity))
    return "\n".join(render(t, fmt) for t in tables)


def _has_agents(scores: Sequence[RunScores]) -> bool:
    return any(r.agent is not None for s in scores for r in s.run.records)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "run"


def _write_all(
    out: Path,
    scores: Sequence[RunScores],
    comparisons: Sequence[Comparison],
    paper: bool,
    extras: ScoreExtras | None = None,
    sensitivity: Sequence[tuple[str, SensitivityRow]] = (),
) -> list[Path]:
    # start-up: ``deonticbench --help`` imports every command's module
    from ..report import REPORT_FILE, write_report
    from ..scoring.figures import draw_figure  # matplotlib only when figures are drawn
    from ..scoring.results import RESULTS_FILE, write_results

    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {
        "table.md": render_markdown(table2(scores)),
        "table.tex": render(table2(scores), "latex"),
        "long.csv": long_csv(scores),
        "cases.csv": cases_csv(scores),
        "scores.json": json.dumps(to_json(scores, comparisons), indent=2) + "\n",
    }
    usage = usage_rows(scores)
    files["usage.csv"] = render_csv(UsageRow.columns(), [r.to_dict() for r in usage])
    files["usage.md"] = render_markdown(usage_table(usage))
    formats = format_rows(scores)
    if formats:
        files["format.csv"] = render_csv(FormatRow.columns(), [r.to_dict() for r in formats])
        files["format.md"] = render_markdown(format_table(formats))
    if comparisons:
        files["comparison.csv"] = render_csv(COMPARISON_COLUMNS, comparison_rows(comparisons))
        files["comparison.md"] = render_markdown(comparison_table(comparisons))
    if paper:
        files["paper.md"] = render_markdown(against_paper(scores))
    if sensitivity:
        files["reader-sensitivity.md"] = render_markdown(sensitivity_table(sensitivity))
    if extras is not None and extras.tables:
        files["reliability.md"] = "\n".join(render_markdown(t) for t in extras.tables)
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    used: set[str] = set()
    for index, s in enumerate(scores):
        if not s.groups:
            continue
        stem = f"figure-{_safe(s.run.name)}"
        if stem in used:
            stem = f"{stem}-{index}"
        used.add(stem)
        for stage in s.stages:
            suffix = "" if stage == "first" else f"-{stage}"
            written.append(draw_figure([s], out / f"{stem}{suffix}.png", stage))
    scored = [s for s in scores if s.groups]
    if len(scored) > 1:
        for stage in dict.fromkeys(st for s in scored for st in s.stages):
            suffix = "" if stage == "first" else f"-{stage}"
            written.append(draw_figure(scored, out / f"figure-all{suffix}.png", stage))
    for s in scores:
        name = RESULTS_FILE if len(scores) == 1 else f"results-{_safe(s.run.name)}.json"
        sections = extras.sections.get(s.run.name) if extras else None
        written.append(write_results(s, out / name, sections=sections))
    reports = extras.reports if extras else []
    written.append(
        write_report(
            scores,
            out / REPORT_FILE,
            comparisons,
            reliability=reports,
            sensitivity=sensitivity,
        )
    )
    return written


def _print_dar_rules(scores: list[RunScores]) -> None:
    # start-up: ``deonticbench --help`` imports every command's module
    from ..integrations import render_scorer_table, scorer_rows

    for s in scores:
        click.echo(f"\nDAR's rules beside the paper's: {s.run.path}")
        click.echo(render_scorer_table(scorer_rows(s.run.path, s)), nl=False)


def _reread_scores(
    run_dirs: Sequence[Path], reading: str, replicates: int, seed: int
) -> list[RunScores]:
    """``--reading``: each run read again in memory (``scoring.rereading``), then scored;
    one line per run says what was read again."""
    from ..scoring.rereading import reread_run  # start-up: only --reading needs it
    from ..scoring.scores import score_run
    from ..store.run import load_run

    runs = [load_run(p) for p in run_dirs]  # every path is checked before any is read
    scores = []
    for run in runs:
        reread = reread_run(run, reading)
        click.echo(
            _wrapped(
                f"{run.path}: read with the {reading} reader (the run followed the "
                f"{run.protocol} protocol): {reread.executed} program(s) run again, "
                f"{reread.reused} stored execution(s) read again, {reread.changed} "
                "first-attempt outcome(s) changed; records.jsonl is unchanged"
            ),
            err=True,
        )
        scores.append(score_run(reread.run, replicates, seed))
    return scores
