"""Anthropic's Message Batches: ``POST /v1/messages/batches`` with each request's
``params`` exactly as ``messages.create`` takes them, one request per sample (the API
has no ``n``).

Limits, from Anthropic's Message Batches guide ("A Message Batch is limited to either
100,000 Message requests or 256 MB in size, whichever is reached first"); a batch ends
within 24 hours, and an item it could not reach by then comes back ``expired``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from .._sdk import MalformedResponse, field_of
from ..anthropic_backend import AnthropicModel, _read_message
from ..backoff import short
from .base import BatchAPI, BatchItem, ItemResult, ProviderBatch

MAX_REQUESTS = 100_000
MAX_BYTES = 256 * 1024 * 1024
BATCH_CACHE_TTL = "1h"
"""The prompt-cache lifetime a batch's breakpoints ask for, unless ``cache_ttl`` is set:
a batch's requests run in no promised order over up to 24 hours, so a 5-minute entry
written by one would mostly be gone when the next sharing its prefix runs; a 1-hour
entry costs 2x the input price to write instead of 1.25x, and is read at 0.1x."""
# Error types of an errored item that pass (the others are the request's own fault).
_RETRYABLE_ERRORS = frozenset(
    {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}
)


class AnthropicBatches(BatchAPI):
    provider = "anthropic"
    sdk_name = "anthropic"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES
    splits_n = True

    def __init__(self, model: Any) -> None:
        super().__init__(model)
        assert isinstance(model, AnthropicModel)
        self.backend: AnthropicModel = model
        self.max_requests = int(model.settings.option("batch_max_requests", MAX_REQUESTS))
        # The lines are built by a copy of the backend with the batch's cache lifetime,
        # so that the run's interactive calls (agentic trials) keep theirs.
        self.lines_from: AnthropicModel = copy.copy(model)
        if "cache_ttl" not in model.settings.options:
            self.lines_from.cache_ttl = BATCH_CACHE_TTL
        self.cache_ttl = self.lines_from.cache_ttl

    def line(self, item: BatchItem) -> dict[str, Any]:
        params = self.lines_from.request_fields(item.request)
        # extra_body is the client's way to add fields; in a batch they are plain params.
        params.update(params.pop("extra_body", {}))
        return {"custom_id": item.custom_id, "params": params}

    async def submit(self, items: Sequence[BatchItem], metadata: Mapping[str, str]) -> str:
        # Message Batches carry no metadata: a killed run finds its batch by creation time
        # and request count instead (evaluation.batching).
        client = self.backend.client()
        requests = [self.line(i) for i in items]
        batch = await self._created(lambda: client.messages.batches.create(requests=requests))
        return str(batch.id)

    async def retrieve(self, batch_id: str) -> ProviderBatch:
        client = self.backend.client()
        return _batch(await self._retried(lambda: client.messages.batches.retrieve(batch_id)))

    async def cancel(self, batch_id: str) -> ProviderBatch:
        client = self.backend.client()
        return _batch(await self._retried(lambda: client.messages.batches.cancel(batch_id)))

    def listing(self, created_after: float) -> AsyncIterator[ProviderBatch]:
        client = self.backend.client()
        return self._pages(lambda: client.messages.batches.list(limit=100), created_after)

    def _batch(self, raw: Any) -> ProviderBatch:
        return _batch(raw)

    async def results(self, batch: ProviderBatch) -> AsyncIterator[ItemResult]:
        client = self.backend.client()
        decoder = await self._retried(lambda: client.messages.batches.results(batch.id))
        async for entry in decoder:
            yield _item(entry)


def _timestamp(value: Any) -> float:
    if isinstance(value, datetime):
        return value.astimezone(UTC).timestamp() if value.tzinfo else value.timestamp()
    if isinstance(value, str):
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    return float(value or 0)


def _batch(raw: Any) -> ProviderBatch:
    status = str(field_of(raw, "processing_status") or "unknown")
    counts = field_of(raw, "request_counts")
    names = ("processing", "succeeded", "errored", "canceled", "expired")
    numbers = {n: int(field_of(counts, n) or 0) for n in names}
    return ProviderBatch(
        id=str(field_of(raw, "id")),
        state=status,
        ended=status == "ended",
        created_at=_timestamp(field_of(raw, "created_at")),
        requests=sum(numbers.values()),
        succeeded=numbers["succeeded"],
        failed=numbers["errored"] + numbers["canceled"] + numbers["expired"],
    )


def _item(entry: Any) -> ItemResult:
    custom_id = str(field_of(entry, "custom_id") or "")
    result = field_of(entry, "result")
    kind = field_of(result, "type")
    if kind == "succeeded":
        try:
            completion = _read_message(field_of(result, "message"))
        except MalformedResponse as exc:
            return ItemResult(custom_id, None, f"malformed response: {exc}", True)
        return ItemResult(custom_id, [replace(completion, batch=True)])
    if kind == "errored":
        error = field_of(field_of(result, "error"), "error")
        detail = field_of(error, "type") or "error"
        message = field_of(error, "message") or detail
        return ItemResult(
            custom_id, None, f"{short(message)} [{detail}]", detail in _RETRYABLE_ERRORS
        )
    if kind in ("expired", "canceled"):
        # Never reached before the batch ended (24 h) or was cancelled: send it again.
        return ItemResult(custom_id, None, f"the batch item {kind}", True)
    return ItemResult(custom_id, None, f"an unknown result {short(json.dumps(kind))}", True)
