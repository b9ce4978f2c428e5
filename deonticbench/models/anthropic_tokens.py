"""Claude's prompt tokens as the Messages API counts them, for ``--dry-run``.

Claude's tokenizer is not published; cl100k_base undercounts it (by about 15 % on
DeonticBench's prompts).  The API's ``count_tokens`` endpoint is free and counts exactly
as a ``messages`` call is billed, so with ``ANTHROPIC_API_KEY`` set the dry run asks it
once per distinct prompt (K samples of a case share one), several at a time, under the
backend's own retry policy.  Without a key, or when the server cannot be reached, the
caller keeps its offline count and says why (``EndpointCounts.problem``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..vocabulary.chat import Message
from ._sdk import classify_sdk_error, import_sdk, token_count
from .backoff import call_with_retries
from .base import Model
from .remote import RemoteModel
from .tool_calls import anthropic_messages

CONCURRENT_COUNTS = 8
"""count_tokens calls in flight at once (the endpoint has its own, generous, rate limit)."""

Prompt = Sequence[Message]
PromptKey = tuple[tuple[str, str], ...]


def prompt_key(prompt: Prompt) -> PromptKey:
    """A prompt as a dictionary key: its messages' roles and texts (what is counted)."""
    return tuple((m.role, m.content) for m in prompt)


@dataclass
class EndpointCounts:
    """What the endpoint said of each prompt asked, or why it could not be asked."""

    counts: dict[PromptKey, int] = field(default_factory=dict)
    problem: str | None = None

    def get(self, prompt: Prompt) -> int | None:
        return self.counts.get(prompt_key(prompt))


def counts_by_endpoint(model: Model) -> bool:
    """Whether a model's prompts are counted by its provider's endpoint."""
    return model.provider == "anthropic" and isinstance(model, RemoteModel)


def _fields(model: RemoteModel, prompt: Prompt) -> dict[str, object]:
    """The fields of one count: the prompt as a ``messages`` call would send it."""
    fields: dict[str, object] = {
        "model": model.model_name,
        "messages": anthropic_messages(prompt),
    }
    system = "\n\n".join(m.content for m in prompt if m.role == "system")
    if system:
        fields["system"] = system
    return fields


async def _count_all(model: RemoteModel, prompts: Sequence[Prompt]) -> EndpointCounts:
    sdk = import_sdk("anthropic")
    client = model.client()
    slots = asyncio.Semaphore(CONCURRENT_COUNTS)

    async def one(prompt: Prompt) -> int | str:
        async def once() -> int:
            async with slots:
                reply = await client.messages.count_tokens(**_fields(model, prompt))
            return int(token_count(reply, "input_tokens"))

        outcome = await call_with_retries(
            once, lambda exc: classify_sdk_error(exc, sdk), model.policy
        )
        return outcome.value if outcome.value is not None else (outcome.error or "failed")

    try:
        answers = await asyncio.gather(*(one(p) for p in prompts))
    finally:
        await model.aclose()
    failed = next((a for a in answers if isinstance(a, str)), None)
    if failed is not None:
        return EndpointCounts(problem=f"count_tokens failed ({failed})")
    return EndpointCounts({prompt_key(p): int(a) for p, a in zip(prompts, answers, strict=True)})


def count_by_endpoint(model: Model, prompts: Iterable[Prompt]) -> EndpointCounts:
    """Each distinct prompt's input tokens from the provider's ``count_tokens`` endpoint
    (a prompt with no user message is not sent: the endpoint needs one)."""
    if not isinstance(model, RemoteModel) or not counts_by_endpoint(model):
        return EndpointCounts(problem="this provider has no count_tokens endpoint")
    try:
        model.client()  # the key is read here: none set is the offline fallback's case
    except Exception as exc:
        return EndpointCounts(problem=str(exc).rstrip("."))
    distinct = list(
        {prompt_key(p): p for p in prompts if any(m.role == "user" for m in p)}.values()
    )
    if not distinct:
        return EndpointCounts()
    return asyncio.run(_count_all(model, distinct))
