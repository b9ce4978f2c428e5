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
    help="Also write the tables (text, markdown) and a per-sample CSV here.",
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
    measures and their correlation with correctness."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..analysis.failure_tables import all_tables, render_tables, write_outputs
    from ..analysis.run import analyse_run

    _require_programs(Path(run))
    rows, counts = analyse_run(run, workers=workers)
    payload = [r.to_json() for r in rows]
    if as_json:
        for row in payload:
            click.echo(json.dumps(row))
    else:
        click.echo(
            f"{counts['records']} program-mode records; {counts['programs']} distinct programs "
            f"({counts['analysed']} analysed now, {counts['cached']} from the cache, "
            f"{counts['failed']} the analyser could not read)\n"
        )
        click.echo(render_tables(all_tables(payload, stage)), nl=False)
        click.echo(f"rows: {Path(run) / 'analysis.jsonl'}")
    if out:
        for path in write_outputs(payload, Path(out), stage):
            click.echo(f"wrote {path}", err=as_json)


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
