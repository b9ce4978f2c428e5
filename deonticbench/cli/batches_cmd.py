"""``deonticbench batches RUN``: the provider batches of an ``eval --batch`` run, with
their state; ``--cancel`` cancels those still running, ``--adopt`` names the batch of an
intent the provider's list could not settle."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from ..errors import ConfigError


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
    from ..evaluation.batch_admin import adopt, cancel_open, refresh_states
    from ..models import load_model
    from ..models.batch import batch_api
    from ..store.batches import BATCHES_NAME, BatchLog
    from ..store.config import recorded_model_spec
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
        chunk, sep, batch_id = adoption.partition("=")
        if not sep or not batch_id.strip():
            raise ConfigError(f"--adopt takes CHUNK=BATCH_ID, not {adoption!r}.")
        adopt(log, chunk.strip(), batch_id.strip())
        click.echo(
            f"{chunk.strip()} is now batch {batch_id.strip()}; run eval again to collect it."
        )
    model = load_model(str(recorded_model_spec(run) or ""))
    api = batch_api(model)

    async def talk() -> tuple[list[str], list[dict[str, object]]]:
        try:
            cancelled = await cancel_open(api, log) if cancel else []
            return cancelled, await refresh_states(api, log)
        finally:
            await model.aclose()

    try:
        cancelled, rows = asyncio.run(talk())
    except ConnectionError as exc:
        raise ConfigError(f"cannot reach the provider's batch API: {exc}") from None
    click.echo(f"{'chunk':<6} {'round':>5} {'requests':>8} {'batch id':<40} state")
    for row in rows:
        collected = ", collected" if row["collected"] else ""
        failed = f", {row['failed']} failed" if row["failed"] else ""
        click.echo(
            f"{row['chunk']!s:<6} {row['round']!s:>5} {row['requests']!s:>8} "
            f"{row['batch_id'] or '-'!s:<40} {row['state']}{collected}{failed}"
        )
    if cancel:
        click.echo(
            f"cancelled {len(cancelled)} batches"
            + (": " + ", ".join(cancelled) if cancelled else " (none was running).")
        )
