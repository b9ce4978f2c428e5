"""``deonticbench score``: score run folders.  Thin: the library does the work."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import click

from ..errors import DeonticBenchError
from ..scoring.scores import Comparison, RunScores, compare, score_runs
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
    to_json,
)
from ._options import bootstrap_options

FORMATS = (*TABLE_FORMATS, "json")


class NothingToScoreError(DeonticBenchError):
    pass


class ReportWriteError(DeonticBenchError):
    pass


@click.command(name="score")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@bootstrap_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="table",
    show_default=True,
    help="What to print: Table 2 as text/markdown/latex, json, or one CSV table: the long "
    "table (with the paper's cells under --against paper) or, with --compare, the paired "
    "differences.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Write every table, the per-case CSV and the figures to this folder.",
)
@click.option("--against", type=click.Choice(["paper"]), help="Show the published rows beside.")
@click.option("--compare", is_flag=True, help="Paired differences of each run against the first.")
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
    out: Path | None,
    against: str | None,
    compare: bool,
    dar_rules: bool,
) -> None:
    """Score RUN_DIR(s): accuracy / macro-F1 with bootstrap 95% intervals (paper B.3)."""
    if compare and len(run_dirs) < 2:
        raise click.UsageError("--compare needs at least two run folders.")
    scores = score_runs(run_dirs, bootstrap=replicates, seed=seed)
    for s in scores:
        for note in s.notes:
            click.echo(f"{s.run.path}: {note}", err=True)
    if not any(s.groups for s in scores):
        raise NothingToScoreError("None of the given run folders holds a scorable record.")
    if against == "paper":
        for s in scores:
            split = s.run.split
            if split not in (None, "hard"):
                click.echo(
                    f"{s.run.path}: note: the paper's rows are on the hard split; "
                    f"this run is on {split!r}, so the two are not comparable.",
                    err=True,
                )
    comparisons = _compare_all(scores, replicates, seed) if compare else []
    if out is None:
        click.echo(_stdout_text(scores, comparisons, fmt, against == "paper"), nl=False)
        if dar_rules:
            _print_dar_rules(scores)
        return
    if dar_rules:
        _print_dar_rules(scores)
    try:
        written = _write_all(out, scores, comparisons, against == "paper")
    except OSError as exc:
        raise ReportWriteError(
            f"Cannot write the report to {out}: {exc.strerror or exc}."
        ) from None
    click.echo(f"wrote {len(written)} files to {out}: {', '.join(p.name for p in written)}")


def _compare_all(scores: Sequence[RunScores], replicates: int, seed: int) -> list[Comparison]:
    base = scores[0]
    return [c for other in scores[1:] for c in compare(base, other, replicates, seed)]


def _stdout_text(
    scores: Sequence[RunScores], comparisons: Sequence[Comparison], fmt: str, paper: bool
) -> str:
    if fmt == "json":
        doc = to_json(scores, comparisons)
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
    if paper:
        tables.append(against_paper(scores))
    if comparisons:
        tables.append(comparison_table(comparisons))
    return "\n".join(render(t, fmt) for t in tables)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "run"


def _write_all(
    out: Path, scores: Sequence[RunScores], comparisons: Sequence[Comparison], paper: bool
) -> list[Path]:
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
    if comparisons:
        files["comparison.csv"] = render_csv(COMPARISON_COLUMNS, comparison_rows(comparisons))
        files["comparison.md"] = render_markdown(comparison_table(comparisons))
    if paper:
        files["paper.md"] = render_markdown(against_paper(scores))
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
        written.append(write_results(s, out / name))
    written.append(write_report(scores, out / REPORT_FILE, comparisons))
    return written


def _print_dar_rules(scores: list[RunScores]) -> None:
    from ..integrations.harbor.protocols import protocol_rows, render

    for s in scores:
        click.echo(f"\nDAR's rules beside the paper's: {s.run.path}")
        click.echo(render(protocol_rows(s.run.path, s)), nl=False)
