"""``deonticbench batches RUN``: the provider batches of an ``eval --batch`` run, with
their state; ``--cancel`` cancels those still running, ``--adopt`` names the batch of an
intent the provider's list could not settle."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("batches")
@click.argument("run", type=click.Path(path_type=Path))
@click.option("--cancel", is_flag=True, help="Cancel the run's batches that have not ended.")
@click.option(
    "--adopt",
    "adoption",
    default=None,
    metavar="CHUNK=BATCH_ID",
    help="Record BATCH_ID as the batch of CHUNK (an intent a killed run left without an id).",
)
def command(run: Path, cancel: bool, adoption: str | None) -> None:
    """List a run's provider batches (chunk, round, requests, batch id, state)."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..evaluation.batch_admin import adopt, ask_provider, parse_adoption, rows_text
    from ..store.batches import BATCHES_NAME, BatchLog
    from ..store.folder import require_run_folder

    require_run_folder(run)
    if not (run / BATCHES_NAME).exists():
        # Not an error: a run without batches has none to list.
        click.echo(
            f"{run} has no provider batches (it was not run with eval --batch): nothing to list."
        )
        return
    log = BatchLog(run)
    if adoption is not None:
        chunk, batch_id = parse_adoption(adoption)
        adopt(log, chunk, batch_id)
        click.echo(f"{chunk} is now batch {batch_id}; run eval again to collect it.")
    cancelled, rows = ask_provider(run, log, cancel=cancel)
    click.echo("\n".join(rows_text(rows)))
    if cancel:
        click.echo(
            f"cancelled {len(cancelled)} batches"
            + (": " + ", ".join(cancelled) if cancelled else " (none was running).")
        )
