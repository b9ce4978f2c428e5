"""How a round of batch lines is cut into batches (``batching.chunk_runs``): within the
provider's limits per batch on requests, bytes and queued input tokens."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from deonticbench.evaluation.batching import chunk_runs


def limits(requests: int, size: int, tokens: int | None = None) -> Any:
    return SimpleNamespace(max_requests=requests, max_bytes=size, queue_tokens=tokens)


def test_each_limit_closes_a_batch_and_a_line_over_a_limit_goes_alone() -> None:
    lines = [(10, 100)] * 5
    assert chunk_runs(lines, limits(2, 10_000)) == [2, 2, 1]
    assert chunk_runs(lines, limits(100, 25)) == [2, 2, 1]
    assert chunk_runs(lines, limits(100, 10_000, tokens=300)) == [3, 2]
    # A line alone over a limit is still sent (the provider says why it refuses it).
    assert chunk_runs([(50, 1), (5, 1)], limits(100, 20)) == [1, 1]
    assert chunk_runs([], limits(1, 1)) == []
