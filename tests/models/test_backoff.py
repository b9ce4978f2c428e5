"""The retry policy on its own: backoff bounds, Retry-After parsing, give-up messages."""

from __future__ import annotations

import email.utils
import random
import subprocess
import sys

import pytest

from deonticbench.models.backoff import (
    Failure,
    RetryPolicy,
    call_with_retries,
    parse_retry_after,
)


def test_full_jitter_stays_within_the_exponential_cap() -> None:
    policy = RetryPolicy(base_s=1.0, cap_s=10.0)
    rng = random.Random(0)
    for tries_done, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)]:
        waits = [policy.backoff(tries_done, rng) for _ in range(200)]
        assert all(0.0 <= w <= ceiling for w in waits)
        assert max(waits) > ceiling * 0.8  # full jitter spreads over the whole range


def test_retry_after_seconds_milliseconds_and_http_date() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "7"}) == 0.25
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=now) == pytest.approx(30.0)
    assert parse_retry_after({"retry-after": email.utils.formatdate(now - 5)}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


async def test_waits_follow_retry_after_then_give_up_with_the_count() -> None:
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    async def always_busy() -> str:
        raise RuntimeError("busy")

    def classify(exc: Exception) -> Failure:
        return Failure(label="HTTP 429", detail=str(exc), retry_after=2.5)

    outcome = await call_with_retries(
        always_busy, classify, RetryPolicy(max_tries=4, retry_after_cap_s=2.0), sleep=record
    )
    assert outcome.value is None and outcome.tries == 4
    assert outcome.error == "HTTP 429 after 4 tries: busy"
    assert waits == [2.0, 2.0, 2.0]  # clamped to retry_after_cap_s, none after the last try


async def test_permanent_failure_stops_at_once() -> None:
    calls = 0

    async def forbidden() -> str:
        nonlocal calls
        calls += 1
        raise PermissionError("no")

    outcome = await call_with_retries(
        forbidden,
        lambda exc: Failure(label="HTTP 401", detail="bad key", retryable=False),
        RetryPolicy(),
    )
    assert calls == 1 and outcome.error == "HTTP 401: bad key"


async def test_success_after_failures_returns_the_value() -> None:
    attempts = iter([ValueError("garbled"), ValueError("garbled"), "ok"])

    async def flaky() -> str:
        item = next(attempts)
        if isinstance(item, Exception):
            raise item
        return item

    outcome = await call_with_retries(
        flaky,
        lambda exc: Failure(label="malformed response"),
        RetryPolicy(base_s=0.001, cap_s=0.002),
    )
    assert outcome.value == "ok" and outcome.tries == 3 and outcome.error is None


async def test_retries_are_logged_and_nothing_is_printed_by_default(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def no_wait(seconds: float) -> None:
        return None

    async def always_busy() -> str:
        raise RuntimeError("busy")

    def classify(exc: Exception) -> Failure:
        return Failure(label="HTTP 503", detail=str(exc), retry_after=0.0)

    with caplog.at_level("INFO", logger="deonticbench.models.backoff"):
        await call_with_retries(always_busy, classify, RetryPolicy(max_tries=3), sleep=no_wait)
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert said[:2] == [
        ("INFO", "HTTP 503 (try 1 of 3); retrying in 0.0 s"),
        ("INFO", "HTTP 503 (try 2 of 3); retrying in 0.0 s"),
    ]
    assert said[2] == ("WARNING", "request failed for good: HTTP 503 after 3 tries: busy")
    # Without the user's own logging set-up nothing shows, warnings included (pytest's
    # own handler would hide Python's last-resort printing, so a bare interpreter runs it).
    script = (
        "import asyncio\n"
        "from deonticbench.models.backoff import Failure, RetryPolicy, call_with_retries\n"
        "async def busy(): raise RuntimeError('busy')\n"
        "async def no_wait(s): pass\n"
        "asyncio.run(call_with_retries(busy, lambda e: Failure('HTTP 503', str(e)),\n"
        "    RetryPolicy(max_tries=2), sleep=no_wait))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and (done.stdout, done.stderr) == ("", "")
