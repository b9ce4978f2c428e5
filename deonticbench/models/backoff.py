"""Our retry policy for provider calls: exponential backoff with full jitter.

The official clients' own retries are switched off (``max_retries=0``) so that this is
the only policy: one place decides what is transient, how long to wait, when to give
up, and how the final failure reads in a record ("HTTP 500 after 6 tries: ...").
A server's ``Retry-After`` (seconds or an HTTP date; ``retry-after-ms`` too) overrides
the computed wait, because a rate limiter knows better than our guess.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

# Nothing is printed by default (the library adds no handler): a user who wants to see
# each retry enables it, e.g. ``logging.getLogger("deonticbench").setLevel("INFO")``.
logger = logging.getLogger(__name__)

# 408 timeout, 409 conflict (OpenAI uses it for a lock), 425 too early, 429 rate limit,
# every 5xx (Anthropic's 529 "overloaded" included): worth another try.
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


@dataclass(frozen=True)
class RetryPolicy:
    max_tries: int = 6
    """Total tries per call, the first included."""
    base_s: float = 1.0
    """Backoff before try k+1 is uniform in [0, min(cap_s, base_s * 2**k)]."""
    cap_s: float = 60.0
    retry_after_cap_s: float = 300.0
    """A Retry-After longer than this is clamped, so one bad header cannot stall a run."""

    def backoff(self, tries_done: int, rng: random.Random) -> float:
        return rng.uniform(0.0, min(self.cap_s, self.base_s * (2 ** (tries_done - 1))))


@dataclass(frozen=True)
class Failure:
    """How one failed try is classified by the backend."""

    label: str
    """Short kind of failure: 'HTTP 500', 'timeout', 'connection error', 'malformed response'."""
    detail: str = ""
    """The provider's own message, if any."""
    retryable: bool = True
    retry_after: float | None = None

    def message(self, tries: int) -> str:
        head = f"{self.label} after {tries} tries" if self.retryable else self.label
        return f"{head}: {self.detail}" if self.detail else head


class Outcome(Generic[T]):
    """The result of ``call_with_retries``: a value, or the final failure message."""

    __slots__ = ("error", "tries", "value")

    def __init__(self, value: T | None, error: str | None, tries: int) -> None:
        self.value = value
        self.error = error
        self.tries = tries


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    classify: Callable[[Exception], Failure],
    policy: RetryPolicy,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Outcome[T]:
    """Run ``call`` until it succeeds, fails for good, or runs out of tries."""
    rng = rng or random.Random()
    tries = 0
    while True:
        tries += 1
        try:
            return Outcome(await call(), None, tries)
        except Exception as exc:  # classify decides; cancellation is not an Exception
            failure = classify(exc)
        if not failure.retryable or tries >= policy.max_tries:
            logger.warning("request failed for good: %s", failure.message(tries))
            return Outcome(None, failure.message(tries), tries)
        if failure.retry_after is not None:
            wait = min(max(failure.retry_after, 0.0), policy.retry_after_cap_s)
        else:
            wait = policy.backoff(tries, rng)
        logger.info(
            "%s (try %d of %d); retrying in %.1f s", failure.label, tries, policy.max_tries, wait
        )
        await sleep(wait)


def parse_retry_after(
    headers: Mapping[str, str] | Any, *, now: float | None = None
) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    if headers is None:
        return None
    getter = getattr(headers, "get", None)
    if getter is None:
        return None
    millis = getter("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    raw = getter("retry-after")
    if not raw:
        return None
    raw = str(raw).strip()
    try:
        return max(float(raw), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)


def short(text: object, limit: int = 300) -> str:
    """One line of at most ``limit`` characters, for an error message in a record."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
