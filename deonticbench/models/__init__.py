"""The models, after prompting and before the solver: backends behind one small async
interface (``base``: a ``Request``, never gold, in; exactly ``n`` ``Completion``s out).

One module per backend (OpenAI and OpenAI-compatible servers, Anthropic, vLLM, a local
GGUF; ``remote`` is what the HTTP backends share), chosen by ``loader``; per-model
parameters from ``eval/models.yaml`` (``registry``: ``ModelSettings``), retries
(``backoff``), prompt token counts (``tokens``), tool calls in each provider's wire format
(``tool_calls``), the constrained tool mode's schema and bounds (``constrained``),
and two backends that pay for nothing: ``reference`` (the case's own
gold material, the pipeline's self-check) and ``replay`` (saved responses, or an earlier
run's records and trajectories).  ``batch`` speaks the providers' batch APIs (OpenAI's
``/v1/batches``, Anthropic's Message Batches) for ``eval --batch``.  Backends import
their provider SDKs only when chosen, so ``import deonticbench.models`` stays cheap and
works without any optional extra.
"""

from __future__ import annotations

from .anthropic_tokens import count_by_endpoint, counts_by_endpoint
from .base import (
    Completion,
    Model,
    Request,
    add_calls,
    cache_breakpoints,
    cache_routed,
    cacheable,
    calls_sent,
    config_of,
    constrained_turns,
    ignored_params_note,
    limit_in_flight,
    model_notes,
    turn_argument_chars,
)
from .batch import BatchAPI, BatchItem, ItemResult, ProviderBatch, SubmitError, batch_api
from .constrained import (
    PATH_CHARS,
    at_bound,
    bound_note,
    bounded,
    decoded_under_schema,
    path_pattern,
)
from .loader import BACKENDS, check_spec, load_model
from .reference import ReferenceModel
from .registry import (
    ZERO_COST,
    Cost,
    ModelSettings,
    Prices,
    billed_split,
    load_registry,
    model_prices,
    price_split,
    price_tokens,
)
from .replay import ReplayModel
from .sampling import RunSampling, fixed_params, run_sampling
from .tokens import count_prompt_tokens, request_prompt_tokens, token_count_method
from .tool_calls import call_from_json

__all__ = [
    "BACKENDS",
    "PATH_CHARS",
    "ZERO_COST",
    "BatchAPI",
    "BatchItem",
    "Completion",
    "Cost",
    "ItemResult",
    "Model",
    "ModelSettings",
    "Prices",
    "ProviderBatch",
    "ReferenceModel",
    "ReplayModel",
    "Request",
    "RunSampling",
    "SubmitError",
    "add_calls",
    "at_bound",
    "batch_api",
    "billed_split",
    "bound_note",
    "bounded",
    "cache_breakpoints",
    "cache_routed",
    "cacheable",
    "call_from_json",
    "calls_sent",
    "check_spec",
    "config_of",
    "constrained_turns",
    "count_by_endpoint",
    "count_prompt_tokens",
    "counts_by_endpoint",
    "decoded_under_schema",
    "fixed_params",
    "ignored_params_note",
    "limit_in_flight",
    "load_model",
    "load_registry",
    "model_notes",
    "model_prices",
    "path_pattern",
    "price_split",
    "price_tokens",
    "request_prompt_tokens",
    "run_sampling",
    "token_count_method",
    "turn_argument_chars",
]
