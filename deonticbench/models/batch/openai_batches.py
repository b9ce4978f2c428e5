"""OpenAI's Batch API: the requests as a JSONL file (Files API, purpose ``batch``), then
``POST /v1/batches`` on ``/v1/chat/completions`` with a 24 h completion window.

Limits, from OpenAI's API reference for ``POST /v1/batches`` ("The file can contain up
to 50,000 requests, and can be up to 200 MB in size") and its rate-limits guide (the
"batch queue limit": input tokens that may be enqueued for one model at once, which
depends on the account's usage tier, so it is the ``batch_queue_tokens`` option).

A result line counts as a success only when its ``error`` is null **and**
``response.status_code`` is 200: a line with a null ``error`` and a 4xx or 5xx status is
a failed request (inspect_ai reads such a line as a success; we do not).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .._sdk import MalformedResponse, field_of
from ..backoff import is_retryable_status, short
from ..base import Completion, config_of
from ..openai_backend import OpenAIModel, reply_completions
from ..tool_calls import openai_messages
from .base import BatchAPI, BatchItem, ItemResult, ProviderBatch, SubmitError

ENDPOINT = "/v1/chat/completions"
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
DEFAULT_QUEUE_TOKENS = 900_000
"""Used when ``batch_queue_tokens`` is not set: a low tier's queue for the gpt-4.1
family on OpenAI's limits page; raise it to your account's figure (Settings > Limits)."""

# Batch states after which nothing changes (OpenAI's Batch object, ``status``).
_ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
# Item error codes that pass: the batch ran out of time or was cancelled.
_RETRYABLE_CODES = frozenset({"batch_expired", "batch_cancelled", "rate_limit_exceeded"})


class OpenAIBatches(BatchAPI):
    provider = "openai"
    sdk_name = "openai"
    max_requests = MAX_REQUESTS
    max_bytes = MAX_BYTES

    def __init__(self, model: Any) -> None:
        super().__init__(model)
        assert isinstance(model, OpenAIModel)
        self.backend: OpenAIModel = model
        self.queue_tokens = int(model.settings.option("batch_queue_tokens", DEFAULT_QUEUE_TOKENS))
        self.max_requests = int(model.settings.option("batch_max_requests", MAX_REQUESTS))

    def line(self, item: BatchItem) -> dict[str, Any]:
        request = item.request
        # The synchronous call's own fields, prompt_cache_key included (the batch reads
        # the same cache, so it routes the same way), and on a paper-protocol first
        # attempt upstream's sampling fields, as interactively.
        fields = self.backend.call_fields(
            config_of(self.backend, request), request.n, request.tools, request.cache_group
        )
        # extra_body is the client's way to add fields; in a file they are plain fields.
        extra = fields.pop("extra_body", {})
        body = {
            "model": self.backend.model_name,
            "messages": openai_messages(request.messages),
            **fields,
            **extra,
        }
        return {"custom_id": item.custom_id, "method": "POST", "url": ENDPOINT, "body": body}

    async def submit(self, items: Sequence[BatchItem], metadata: Mapping[str, str]) -> str:
        client = self.backend.client()
        data = "".join(json.dumps(self.line(i), ensure_ascii=False) + "\n" for i in items)

        async def upload() -> Any:
            return await client.files.create(
                file=("requests.jsonl", data.encode("utf-8"), "application/jsonl"),
                purpose="batch",
            )

        try:
            uploaded = await self._retried(upload)
        except ConnectionError as exc:
            # An uploaded file alone costs nothing: failing here creates no batch.
            raise SubmitError(f"uploading the batch file failed: {exc}", ambiguous=False) from None
        batch = await self._created(
            lambda: client.batches.create(
                input_file_id=uploaded.id,
                endpoint=ENDPOINT,
                completion_window="24h",
                metadata=dict(metadata),
            )
        )
        return str(batch.id)

    async def retrieve(self, batch_id: str) -> ProviderBatch:
        client = self.backend.client()
        return _batch(await self._retried(lambda: client.batches.retrieve(batch_id)))

    async def cancel(self, batch_id: str) -> ProviderBatch:
        client = self.backend.client()
        return _batch(await self._retried(lambda: client.batches.cancel(batch_id)))

    def listing(self, created_after: float) -> AsyncIterator[ProviderBatch]:
        client = self.backend.client()
        return self._pages(lambda: client.batches.list(limit=100), created_after)

    def _batch(self, raw: Any) -> ProviderBatch:
        return _batch(raw)

    async def results(self, batch: ProviderBatch) -> AsyncIterator[ItemResult]:
        client = self.backend.client()
        raw = await self._retried(lambda: client.batches.retrieve(batch.id))
        for file_id in (field_of(raw, "output_file_id"), field_of(raw, "error_file_id")):
            if not file_id:
                continue
            content = await self._retried(lambda f=file_id: client.files.content(f))
            for text in content.text.splitlines():
                if text.strip():
                    yield _item(text)


def _batch(raw: Any) -> ProviderBatch:
    status = str(field_of(raw, "status") or "unknown")
    counts = field_of(raw, "request_counts")
    causes: list[str] = []
    retryable = False
    errors = field_of(field_of(raw, "errors"), "data") or []
    for error in errors:
        code = field_of(error, "code") or "error"
        where = field_of(error, "line")
        at = f" (line {where})" if where is not None else ""
        causes.append(f"{field_of(error, 'message') or code}{at} [{code}]")
        retryable = retryable or code == "token_limit_exceeded"
    if status == "failed" and not causes:
        causes.append("OpenAI marked the batch failed without saying why")
    return ProviderBatch(
        id=str(field_of(raw, "id")),
        state=status,
        ended=status in _ENDED,
        created_at=float(field_of(raw, "created_at") or 0),
        requests=field_of(counts, "total"),
        succeeded=int(field_of(counts, "completed") or 0),
        failed=int(field_of(counts, "failed") or 0),
        rejected=tuple(causes) if status == "failed" else (),
        rejected_retryable=retryable,
        metadata=dict(field_of(raw, "metadata") or {}),
    )


def _item(text: str) -> ItemResult:
    """One line of an output or error file."""
    try:
        line = json.loads(text)
        custom_id = str(line["custom_id"])
    except (ValueError, KeyError, TypeError):
        return ItemResult("", None, f"an unreadable result line: {short(text, 120)}", True)
    error = line.get("error")
    if error:
        code = field_of(error, "code") or "error"
        message = field_of(error, "message") or code
        return ItemResult(custom_id, None, f"{message} [{code}]", code in _RETRYABLE_CODES)
    response = line.get("response") or {}
    status = response.get("status_code")
    body = response.get("body") or {}
    if status != 200:
        inner = body.get("error") if isinstance(body, dict) else None
        message = field_of(inner, "message") if inner else None
        return ItemResult(
            custom_id,
            None,
            f"HTTP {status}: {short(message or body)}",
            isinstance(status, int) and is_retryable_status(status),
        )
    n = len(body.get("choices") or []) or 1
    try:
        completions = reply_completions(body, n)
    except MalformedResponse as exc:
        return ItemResult(custom_id, None, f"malformed response: {exc}", True)
    return ItemResult(custom_id, [_batched(c) for c in completions])


def _batched(completion: Completion) -> Completion:
    return replace(completion, batch=True)
