"""Shared handling of the official OpenAI and Anthropic SDK errors.

Both SDKs raise the same shapes (``APIStatusError`` with ``status_code``, ``response``
and ``body``; ``APITimeoutError`` under ``APIConnectionError``), so one classifier turns
either into a ``retry.Failure``.  A 200 whose body is not JSON surfaces as a
``ValueError`` from the client's parser: a malformed response, worth retrying.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from .retry import Failure, is_retryable_status, parse_retry_after, short


def import_sdk(name: str) -> ModuleType:
    """The provider's official package; a missing one is one sentence naming the extra."""
    from ..errors import ConfigError

    try:
        return importlib.import_module(name)
    except ImportError:
        raise ConfigError(
            f"the {name} package is not installed: pip install -e '.[{name}]'."
        ) from None


class MalformedResponse(Exception):
    """A response that parsed but lacks what a completion needs (no choices, no text)."""


def provider_message(exc: Any) -> str:
    """The provider's own error message, without the SDK's 'Error code: ...' wrapping."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return short(inner["message"])
        if isinstance(inner, str):
            return short(inner)
    return short(getattr(exc, "message", None) or exc)


def classify_sdk_error(exc: Exception, sdk: ModuleType) -> Failure:
    """Map an exception from an SDK call to a retryable or final failure."""
    if isinstance(exc, sdk.APIStatusError):
        status = int(exc.status_code)
        retryable = is_retryable_status(status)
        headers = getattr(getattr(exc, "response", None), "headers", None)
        return Failure(
            label=f"HTTP {status}",
            detail=provider_message(exc),
            retryable=retryable,
            retry_after=parse_retry_after(headers) if retryable else None,
        )
    if isinstance(exc, sdk.APITimeoutError):
        return Failure(label="timeout", detail="no response within the client timeout")
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc
        return Failure(label="connection error", detail=short(cause))
    if isinstance(exc, sdk.APIResponseValidationError | MalformedResponse | ValueError):
        return Failure(label="malformed response", detail=short(exc, 160))
    # Anything else is a bug or an SDK surprise: fail this request loudly, never retry.
    return Failure(
        label="unexpected error", detail=f"{type(exc).__name__}: {short(exc)}", retryable=False
    )
