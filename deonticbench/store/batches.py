"""A run's provider batches: ``batches.jsonl`` in the run folder, so that nothing
submitted is lost or paid for twice.

Append-only events, each flushed and fsynced before the step it protects:

* ``intent``  (before ``create``): the chunk's name, provider, round, its requests'
  ``custom_id`` and the response-cache keys each one fills, and the time;
* ``submitted`` (right after ``create``): the provider's batch id, or one adopted by a
  later run that found it in the provider's list;
* ``abandoned``: the provider never created it (a later run looked and found none):
  its requests may be submitted again;
* ``collected``: every result was read (successes are in the response cache) and the
  ones that failed, with why;
* ``state``: the provider's last reported status, for ``deonticbench batches``.

A run killed at any moment leaves at worst a truncated last line, which is skipped.
The file holds no secret and no prompt text: ids, keys and counts only.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BATCHES_NAME = "batches.jsonl"


@dataclass
class Chunk:
    """One batch this run meant to submit, and what became of it."""

    name: str
    provider: str
    round: int
    custom_ids: list[str]
    keys: dict[str, list[str]]
    """custom_id -> the response-cache keys of the samples it draws."""
    intent_at: float
    """Unix time the intent was written (the batch cannot be older)."""
    batch_id: str | None = None
    abandoned: bool = False
    collected: bool = False
    failed: dict[str, str] = field(default_factory=dict)
    """custom_id -> why it failed (written when collected)."""
    state: str | None = None

    @property
    def requests(self) -> int:
        return len(self.custom_ids)

    @property
    def open(self) -> bool:
        """Submitted and not yet read: its results are still to collect."""
        return self.batch_id is not None and not self.collected

    @property
    def orphan(self) -> bool:
        """An intent without a batch id: the run died between the two records."""
        return self.batch_id is None and not self.abandoned


class BatchLog:
    """The batches of one run folder, as recorded in ``batches.jsonl``."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.path = Path(folder) / BATCHES_NAME
        self.run_id = ""
        self.chunks: dict[str, Chunk] = {}
        if self.path.exists():
            self._load()

    def still_running_note(self, folder: str | os.PathLike[str]) -> str | None:
        """After a stop: the batches still running at the provider, and what to do."""
        running = [c for c in self.chunks.values() if c.open]
        if not running:
            return None
        return (
            f"{len(running)} batches are still running at the provider (stopping does not "
            "cancel them): run the same command to collect their results, or "
            f"'deonticbench batches {folder} --cancel' to cancel them."
        )

    def _load(self) -> None:
        for raw in self.path.read_bytes().splitlines():
            try:
                event = json.loads(raw)
            except ValueError:
                continue  # a line cut by a kill: the step it guarded never happened
            if isinstance(event, dict):
                self._apply(event)

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "run":
            self.run_id = str(event["run_id"])
            return
        if kind == "intent":
            self.chunks[event["chunk"]] = Chunk(
                name=event["chunk"],
                provider=event["provider"],
                round=int(event["round"]),
                custom_ids=list(event["custom_ids"]),
                keys={k: list(v) for k, v in event["keys"].items()},
                intent_at=float(event["at"]),
            )
            return
        chunk = self.chunks.get(str(event.get("chunk")))
        if chunk is None:
            return
        if kind == "submitted":
            chunk.batch_id = str(event["batch_id"])
            chunk.abandoned = False
        elif kind == "abandoned":
            chunk.abandoned = True
        elif kind == "collected":
            chunk.collected = True
            chunk.failed = dict(event.get("failed") or {})
        elif kind == "state":
            chunk.state = str(event["state"])

    def _append(self, event: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(event, separators=(",", ":")) + "\n"
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line)
            f.flush()
            # On disk before the step it guards: the provider call comes next.
            os.fsync(f.fileno())
        self._apply(event)

    # --- writing ------------------------------------------------------------------------

    def ensure_run_id(self) -> str:
        """The id the provider's metadata carries to name this run (made once)."""
        if not self.run_id:
            self._append({"event": "run", "run_id": uuid.uuid4().hex})
        return self.run_id

    def new_chunk_name(self) -> str:
        return f"c{len(self.chunks):04d}"

    def intent(self, name: str, provider: str, round_: int, keys: dict[str, list[str]]) -> Chunk:
        self._append(
            {
                "event": "intent",
                "chunk": name,
                "provider": provider,
                "round": round_,
                "custom_ids": list(keys),
                "keys": keys,
                "at": time.time(),
            }
        )
        return self.chunks[name]

    def submitted(self, name: str, batch_id: str, *, adopted: bool = False) -> None:
        event = {"event": "submitted", "chunk": name, "batch_id": batch_id}
        self._append({**event, "adopted": True} if adopted else event)

    def abandoned(self, name: str) -> None:
        self._append({"event": "abandoned", "chunk": name})

    def collected(self, name: str, failed: dict[str, str]) -> None:
        self._append({"event": "collected", "chunk": name, "failed": failed})

    def state(self, name: str, state: str) -> None:
        if self.chunks[name].state != state:
            self._append({"event": "state", "chunk": name, "state": state})

    # --- reading ------------------------------------------------------------------------

    def paid_keys(self) -> set[str]:
        """Response-cache keys drawn by a batch this run submitted: a response found under
        one of them was paid for by this run (its cost is counted, once, in the record)."""
        return {
            key
            for chunk in self.chunks.values()
            if chunk.batch_id is not None
            for keys in chunk.keys.values()
            for key in keys
        }

    def latest_with(self, custom_id: str) -> Chunk | None:
        """The newest chunk that holds ``custom_id`` and was (or may have been) sent."""
        found = None
        for chunk in self.chunks.values():
            if custom_id in chunk.keys and not chunk.abandoned:
                found = chunk
        return found

    def tries(self, custom_id: str) -> int:
        """How many chunks were meant to send ``custom_id`` (created or not)."""
        return sum(1 for c in self.chunks.values() if custom_id in c.keys)


__all__ = ["BATCHES_NAME", "BatchLog", "Chunk"]
