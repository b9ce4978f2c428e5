"""Provider batch APIs behind one small interface: submit many requests at once at the
provider's batch price, poll, read the results by ``custom_id``, cancel, and list the
account's batches (to find one whose id a killed run never wrote down).

One module per provider (``openai_batches``: a JSONL file uploaded through the Files API,
then ``/v1/batches``; ``anthropic_batches``: Message Batches), chosen by ``batch_api``.
The orchestration (rounds, the intent records, polling, the response cache) is the
evaluation stage's (``evaluation.batching``); this package only speaks the wire format.
"""

from __future__ import annotations

from ...errors import ConfigError
from ..base import Model
from .base import (
    BATCH_PROVIDERS,
    DEFAULT_POLL_S,
    BatchAPI,
    BatchItem,
    ItemResult,
    ProviderBatch,
    SubmitError,
    submit_is_ambiguous,
)

__all__ = [
    "BATCH_PROVIDERS",
    "DEFAULT_POLL_S",
    "BatchAPI",
    "BatchItem",
    "ItemResult",
    "ProviderBatch",
    "SubmitError",
    "batch_api",
    "submit_is_ambiguous",
]


def batch_api(model: Model) -> BatchAPI:
    """The batch API of a model's backend; a backend without one is one sentence."""
    if model.provider == "openai":
        from .openai_batches import OpenAIBatches  # start-up: the SDK only when chosen

        return OpenAIBatches(model)
    if model.provider == "anthropic":
        from .anthropic_batches import AnthropicBatches  # start-up: as above

        return AnthropicBatches(model)
    raise ConfigError(
        f"--batch needs a provider batch API, which only the openai and anthropic backends "
        f"have; {model.provider} has none, so run without --batch."
    )
