"""Anthropic messages API: ``anthropic:<model>``.

The API has no ``n``: each sample is its own call (concurrent, each retried on its own).
System messages go in the ``system`` field, not the conversation.  ``max_tokens`` is
required by the API, so a fallback applies when the registry gives none.
``reasoning_effort`` maps to the API's ``output_config.effort``; extended thinking with
a token budget is a provider-specific field: ``extra: {thinking: {...}}``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from typing import Any

from ._sdk import (
    MalformedResponse,
    classify_sdk_error,
    field_of,
    finish_reason_of,
    import_sdk,
    reply_text,
    token_count,
)
from .base import Completion, Request
from .registry import ModelSettings
from .remote import RemoteModel, env_key
from .retry import call_with_retries
from .tool_calls import (
    anthropic_messages,
    anthropic_tools,
    read_anthropic_tool_calls,
    wants_native_tools,
)

ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
FALLBACK_MAX_TOKENS = 8192


def _read_message(message: Any) -> Completion:
    """The text and token counts of a messages reply, or MalformedResponse.  Thinking
    blocks are the model's scratchpad, not its answer: only text blocks are joined."""
    content = field_of(message, "content")
    if not isinstance(content, list):
        raise MalformedResponse(
            "the response has no content"
            if content is None
            else f"content is {type(content).__name__}, not a list of blocks"
        )
    usage = field_of(message, "usage")
    return Completion(
        text=reply_text(content, where="content"),
        tokens_in=token_count(usage, "input_tokens"),
        tokens_out=token_count(usage, "output_tokens"),
        finish_reason=finish_reason_of(message),
        tool_calls=read_anthropic_tool_calls(content),
    )


class AnthropicModel(RemoteModel):
    def __init__(self, spec: str, model_name: str, settings: ModelSettings) -> None:
        url = os.environ.get("ANTHROPIC_BASE_URL", "").strip() or ANTHROPIC_DEFAULT_URL
        super().__init__(spec, "anthropic", model_name, settings, url)
        self.native_tools = wants_native_tools(settings.options)

    def client(self) -> Any:
        if self._client is None:
            anthropic = import_sdk("anthropic")
            self._client = anthropic.AsyncAnthropic(
                api_key=env_key("ANTHROPIC_API_KEY", required=True, purpose="anthropic models"),
                base_url=self.base_url,
                max_retries=0,  # our policy (retry.py) is the only one
                timeout=self.timeout_s,
            )
        return self._client

    async def check(self) -> None:
        self.client()
        await self.check_with(import_sdk("anthropic"), "ANTHROPIC_API_KEY")

    def request_fields(self, request: Request) -> dict[str, Any]:
        """The JSON fields of one call: system apart, sampling parameters if set."""
        p = self.params
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        fields: dict[str, Any] = {
            "model": self.model_name,
            "messages": anthropic_messages(request.messages),
            "max_tokens": p.max_tokens or FALLBACK_MAX_TOKENS,
        }
        if request.tools:
            fields["tools"] = anthropic_tools(request.tools)
        if system:
            fields["system"] = system
        if p.stop:
            fields["stop_sequences"] = list(p.stop)
        # Sampling fields travel in extra_body: recent SDKs dropped temperature and top_p
        # from their typed signature (newer models reject them), while the API still
        # takes them for the models that do; this works with old and new SDKs alike.
        body: dict[str, Any] = {}
        if p.temperature is not None:
            body["temperature"] = p.temperature
        if p.top_p is not None:
            body["top_p"] = p.top_p
        if p.reasoning_effort is not None:
            body["output_config"] = {"effort": p.reasoning_effort}
        body.update(p.extra)
        if body:
            fields["extra_body"] = body
        # The API has no seed; it stays in identity() so the cache key is still honest.
        return fields

    async def _one(self, fields: dict[str, Any]) -> Completion:
        # optional: the anthropic extra, only when chosen
        import anthropic

        client = self.client()

        async def once() -> tuple[Completion, float]:
            start = time.monotonic()
            async with self.in_flight:
                message = await client.messages.create(**fields)
            # Validated inside the retried call: a reply of the wrong shape is retried
            # like a 5xx and, if it stays malformed, is the sample's error.
            return _read_message(message), time.monotonic() - start

        outcome = await call_with_retries(
            once, lambda exc: classify_sdk_error(exc, anthropic), self.policy, rng=self._rng
        )
        if outcome.value is None:
            return Completion.failed(outcome.error or "request failed")
        completion, latency = outcome.value
        return dataclasses.replace(completion, latency_s=latency)

    async def generate(self, request: Request) -> list[Completion]:
        fields = self.request_fields(request)
        return list(await asyncio.gather(*(self._one(fields) for _ in range(request.n))))
