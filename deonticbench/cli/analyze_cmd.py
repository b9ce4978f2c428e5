"""``deonticbench analyze``: why a run's programs failed (docs/analysis.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ._options import json_option, workers_option


@click.command()
@click.argument("run", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Also write the tables (text, markdown) and a per-sample CSV here (for an eval "
    "set, in one folder per run).",
)
@json_option
@click.option(
    "--stage",
    type=click.Choice(["first", "final"]),
    default="first",
    show_default=True,
    help="Which attempt the tables describe.",
)
@workers_option
def command(run: Path, out: str | None, as_json: bool, stage: str, workers: int | None) -> None:
    """Analyse the program-mode records of the run folder RUN: writes RUN/analysis.jsonl
    and prints the failure taxonomy, the outcome × derivation table, mean structural
    measures and their correlation with correctness.  Given an eval set's folder, each of
    its runs in the set's order (those with no program left out, said on stderr); with
    --out, each run's files in a folder of its name; with --json, each row names its run."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..store import sets

    if not sets.is_set_folder(Path(run)):
        _require_programs(Path(run))
        return _analyse(Path(run), out, as_json, stage, workers, in_set=False)
    folders = sets.expand_run_folders([run])
    kept = [f for f in folders if _has_programs(f)]
    for folder in folders:
        if folder not in kept:
            click.echo(f"{folder}: no record of a mode that writes a program: left out.", err=True)
    if not kept:
        raise click.ClickException(
            f"{run} is an eval set none of whose started runs holds a program to analyse."
        )
    for folder in kept:
        if not as_json:
            click.echo(f"== {folder.name} ==")
        target = None if out is None else str(Path(out) / folder.name)
        _analyse(folder, target, as_json, stage, workers, in_set=True)


def _analyse(
    run: Path, out: str | None, as_json: bool, stage: str, workers: int | None, *, in_set: bool
) -> None:
    """One run folder's analysis, printed (as JSON lines with ``as_json``, each naming the
    run when it is one of a set's) and, with ``out``, written there."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..analysis.failure_tables import all_tables, render_tables, write_outputs
    from ..analysis.run import analyse_run

    rows, counts = analyse_run(run, workers=workers)
    payload = [r.to_json() for r in rows]
    if as_json:
        for row in payload:
            click.echo(json.dumps({"run": run.name, **row} if in_set else row))
    else:
        click.echo(
            f"{counts['records']} program-mode records; {counts['programs']} distinct programs "
            f"({counts['analysed']} analysed now, {counts['cached']} from the cache, "
            f"{counts['failed']} the analyser could not read)\n"
        )
        click.echo(render_tables(all_tables(payload, stage)), nl=False)
        click.echo(f"rows: {run / 'analysis.jsonl'}")
    if out:
        for path in write_outputs(payload, Path(out), stage):
            click.echo(f"wrote {path}", err=as_json)


def _has_programs(folder: Path) -> bool:
    """Whether a set's run holds a record of a mode that writes a program (read strictly,
    as the analysis reads it: a damaged run is an error, not a run left out)."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..store.run import read_run
    from ..vocabulary.modes import writes_program

    run = read_run(folder, policy="strict")
    return run.records_path.is_file() and any(writes_program(r.mode) for r in run.records)


def _require_programs(folder: Path) -> None:
    """Refuse, before analysis.jsonl is written, a run with no program to analyse: its
    tables would be empty and say nothing of why."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..errors import DataError
    from ..store.run import read_run
    from ..vocabulary.modes import writes_program

    run = read_run(folder, policy="strict")
    if not run.records_path.is_file():
        return  # analyse_run says it holds no records yet
    if not any(writes_program(r.mode) for r in run.records):
        raise DataError(
            f"{folder} holds no record of a mode that writes a program (zero-shot, "
            "few-shot, the settings or the agentic program modes): nothing to analyse."
        )
