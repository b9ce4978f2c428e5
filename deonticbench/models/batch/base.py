"""What every provider batch API offers the runner: items, batches, results, the
interface (``BatchAPI``) and the one failure a submission can end in (``SubmitError``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._sdk import classify_sdk_error, import_sdk
from ..backoff import RetryPolicy, call_with_retries, short
from ..base import Completion, Model, Request

BATCH_PROVIDERS = ("openai", "anthropic")
"""Backends with a batch API; every other backend says it has none."""
DEFAULT_POLL_S = 30.0
"""Batches take minutes to hours (most end within the hour, all within 24 h): a look
every half minute notices the end soon enough and stays far below any rate limit."""


@dataclass(frozen=True)
class BatchItem:
    """One line of a batch: a request of ``request.n`` samples under one ``custom_id``
    (Anthropic has no ``n``: there every item is one sample)."""

    custom_id: str
    request: Request


@dataclass(frozen=True)
class ProviderBatch:
    """A batch as the provider reports it, in the provider-neutral terms the runner needs."""

    id: str
    state: str
    """The provider's own status word (``in_progress``, ``completed``, ``ended``, ...)."""
    ended: bool
    """No item will change any more: the results (if any) can be read."""
    created_at: float
    """Unix time the provider created it."""
    requests: int | None = None
    """How many requests it holds, when the provider says."""
    succeeded: int = 0
    failed: int = 0
    rejected: tuple[str, ...] = ()
    """Why the provider refused the whole batch: one sentence per cause (empty if not)."""
    rejected_retryable: bool = False
    """The refusal is one that passes (a full queue): submit its items again later."""
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ItemResult:
    """The outcome of one item: its completions, or an error sentence."""

    custom_id: str
    completions: list[Completion] | None
    error: str | None = None
    retryable: bool = False
    """Worth submitting again (expired, cancelled, rate-limited, a server error)."""


class SubmitError(Exception):
    """``create`` failed.  ``ambiguous``: the provider may have created the batch all the
    same (a timeout, a dropped connection, a server error), so the caller must look for
    it before submitting again; otherwise the refusal is definite (``sentence`` says why)."""

    def __init__(self, sentence: str, *, ambiguous: bool) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.ambiguous = ambiguous


def submit_is_ambiguous(exc: BaseException) -> bool:
    return isinstance(exc, SubmitError) and exc.ambiguous


class BatchAPI(ABC):
    """One provider's batch endpoint, with its documented limits."""

    provider: str
    max_requests: int
    """Requests per batch."""
    max_bytes: int
    """Bytes per batch (the JSONL file, or the request body)."""
    queue_tokens: int | None = None
    """Input tokens that may wait in the provider's batch queue at once (OpenAI's
    enqueued-token limit); None: the provider has none."""
    splits_n: bool = False
    """True when each sample must be its own item (no ``n`` in the API)."""
    poll_s: float = DEFAULT_POLL_S
    """Seconds between two looks at a batch in flight (the ``batch_poll_s`` option)."""
    cache_ttl: str | None = None
    """The prompt-cache lifetime the lines' breakpoints ask for (None: the provider
    caches by itself, without breakpoints)."""

    sdk_name: str = ""
    """The provider's SDK module (``openai``, ``anthropic``): its errors are classified
    by ``classify_sdk_error`` and mapped to ``SubmitError``."""
    policy: RetryPolicy
    """The backend's retry policy, which every call to the batch API follows."""

    def __init__(self, model: Model) -> None:
        self.model = model
        settings = getattr(model, "settings", None)
        if settings is not None:
            self.poll_s = float(settings.option("batch_poll_s", DEFAULT_POLL_S))
        self.policy = getattr(model, "policy", None) or RetryPolicy()

    # --- plumbing both providers share ---------------------------------------------------

    async def _retried(self, call: Any) -> Any:
        """``call()`` under the backend's retry policy; ConnectionError when it never
        answered."""
        sdk = import_sdk(self.sdk_name)
        outcome = await call_with_retries(
            call, lambda exc: classify_sdk_error(exc, sdk), self.policy
        )
        if outcome.value is None:
            raise ConnectionError(outcome.error or "the batch API did not answer")
        return outcome.value

    async def _created(self, create: Any) -> Any:
        """The batch ``create()`` made (not retried: a retry could create it twice), or
        the ``SubmitError`` its failure means: a 4xx is a refusal; a 5xx or a dropped
        connection may have created the batch before failing."""
        sdk = import_sdk(self.sdk_name)
        try:
            return await create()
        except sdk.APIStatusError as exc:
            status = int(exc.status_code)
            raise SubmitError(
                f"{self.provider_title} refused the batch (HTTP {status}): {short(exc.message)}",
                ambiguous=status >= 500,
            ) from None
        except sdk.APIConnectionError as exc:
            raise SubmitError(f"creating the batch failed: {short(exc)}", ambiguous=True) from None

    async def _pages(self, first: Any, created_after: float) -> AsyncIterator[ProviderBatch]:
        """The batches of a listing (``first()`` its first page), newest first, down to
        ``created_after``; each read by ``_batch``."""
        page = await self._retried(first)
        while True:
            for raw in page.data:
                batch = self._batch(raw)
                if batch.created_at < created_after:
                    return  # newest first: everything further is older
                yield batch
            if not page.has_next_page():
                return
            page = await self._retried(page.get_next_page)

    @property
    def provider_title(self) -> str:
        return {"openai": "OpenAI", "anthropic": "Anthropic"}.get(self.provider, self.provider)

    @abstractmethod
    def _batch(self, raw: Any) -> ProviderBatch:
        """A provider's batch object in the runner's terms."""

    @abstractmethod
    def line(self, item: BatchItem) -> dict[str, Any]:
        """The item as the provider's batch wants it (a JSONL line or a request entry)."""

    @abstractmethod
    async def submit(self, items: Sequence[BatchItem], metadata: Mapping[str, str]) -> str:
        """Create the batch; its id.  Raises ``SubmitError``."""

    @abstractmethod
    async def retrieve(self, batch_id: str) -> ProviderBatch: ...

    @abstractmethod
    def results(self, batch: ProviderBatch) -> AsyncIterator[ItemResult]:
        """Every item's outcome, in whatever order the provider returns them."""

    @abstractmethod
    async def cancel(self, batch_id: str) -> ProviderBatch: ...

    @abstractmethod
    def listing(self, created_after: float) -> AsyncIterator[ProviderBatch]:
        """The account's batches created at or after ``created_after`` (Unix time),
        newest first."""
