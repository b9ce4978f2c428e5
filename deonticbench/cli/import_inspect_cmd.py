"""``deonticbench import-inspect``: an inspect log of the deonticbench tasks as a run
folder.  Thin: the integration does the work."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import missing_extra


@click.command(name="import-inspect")
@click.argument("log", type=click.Path(path_type=Path))
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The run folder to create (it must not hold a run yet).",
)
def command(log: Path, out: Path) -> None:
    """Turn an inspect LOG (.eval or .json) of the deonticbench tasks into a run folder
    that `deonticbench score` reads (with --against paper and --compare)."""
    try:
        # start-up: ``deonticbench --help`` imports every command's module
        from ..integrations import import_log
    except ImportError as exc:
        if not (exc.name or "").startswith("inspect_ai"):
            raise
        raise missing_extra("reading inspect logs", "inspect") from None
    from ..store.imported import written_line  # start-up: as import_log above

    result = import_log(log, out)
    click.echo(f"wrote {written_line(result.run)}")
    if result.unscored:
        click.echo(
            f"note: {result.unscored} sample(s) of the log have no score (an error or a "
            "cancellation) and were not imported",
            err=True,
        )
    click.echo(f"score it with: deonticbench score {result.run.path}")
