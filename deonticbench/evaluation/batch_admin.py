"""A run's provider batches from outside a run (``deonticbench batches``): their rows as
the run folder records them, their states asked of the provider, cancelling those still
running, and adopting a batch for an intent that has none.  The run's own handling of
its batches is ``batching.BatchBroker``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from ..models.batch import BatchAPI
from ..store.batches import BatchLog, Chunk


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


__all__ = ["adopt", "cancel_open", "describe", "refresh_states"]
