"""A run's provider batches from outside a run (``deonticbench batches``): their rows as
the run folder records them, their states asked of the provider, cancelling those still
running, and adopting a batch for an intent that has none.  The run's own handling of
its batches is ``batching.BatchBroker``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..models import load_model
from ..models.batch import BatchAPI, batch_api
from ..store.batches import BatchLog, Chunk
from ..store.config import recorded_model_spec


def describe(chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """Rows for ``deonticbench batches``: one per chunk, as the run folder records it."""
    return [
        {
            "chunk": c.name,
            "round": c.round,
            "requests": c.requests,
            "batch_id": c.batch_id,
            "state": c.state or ("never created" if c.abandoned else "unknown"),
            "collected": c.collected,
            "failed": len(c.failed),
        }
        for c in chunks
    ]


async def refresh_states(api: BatchAPI, log: BatchLog) -> list[dict[str, Any]]:
    """Ask the provider for the state of each batch the run folder records."""
    for chunk in log.chunks.values():
        if chunk.batch_id is not None and not chunk.collected:
            batch = await api.retrieve(chunk.batch_id)
            log.state(chunk.name, batch.state)
    return describe(list(log.chunks.values()))


async def cancel_open(api: BatchAPI, log: BatchLog) -> list[str]:
    """Cancel every batch of the run that has not ended; the ids cancelled."""
    cancelled = []
    for chunk in log.chunks.values():
        if chunk.batch_id is None or chunk.collected:
            continue
        batch = await api.retrieve(chunk.batch_id)
        if not batch.ended:
            batch = await api.cancel(chunk.batch_id)
            cancelled.append(chunk.batch_id)
        log.state(chunk.name, batch.state)
    return cancelled


def adopt(log: BatchLog, chunk_name: str, batch_id: str) -> None:
    """Record ``batch_id`` as the batch of an intent that has none (the user's choice
    when the provider's list could not tell)."""
    chunk = log.chunks.get(chunk_name)
    if chunk is None:
        raise ConfigError(f"{chunk_name} is not a chunk of this run (see deonticbench batches).")
    if chunk.batch_id is not None:
        raise ConfigError(f"{chunk_name} already has batch {chunk.batch_id}.")
    log.submitted(chunk_name, batch_id, adopted=True)


def parse_adoption(text: str) -> tuple[str, str]:
    """``--adopt CHUNK=BATCH_ID`` as its chunk and batch id, or the sentence refusing it."""
    chunk, sep, batch_id = text.partition("=")
    if not sep or not batch_id.strip():
        raise ConfigError(f"--adopt takes CHUNK=BATCH_ID, not {text!r}.")
    return chunk.strip(), batch_id.strip()


def ask_provider(
    run: Path, log: BatchLog, *, cancel: bool
) -> tuple[list[str], list[dict[str, Any]]]:
    """With the run's own model's batch API: cancel the batches still running
    (``cancel``), then ask every batch's state.  The ids cancelled, and the rows."""
    model = load_model(str(recorded_model_spec(run) or ""))
    api = batch_api(model)

    async def talk() -> tuple[list[str], list[dict[str, Any]]]:
        try:
            cancelled = await cancel_open(api, log) if cancel else []
            return cancelled, await refresh_states(api, log)
        finally:
            await model.aclose()

    try:
        return asyncio.run(talk())
    except ConnectionError as exc:
        raise ConfigError(f"cannot reach the provider's batch API: {exc}") from None


def rows_text(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The rows as ``deonticbench batches`` lists them, under a header line."""
    lines = [f"{'chunk':<6} {'round':>5} {'requests':>8} {'batch id':<40} state"]
    for row in rows:
        collected = ", collected" if row["collected"] else ""
        failed = f", {row['failed']} failed" if row["failed"] else ""
        lines.append(
            f"{row['chunk']!s:<6} {row['round']!s:>5} {row['requests']!s:>8} "
            f"{row['batch_id'] or '-'!s:<40} {row['state']}{collected}{failed}"
        )
    return lines


__all__ = [
    "adopt",
    "ask_provider",
    "cancel_open",
    "describe",
    "parse_adoption",
    "refresh_states",
    "rows_text",
]
