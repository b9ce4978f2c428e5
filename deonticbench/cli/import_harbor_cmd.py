"""``deonticbench import-harbor``: a Harbor jobs folder of DeonticBench tasks (ours or
DAR's) as a run folder, every answer re-judged by the harness.  Thin: the integration
does the work."""

from __future__ import annotations

from pathlib import Path

import click

from ..data.cases import resolve_source
from ._options import data_dir_option, hub_option, revision_option, split_option


@click.command(name="import-harbor")
@click.argument("jobs_dir", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The run folder to create [default: runs/harbor-<jobs folder name>].",
)
@split_option()
@data_dir_option()
@hub_option
@revision_option
def command(
    jobs_dir: Path,
    out: Path | None,
    split: str,
    data_dir: Path | None,
    hub: bool,
    revision: str | None,
) -> None:
    """Turn Harbor's JOBS_DIR (a jobs folder, one job or one trial) into a run folder
    that score, compare, analyze and report read; `score --dar-rules` scores it DAR's way
    beside the paper's."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..integrations import import_jobs
    from ..store.imported import written_line

    target = out or Path("runs") / f"harbor-{jobs_dir.resolve().name}"
    source = resolve_source(data_dir, hub=hub, revision=revision)
    result = import_jobs(jobs_dir, target, source=source, split=split)
    assert result.run is not None  # import_jobs returns once the records are written
    click.echo(f"wrote {written_line(result.run)}")
    click.echo(
        f"judged from kept artifacts: {result.from_artifacts}, from the verifier's output: "
        f"{result.from_verifier}, never ran: {result.never_ran}; abstentions (no readable "
        f"answer): {result.abstained}"
    )
    if result.never_ran:
        click.echo(
            f"note: {result.never_ran} trial(s) never ran (Harbor stopped them before the "
            f"agent started) and count as abstentions: {'; '.join(result.never_ran_because)}",
            err=True,
        )
    if result.foreign:
        click.echo(
            f"note: {len(result.foreign)} trial(s) are not DeonticBench tasks of the {split} "
            f"split and were not imported (e.g. {result.foreign[0]})",
            err=True,
        )
    click.echo(f"score it with: deonticbench score {result.run.path} [--dar-rules]")
