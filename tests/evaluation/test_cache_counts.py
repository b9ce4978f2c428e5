"""The response cache keeps a response's prompt-cache counts, so that a
response read back is priced as it was billed; a file written before them still opens."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from deonticbench.evaluation.cache import CachedResponse, ResponseCache


def test_prompt_cache_counts_round_trip(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "r.sqlite") as cache:
        cache.put("k", CachedResponse("text", 1000, 10, 0.5, "stop", 800, 150, 50))
        assert cache.get("k") == CachedResponse("text", 1000, 10, 0.5, "stop", 800, 150, 50)


def test_a_file_from_before_the_counts_opens_and_reads_them_as_zero(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, tokens_in INTEGER "
        "NOT NULL, tokens_out INTEGER NOT NULL, latency_s REAL NOT NULL, finish_reason TEXT, "
        "created REAL NOT NULL)"
    )
    db.execute("INSERT INTO responses VALUES ('old', 'hi', 5, 1, 0.1, 'stop', 0)")
    db.commit()
    db.close()
    with ResponseCache(path) as cache:
        assert cache.get("old") == CachedResponse("hi", 5, 1, 0.1, "stop", 0, 0, 0)
        cache.put("new", CachedResponse("yo", 7, 2, 0.2, None, 3, 4, 0))
        assert cache.get("new") == CachedResponse("yo", 7, 2, 0.2, None, 3, 4, 0)
