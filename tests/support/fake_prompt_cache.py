"""Prompt caching billed as the providers document it, for the loopback fakes: the
synchronous endpoints (``fakeproviders``) and the batch APIs (``fake_batches``) read and
write the same kind of cache and report it in the same usage fields, so that a batch
run's price is tested against a bill exactly as a synchronous run's is.

* Anthropic: entries are written at ``cache_control`` breakpoints (at most four), for
  their TTL (5 minutes, or ``"ttl": "1h"``), refreshed when read; a breakpoint finds an
  entry at its own block or one of the 19 blocks before it (the 20-block lookback); a
  prefix shorter than ``cache_min_tokens`` is never written.  Usage says
  ``input_tokens`` (after the last read or write), ``cache_creation_input_tokens``,
  ``cache_read_input_tokens`` and ``cache_creation.ephemeral_{5m,1h}_input_tokens``.
* Token counts: with a real tokenizer, OpenAI's prompt is each message's role and text in
  the model's encoding plus its chat format's overhead (3 tokens a message, 3 to prime
  the reply), as OpenAI documents counting (with the toy word count, words only).
  Anthropic's is every block's text in the fake's Claude tokenizer (``claude_tokenizer``,
  else ``tokenizer``), and ``anthropic_count`` answers the ``count_tokens`` endpoint
  with the figure a call of the same body is billed, cache aside.
* OpenAI: every prompt of 1,024 tokens or more is cached after its response, keyed by
  ``prompt_cache_key``; a later prompt reads the longest shared prefix in steps of 128
  tokens past 1,024, as ``usage.prompt_tokens_details.cached_tokens``.

An entry a request writes becomes readable only when ``land`` is called with what the
request returned as pending: the synchronous fake lands it as the response begins, the
batch fake once the item is processed.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Billed", "Pending", "PromptCache", "Tokenizer"]

Tokenizer = Callable[[str], "list[Any]"]

ANTHROPIC_LOOKBACK = 20
ANTHROPIC_MAX_BREAKPOINTS = 4
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
OPENAI_CACHE_MIN = 1024
OPENAI_CACHE_STEP = 128
OPENAI_PER_MESSAGE = ("<|im_start|>", "<|im_sep|>", "<|im_end|>")
"""The chat format's three tokens around each message (OpenAI's documented count)."""
OPENAI_REPLY_PRIMING = ("<|im_start|>", "assistant", "<|im_sep|>")


@dataclass(frozen=True)
class Billed:
    """What one answered call was billed for, in the provider's own categories."""

    api: str
    model: str
    uncached: int
    """Input tokens at the full input price."""
    cache_write_5m: int
    cache_write_1h: int
    cache_read: int
    output: int
    batch: bool = False
    """Processed in a provider batch (billed at the batch price)."""

    @property
    def input_total(self) -> int:
        return self.uncached + self.cache_write_5m + self.cache_write_1h + self.cache_read


@dataclass
class _Entry:
    ready_at: float
    expires_at: float
    ttl: str


Pending = tuple[tuple[dict[str, _Entry], str, str], ...]
"""Entries a request wrote, (table, key, TTL): readable once landed."""


def _block_text(block: Any) -> str:
    """What a content block, system block or tool definition costs in tokens: its text,
    or for structured blocks their JSON without the cache marker."""
    if isinstance(block, str):
        return block
    if not isinstance(block, dict):
        return str(block)
    if block.get("type") == "text":
        return str(block.get("text") or "")
    if block.get("type") == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            return "".join(_block_text(b) for b in content)
        return str(content or "")
    return json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True)


def _anthropic_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's blocks in the order the cache reads them: tools, system, messages."""
    blocks: list[dict[str, Any]] = [dict(t) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        blocks += [{"type": "text", "text": system}] if system else []
    elif isinstance(system, list):
        blocks += [dict(b) for b in system]
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            blocks += [{"type": "text", "text": content, "_role": message.get("role")}]
        else:
            blocks += [{**b, "_role": message.get("role")} for b in content or []]
    return blocks


def _prefix_keys(model: str, blocks: list[dict[str, Any]]) -> list[str]:
    """A key per block boundary: the hash of the model and every block up to it."""
    digest = hashlib.sha256(model.encode())
    keys = []
    for block in blocks:
        clean = {k: v for k, v in block.items() if k != "cache_control"}
        digest.update(json.dumps(clean, sort_keys=True).encode("utf-8", "surrogatepass"))
        keys.append(digest.copy().hexdigest())
    return keys


def openai_prompt_tokens(
    body: dict[str, Any], tokenizer: Tokenizer, *, chat_format: bool = False
) -> list[Any]:
    """A chat-completions request's prompt as tokens: its messages' text, in order; with
    ``chat_format``, as OpenAI counts it: each message's role and text with the format's
    overhead around it, and the reply's priming."""
    tokens: list[Any] = []
    for message in body.get("messages") or []:
        content = message.get("content") or ""
        if isinstance(content, list):
            content = "".join(
                str(b.get("text") or b.get("content") or "") for b in content if isinstance(b, dict)
            )
        if not chat_format:
            tokens += tokenizer(str(content))
            continue
        tokens += [OPENAI_PER_MESSAGE[0], *tokenizer(str(message.get("role") or ""))]
        tokens += [OPENAI_PER_MESSAGE[1], *tokenizer(str(content)), OPENAI_PER_MESSAGE[2]]
    return [*tokens, *OPENAI_REPLY_PRIMING] if tokens and chat_format else tokens


@dataclass
class PromptCache:
    """Both providers' prompt caches and how they bill (module doc)."""

    tokenizer: Tokenizer = str.split
    cache_min_tokens: int = 1024
    claude_tokenizer: Tokenizer | None = None
    """How the fake counts a Claude prompt (Claude's tokenizer is not published); None:
    ``tokenizer``."""
    chat_format: bool = False
    """Count an OpenAI prompt with its chat format's overhead, as OpenAI bills; the fakes
    set it when given a real tokenizer (with words, the toy default, counts stay words)."""
    anthropic: dict[str, _Entry] = field(default_factory=dict)
    openai: dict[str, _Entry] = field(default_factory=dict)
    clock_offset: float = 0.0
    lock: threading.RLock = field(default_factory=threading.RLock)

    def now(self) -> float:
        return time.monotonic() + self.clock_offset

    def count(self, text: str) -> int:
        return len(self.tokenizer(text))

    def claude_count(self, text: str) -> int:
        return len((self.claude_tokenizer or self.tokenizer)(text))

    def _anthropic_sizes(self, blocks: list[dict[str, Any]]) -> list[int]:
        return [self.claude_count(_block_text({k: v for k, v in b.items() if k != "_role"}))
                for b in blocks]  # fmt: skip

    def anthropic_count(self, body: dict[str, Any]) -> int:
        """The ``count_tokens`` endpoint: the input a ``messages`` call of this body is
        billed, read from the cache or not."""
        return sum(self._anthropic_sizes(_anthropic_blocks(body)))

    def land(self, pending: Pending) -> None:
        """Make the entries a request wrote readable (from now on)."""
        with self.lock:
            now = self.now()
            for table, key, ttl in pending:
                table[key] = _Entry(ready_at=now, expires_at=now + TTL_SECONDS[ttl], ttl=ttl)

    def anthropic_usage(
        self, body: dict[str, Any], output: int, *, batch: bool = False
    ) -> tuple[dict[str, Any], Billed, Pending]:
        """Bill one messages request as Anthropic documents prompt caching."""
        model = str(body.get("model", ""))
        blocks = _anthropic_blocks(body)
        sizes = self._anthropic_sizes(blocks)
        prefix: list[int] = []
        for size in sizes:
            prefix.append((prefix[-1] if prefix else 0) + size)
        total = prefix[-1] if prefix else 0
        keys = _prefix_keys(model, blocks)
        marks = [i for i, b in enumerate(blocks) if isinstance(b.get("cache_control"), dict)]
        if len(marks) > ANTHROPIC_MAX_BREAKPOINTS:
            raise ValueError("more than four cache_control breakpoints")
        read_at = -1
        with self.lock:
            now = self.now()
            for mark in marks:
                for position in range(mark, max(mark - ANTHROPIC_LOOKBACK, -1), -1):
                    entry = self.anthropic.get(keys[position])
                    if entry and entry.ready_at <= now < entry.expires_at:
                        read_at = max(read_at, position)
                        break
            if read_at >= 0:
                hit = self.anthropic[keys[read_at]]
                hit.expires_at = now + TTL_SECONDS[hit.ttl]  # a read refreshes the entry
        read = prefix[read_at] if read_at >= 0 else 0
        writable = [m for m in marks if m > read_at and prefix[m] >= self.cache_min_tokens]
        written = prefix[writable[-1]] - read if writable else 0
        ttl = "5m"
        pending: Pending = ()
        if writable:
            ttl = str(blocks[writable[-1]]["cache_control"].get("ttl") or "5m")
            pending = tuple(
                (self.anthropic, keys[m], str(blocks[m]["cache_control"].get("ttl") or "5m"))
                for m in writable
            )
        billed = Billed(
            api="anthropic",
            model=model,
            uncached=total - read - written,
            cache_write_5m=written if ttl == "5m" else 0,
            cache_write_1h=written if ttl == "1h" else 0,
            cache_read=read,
            output=output,
            batch=batch,
        )
        usage = {
            "input_tokens": billed.uncached,
            "cache_creation_input_tokens": written,
            "cache_read_input_tokens": read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": billed.cache_write_5m,
                "ephemeral_1h_input_tokens": billed.cache_write_1h,
            },
            "output_tokens": output,
        }
        return usage, billed, pending

    def openai_usage(
        self, body: dict[str, Any], output: int, *, batch: bool = False
    ) -> tuple[dict[str, Any], Billed, Pending]:
        """Bill one chat-completions request as OpenAI documents automatic caching."""
        tokens = openai_prompt_tokens(body, self.tokenizer, chat_format=self.chat_format)
        cached, pending = self._openai_cached(body, tokens)
        prompt = len(tokens)
        model = str(body.get("model", ""))
        billed = Billed("openai", model, prompt - cached, 0, 0, cached, output, batch)
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
        return usage, billed, pending

    def _openai_cached(self, body: dict[str, Any], tokens: list[Any]) -> tuple[int, Pending]:
        """The longest earlier prefix of 1,024 tokens or more, in steps of 128, under the
        same prompt_cache_key; and the entries this prompt writes."""
        route = f"{body.get('model', '')}|{body.get('prompt_cache_key') or ''}"
        keys: list[str] = []
        digest = hashlib.sha256(route.encode())
        for start in range(0, len(tokens), OPENAI_CACHE_STEP):
            chunk = tokens[start : start + OPENAI_CACHE_STEP]
            if len(chunk) < OPENAI_CACHE_STEP:
                break
            digest.update(json.dumps(chunk).encode("utf-8", "surrogatepass"))
            end = start + OPENAI_CACHE_STEP
            if end >= OPENAI_CACHE_MIN:
                keys.append(f"{end}:{digest.copy().hexdigest()}")
        cached = 0
        with self.lock:
            now = self.now()
            for key in reversed(keys):
                entry = self.openai.get(key)
                if entry and entry.ready_at <= now < entry.expires_at:
                    entry.expires_at = now + TTL_SECONDS["5m"]
                    cached = int(key.split(":", 1)[0])
                    break
        return cached, tuple((self.openai, key, "5m") for key in keys)
