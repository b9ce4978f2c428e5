"""The response cache: a sqlite file shared by every run, so that a re-run never pays
twice for the same request.

WAL mode lets runs read while another writes; the busy timeout makes concurrent writers
wait for each other.  Only successful responses are stored, keyed by ``cache_key``
(backend identity, prompt hash, sample index, attempt).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._paths import RESPONSES_FILE, cache_root
from ..errors import ConfigError
from ..models.base import Completion, Request
from ..prompting.render import prompt_hash
from ..vocabulary.chat import Message


@dataclass(frozen=True)
class CachedResponse:
    text: str
    tokens_in: int
    tokens_out: int
    latency_s: float
    finish_reason: str | None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    """The provider's prompt-cache counts of the call, so that a response read back (a
    batch item collected before a restart) is priced as it was billed."""
    reply_fault: str | None = None
    """The shape of a reply that held no usable text (``Completion.reply_fault``), so that
    a sample read back keeps its fault beside its figure."""

    @classmethod
    def of(cls, completion: Completion, text: str) -> CachedResponse:
        """What the cache keeps of a completion: its text and what its call cost."""
        return cls(
            text=text,
            tokens_in=completion.tokens_in,
            tokens_out=completion.tokens_out,
            latency_s=completion.latency_s,
            finish_reason=completion.finish_reason,
            cache_read_tokens=completion.cache_read_tokens,
            cache_write_tokens=completion.cache_write_tokens,
            cache_write_1h_tokens=completion.cache_write_1h_tokens,
            reply_fault=completion.reply_fault,
        )

    def completion(self, *, batch: bool) -> Completion:
        """The kept response as a completion again; ``batch``: drawn by one of the run's
        own provider batches (paid at the batch price, not a cache hit)."""
        return Completion(
            text=self.text,
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            latency_s=self.latency_s,
            finish_reason=self.finish_reason,
            batch=batch,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            cache_write_1h_tokens=self.cache_write_1h_tokens,
            reply_fault=Completion.known_reply_fault(self.reply_fault),
        )


def default_cache_path() -> Path:
    """``responses.sqlite`` in the cache folder (``$DEONTICBENCH_CACHE`` or the user's
    cache folder, see ``_paths.cache_root``); ``--cache FILE`` names another file."""
    return cache_root() / RESPONSES_FILE


def cache_key(identity: Mapping[str, Any], prompt_hash: str, sample: int, attempt: int) -> str:
    """The key of one response: backend identity, prompt, sample index and attempt.

    The sample index is part of the key because K samples of one prompt are K different
    draws; the attempt index because a request-error retry repeats the same prompt.
    """
    payload = json.dumps(
        {"identity": identity, "prompt": prompt_hash, "sample": sample, "attempt": attempt},
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(payload.encode("utf-8", errors="surrogatepass")).hexdigest()


def prompted_key(
    identity: Mapping[str, Any], messages: Sequence[Message], sample: int, attempt: int
) -> str:
    """The key of one sample of a prompted request: the one way the runner, the batch
    broker (``prompted_keys``) and the dry run key it (an agent turn is keyed by
    ``trials.turn_key``)."""
    return cache_key(identity, prompt_hash(messages), sample, attempt)


def prompted_keys(identity: Mapping[str, Any], request: Request) -> list[str]:
    """The keys of a request's samples (``sample_start`` on, ``n`` of them)."""
    start = request.sample_start
    return [
        prompted_key(identity, request.messages, s, request.attempt)
        for s in range(start, start + request.n)
    ]


_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    tokens_in INTEGER NOT NULL,
    tokens_out INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    finish_reason TEXT,
    created REAL NOT NULL
)
"""


_CACHE_COLUMNS = ("cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens")
_FAULT_COLUMN = "reply_fault"
"""Added after the first files: NULL for a reply with usable text, and for old rows."""


class ResponseCache:
    """A sqlite table of successful responses.  Errors are never stored.

    WAL mode lets readers proceed while another process writes, and the busy timeout
    makes concurrent writers wait for each other instead of failing.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA busy_timeout=60000")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(_SCHEMA)
            self._add_columns()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the response cache {self.path} ({exc}).") from None
        self.hits = 0
        self.stores = 0

    def _add_columns(self) -> None:
        """Files written before the prompt-cache counts get their columns (0 for old rows)."""
        have = {row[1] for row in self._db.execute("PRAGMA table_info(responses)")}
        added = [f"{name} INTEGER NOT NULL DEFAULT 0" for name in _CACHE_COLUMNS]
        added.append(f"{_FAULT_COLUMN} TEXT")
        for name, column in zip((*_CACHE_COLUMNS, _FAULT_COLUMN), added, strict=True):
            if name not in have:
                with contextlib.suppress(sqlite3.OperationalError):  # another process won
                    self._db.execute(f"ALTER TABLE responses ADD COLUMN {column}")

    def get(self, key: str) -> CachedResponse | None:
        row = self._db.execute(
            "SELECT text, tokens_in, tokens_out, latency_s, finish_reason, "
            + ", ".join((*_CACHE_COLUMNS, _FAULT_COLUMN))
            + " FROM responses WHERE key = ?",
            (key,),
        ).fetchone()
        if row is None:
            return None
        text, *rest = row
        if isinstance(text, bytes):  # stored by put() as a blob: see there
            text = text.decode("utf-8", errors="surrogatepass")
        self.hits += 1
        return CachedResponse(text, *rest)

    def put(self, key: str, response: CachedResponse) -> None:
        """Store a response's text (never anything else: a reply that is not text was
        an error, and errors are not cached)."""
        if not isinstance(response.text, str):
            return
        text: str | bytes = response.text
        try:
            response.text.encode("utf-8")
        except UnicodeEncodeError:
            # sqlite's TEXT is UTF-8; a lone surrogate is kept losslessly as a blob.
            text = response.text.encode("utf-8", errors="surrogatepass")
        for delay in (0.05, 0.2, 1.0, None):
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO responses (key, text, tokens_in, tokens_out, "
                    "latency_s, finish_reason, created, "
                    + ", ".join((*_CACHE_COLUMNS, _FAULT_COLUMN))
                    + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        text,
                        response.tokens_in,
                        response.tokens_out,
                        response.latency_s,
                        response.finish_reason,
                        time.time(),
                        response.cache_read_tokens,
                        response.cache_write_tokens,
                        response.cache_write_1h_tokens,
                        response.reply_fault,
                    ),
                )
                self.stores += 1
                return
            except sqlite3.OperationalError:
                # "database is locked" past the busy timeout: a cache miss later costs
                # one request, losing the run costs more, so retry briefly then give up.
                if delay is None:
                    return
                time.sleep(delay)

    def __len__(self) -> int:
        row = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(row[0])

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
