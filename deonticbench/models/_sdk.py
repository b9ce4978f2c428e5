"""Shared handling of the official OpenAI and Anthropic SDK errors.

Both SDKs raise the same shapes (``APIStatusError`` with ``status_code``, ``response``
and ``body``; ``APITimeoutError`` under ``APIConnectionError``), so one classifier turns
either into a ``retry.Failure``.  A 200 whose body is not JSON surfaces as a
``ValueError`` from the client's parser: a malformed response, worth retrying.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ..errors import missing_extra
from .backoff import Failure, is_retryable_status, parse_retry_after, short

if TYPE_CHECKING:
    from .base import ChoiceFault


def import_sdk(name: str) -> ModuleType:
    """The provider's official package; a missing one is one sentence naming the extra."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise missing_extra(f"the {name} backend", name, package=name) from None


class MalformedResponse(Exception):
    """A response that parsed but lacks what a completion needs (no choices, no text), or
    has it in the wrong shape.  Raised inside the retried call, so it is retried like a
    5xx and, if it stays malformed, becomes the sample's error record."""

    def __init__(self, message: str, *, fault: ChoiceFault | None = None) -> None:
        super().__init__(message)
        self.fault = fault
        """The body's shape (``models.base.REPLY_FAULTS``) when it held no usable text;
        the error record names it."""


def field_of(obj: Any, name: str) -> Any:
    """A field of a parsed reply, whether the SDK gave a model object or a plain dict
    (SDKs build replies without validating them, so either can appear)."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def reply_text(content: Any, *, where: str) -> str:
    """The text of a message's content: a string, nothing (""), or a list of parts whose
    text parts are joined (some OpenAI-compatible servers send parts).  Anything else is
    a malformed reply."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
                continue
            kind = field_of(part, "type")
            text = field_of(part, "text")
            if kind in (None, "text", "output_text") and text is not None:
                if not isinstance(text, str):
                    raise MalformedResponse(f"{where} has a text part that is not text")
                texts.append(text)
            elif kind is None:
                raise MalformedResponse(f"{where} has a part that is neither text nor typed")
            # Typed parts other than text (reasoning, images, refusals) are not the answer.
        return "".join(texts)
    raise MalformedResponse(f"{where} is {type(content).__name__}, not text")


def token_count(usage: Any, name: str) -> int:
    """A token count from a reply's usage; absent is 0, anything but a whole number is a
    malformed reply."""
    value = field_of(usage, name) if usage is not None else None
    if value is None:
        return 0
    if isinstance(value, bool):
        raise MalformedResponse(f"usage.{name} is not a number")
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float) and value.is_integer():
        return max(int(value), 0)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise MalformedResponse(f"usage.{name} is {value!r}, not a number")


def finish_reason_of(obj: Any) -> str | None:
    reason = field_of(obj, "finish_reason")
    if reason is None:
        reason = field_of(obj, "stop_reason")
    return reason if isinstance(reason, str) else None


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
