"""``eval --batch``: the prompted modes' requests sent through the provider's batch API
(half price), in rounds, without losing or paying twice for anything submitted.

The runner works as it always does; only where it would call the model it asks the
``BatchBroker`` instead, which holds every request until each sample still to do is
either waiting for a response or recorded, then sends all that is waiting as one round
of batches (split within the provider's limits: requests, bytes and, for OpenAI, the
input tokens that may be enqueued at once).  Round 1 is every first attempt; a retry
with feedback is asked for only once its sample's response has been judged, so retries
go in a later round.  Agentic trials never come here: they stay interactive.

Nothing is lost or paid twice (``store.batches`` keeps the record):

* an intent record (the chunk's ``custom_id`` and the response-cache keys they fill) is
  written before each ``create``, the batch id right after;
* a run started again first looks at its intents: an intent without an id is searched
  for in the provider's list (OpenAI: the ``metadata`` carries the run and the chunk;
  Anthropic, which has no metadata: a batch created after the intent with its request
  count) and adopted, or known never created (and sent again), or, when several could
  be it, one sentence says so and the run stops;
* batches already submitted are polled, never sent again: a request whose
  ``custom_id`` is in one waits for it;
* each result goes to the response cache as soon as it is read, and a response a batch
  of *this* run drew counts as paid (``paid``) whether it reaches the record in this
  process or, after a resume, from the cache: its cost is counted once, in the one
  record of its sample.

An item that errored, expired or came back with a non-200 status is sent again in the
next round (up to ``MAX_TRIES`` batches per item; a request the provider refuses as
malformed is not retried but becomes the sample's error, as an interactive failure
would).  A batch refused whole is one sentence per cause, and its requests fail with
that sentence (or wait for room, when the cause is a full queue), never a silent gap.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ConfigError
from ..models.base import Completion, Model, Request, add_calls
from ..models.batch import BatchAPI, BatchItem, ItemResult, ProviderBatch, SubmitError
from ..models.tokens import count_prompt_tokens
from ..store.batches import BatchLog, Chunk

# The commands on a run's batches from outside a run (``deonticbench batches``) live in
# ``batch_admin``; their names stay importable from here.
from .batch_admin import adopt, cancel_open, describe, refresh_states
from .cache import CachedResponse, ResponseCache, prompted_keys

MAX_TRIES = 3
"""Batches one item may go through before its failure is the sample's error."""
CLOCK_SKEW_S = 60.0
"""How much earlier than our intent the provider's clock may date the batch we created."""


@dataclass
class BatchStats:
    """What the live display shows about the batches."""

    in_flight: int = 0
    pending: int = 0
    done: int = 0
    failed: int = 0
    started: float = field(default_factory=time.monotonic)

    def line(self) -> str:
        elapsed = int(time.monotonic() - self.started)
        clock = f"{elapsed // 3600}:{elapsed % 3600 // 60:02d}:{elapsed % 60:02d}"
        return (
            f"batches: {self.in_flight} in flight, requests {self.pending} pending / "
            f"{self.done} done / {self.failed} failed, {clock} elapsed"
        )


@dataclass
class _Waiter:
    """A request (or, where the API has no ``n``, one sample of it) waiting for a batch."""

    item: BatchItem
    keys: list[str]
    future: asyncio.Future[list[Completion]]
    tokens: int = 0


class BatchBroker:
    """Collects the runner's prompted requests into rounds of provider batches."""

    def __init__(
        self,
        model: Model,
        api: BatchAPI,
        log: BatchLog,
        cache: ResponseCache,
        *,
        poll_s: float | None = None,
        notify: Callable[[str], None] | None = None,
        show: Callable[[BatchStats], None] | None = None,
        identity: Mapping[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.api = api
        self.log = log
        self.cache = cache
        # The run's identity (``RunSampling.identity``), as the runner keys responses.
        self.identity = model.identity() if identity is None else identity
        self.poll_s = api.poll_s if poll_s is None else poll_s
        self.notify = notify or (lambda text: None)
        self.show = show or (lambda stats: None)
        self.stats = BatchStats()
        self._paid = log.paid_keys()
        self._expected = 0
        self._finished = 0
        self._waiting = 0
        self._pending: list[_Waiter] = []
        self._attached: dict[str, list[_Waiter]] = {}
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self._dispatching: asyncio.Task[None] | None = None
        self._round = 1 + max((c.round for c in log.chunks.values()), default=0)
        self._enqueued: dict[str, int] = {}
        self._room = asyncio.Event()

    # --- what the runner calls -----------------------------------------------------------

    def expect(self, samples: int) -> None:
        """How many prompted samples this run still has to record."""
        self._expected = samples

    def sample_done(self) -> None:
        self._finished += 1
        self._check_round()

    @contextlib.contextmanager
    def holding(self, samples: int) -> Iterator[None]:
        """Samples the runner holds back until a request of theirs is answered (a case's
        samples the cache answered wait for those it did not): they count as waiting."""
        self._waiting += samples
        try:
            yield
        finally:
            self._waiting -= samples

    def paid(self, key: str) -> bool:
        """A response under ``key`` was drawn (and paid for) by a batch of this run."""
        return key in self._paid

    async def start(self) -> None:
        """Before any request: settle every intent an earlier process left without a batch
        id, and start collecting the batches still open."""
        self.log.ensure_run_id()
        for chunk in list(self.log.chunks.values()):
            if chunk.orphan:
                await self._find(chunk)
        for chunk in list(self.log.chunks.values()):
            if not chunk.open:
                continue
            assert chunk.batch_id is not None
            if (await self.api.retrieve(chunk.batch_id)).ended:
                # Ended while no run was watching: read it now, so that the cache holds
                # its responses before any sample asks (and they count as paid here).
                await self._collect(chunk)
            else:
                self._watch(chunk)

    async def generate(self, request: Request) -> list[Completion]:
        """The runner's request, answered by a batch (exactly ``request.n`` completions)."""
        samples = range(request.sample_start, request.sample_start + request.n)
        keys = prompted_keys(self.identity, request)
        if self.api.splits_n:
            parts = [
                (replace(request, n=1, sample_start=s), [key])
                for s, key in zip(samples, keys, strict=True)
            ]
        else:
            parts = [(request, keys)]
        tokens = count_prompt_tokens(self.model, request.messages)
        # The request's samples wait until all its parts are answered (the runner gets
        # them together), so they count as waiting until then, not part by part.
        self._waiting += request.n
        try:
            futures = [self._wait(part, part_keys, tokens) for part, part_keys in parts]
            self._check_round()
            drawn = await asyncio.gather(*futures)
        finally:
            self._waiting -= request.n
        return [c for completions in drawn for c in completions]

    async def close(self) -> list[Chunk]:
        """Stop polling (the batches keep running at the provider); the chunks left open."""
        tasks = [t for t in (*self._watchers.values(), self._dispatching) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        # A stop that came during a create leaves an intent without an id: settle it now
        # (the batch may exist all the same), so that the batches left running are known.
        for chunk in list(self.log.chunks.values()):
            if chunk.orphan:
                with contextlib.suppress(ConfigError, ConnectionError):
                    # Adopt only: a create cut short may still be under way at the
                    # provider, so "none found" is settled by the next run, not now.
                    await self._find(chunk, abandon=False)
        return [c for c in self.log.chunks.values() if c.open]

    # --- rounds ------------------------------------------------------------------------

    def _wait(
        self, request: Request, keys: list[str], tokens: int
    ) -> asyncio.Future[list[Completion]]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[Completion]] = loop.create_future()
        custom_id = f"db{keys[0][:40]}n{len(keys)}"
        waiter = _Waiter(BatchItem(custom_id, request), keys, future, tokens)
        self.stats.pending += 1
        if not self._answered(waiter):
            self._pending.append(waiter)
        return future

    def _answered(self, waiter: _Waiter) -> bool:
        """Answer a waiter from the response cache when a batch of this run already drew
        its responses (a watcher read them while the runner was not yet asking)."""
        if not all(k in self._paid for k in waiter.keys):
            return False
        hits = [self.cache.get(k) for k in waiter.keys]
        if any(h is None for h in hits):
            return False
        self._resolve(waiter, [h.completion(batch=True) for h in hits if h is not None], None)
        return True

    def _check_round(self) -> None:
        """Send a round once every sample still to do is waiting for a response."""
        if not self._pending or self._dispatching is not None:
            return
        if self._waiting < self._expected - self._finished:
            return
        self._dispatching = asyncio.ensure_future(self._dispatch())

    async def _dispatch(self) -> None:
        waiters, self._pending = self._pending, []
        round_ = self._round
        self._round += 1
        try:
            fresh: list[_Waiter] = []
            for waiter in waiters:
                if self._answered(waiter):
                    continue
                custom_id = waiter.item.custom_id
                chunk = self.log.latest_with(custom_id)
                if (
                    chunk is not None
                    and chunk.batch_id is not None
                    and (not chunk.collected or custom_id not in chunk.failed)
                ):
                    # Sent before (by an earlier process): wait for it, never send it again.
                    self._attach(waiter, chunk)
                    if chunk.name not in self._watchers or self._watchers[chunk.name].done():
                        self._watch(chunk)
                elif self.log.tries(custom_id) >= MAX_TRIES:
                    error = chunk.failed.get(custom_id, "failed") if chunk else "failed"
                    self._resolve(waiter, None, f"{error} (after {MAX_TRIES} batches)")
                else:
                    fresh.append(waiter)
            for part in self._chunks(fresh):
                await self._submit(part, round_)
        except Exception as exc:
            for waiter in waiters:
                if not waiter.future.done():
                    waiter.future.set_exception(exc)
            raise
        finally:
            self._dispatching = None
        self._check_round()

    def _chunks(self, waiters: list[_Waiter]) -> Iterator[list[_Waiter]]:
        """Consecutive runs of the waiters within the provider's limits per batch."""
        sizes = (
            (len(json.dumps(self.api.line(w.item), ensure_ascii=False).encode()) + 1, w.tokens)
            for w in waiters
        )
        runs = chunk_runs(list(sizes), self.api)
        start = 0
        for length in runs:
            yield waiters[start : start + length]
            start += length

    async def _submit(self, waiters: list[_Waiter], round_: int) -> None:
        tokens = sum(w.tokens for w in waiters)
        await self._queue_room(tokens)
        name = self.log.new_chunk_name()
        chunk = self.log.intent(
            name, self.api.provider, round_, {w.item.custom_id: w.keys for w in waiters}
        )
        for waiter in waiters:
            self._attach(waiter, chunk)
        metadata = {"deonticbench_run": self.log.run_id, "deonticbench_chunk": name}
        try:
            batch_id = await self.api.submit([w.item for w in waiters], metadata)
        except SubmitError as exc:
            if exc.ambiguous:
                # It may exist all the same: look before sending anything again.
                await self._find(chunk)
                if chunk.batch_id is not None:
                    self._watch(chunk)
                    return
            else:
                self.log.abandoned(name)
            self.notify(f"batch {name} ({len(waiters)} requests) was not created: {exc.sentence}")
            for custom_id in chunk.custom_ids:
                self._fail(custom_id, exc.sentence, retryable=exc.ambiguous)
            return
        self.log.submitted(name, batch_id)
        self._paid.update(k for keys in chunk.keys.values() for k in keys)
        # Each item is one call the provider bills: the closing line counts calls.
        add_calls(self.model, len(waiters))
        if self.api.queue_tokens is not None:
            self._enqueued[name] = tokens
        self._watch(chunk)

    async def _queue_room(self, tokens: int) -> None:
        """Wait until the provider's batch queue has room for ``tokens`` more input
        tokens (a chunk alone always fits: ``_chunks`` cut it to the limit)."""
        limit = self.api.queue_tokens
        if limit is None:
            return
        while self._enqueued and sum(self._enqueued.values()) + tokens > limit:
            self._room.clear()
            await self._room.wait()

    # --- one batch ---------------------------------------------------------------------

    def _attach(self, waiter: _Waiter, chunk: Chunk) -> None:
        self._attached.setdefault(waiter.item.custom_id, []).append(waiter)

    def _watch(self, chunk: Chunk) -> None:
        self._watchers[chunk.name] = asyncio.ensure_future(self._collect(chunk))

    async def _collect(self, chunk: Chunk) -> None:
        try:
            await self._poll_and_read(chunk)
        except (ConnectionError, SubmitError) as exc:
            # The batch keeps running at the provider; whoever waits for it stops the run.
            error = ConfigError(
                f"lost contact with the provider while collecting {chunk.name} "
                f"(batch {chunk.batch_id}): {exc}; it keeps running there: run the same "
                "command again to collect it."
            )
            for custom_id in chunk.custom_ids:
                for waiter in self._attached.pop(custom_id, []):
                    if not waiter.future.done():
                        waiter.future.set_exception(error)

    async def _poll_and_read(self, chunk: Chunk) -> None:
        assert chunk.batch_id is not None
        self.stats.in_flight += 1
        try:
            while True:
                batch = await self.api.retrieve(chunk.batch_id)
                self.log.state(chunk.name, batch.state)
                self.show(self.stats)
                if batch.ended:
                    break
                await asyncio.sleep(self.poll_s)
        finally:
            self.stats.in_flight -= 1
        self._enqueued.pop(chunk.name, None)
        self._room.set()
        if batch.rejected:
            await self._rejected(chunk, batch)
            return
        failed: dict[str, str] = {}
        seen: set[str] = set()
        async for result in self.api.results(batch):
            if result.custom_id not in chunk.keys or result.custom_id in seen:
                continue
            seen.add(result.custom_id)
            error = self._read(chunk, result)
            if error is not None:
                failed[result.custom_id] = error
                self._fail(result.custom_id, error, retryable=result.retryable)
        for custom_id in chunk.custom_ids:
            if custom_id not in seen:
                # Never a silent gap: an item the provider did not return is sent again.
                failed[custom_id] = f"batch {batch.id} returned no result for it"
                self._fail(custom_id, failed[custom_id], retryable=True)
        self.log.collected(chunk.name, failed)
        self.show(self.stats)
        self._check_round()

    def _read(self, chunk: Chunk, result: ItemResult) -> str | None:
        """Store one successful item in the response cache at once and hand it to whoever
        waits; the error sentence otherwise."""
        keys = chunk.keys[result.custom_id]
        completions = result.completions
        if completions is None:
            return result.error or "failed"
        if len(completions) != len(keys):
            return f"the batch returned {len(completions)} completions for {len(keys)} samples"
        for key, completion in zip(keys, completions, strict=True):
            if completion.text is not None:
                # A result read back after a restart is priced as it was billed.
                self.cache.put(key, CachedResponse.of(completion, completion.text))
        for waiter in self._attached.pop(result.custom_id, []):
            self._resolve(waiter, completions, None)
        return None

    async def _rejected(self, chunk: Chunk, batch: ProviderBatch) -> None:
        for cause in batch.rejected:
            self.notify(
                f"the provider rejected batch {batch.id} ({chunk.name}, "
                f"{chunk.requests} requests): {cause}."
            )
        sentence = f"the provider rejected the whole batch: {batch.rejected[0]}"
        failed = {custom_id: sentence for custom_id in chunk.custom_ids}
        self.log.collected(chunk.name, failed)
        for custom_id in chunk.custom_ids:
            self._fail(custom_id, sentence, retryable=batch.rejected_retryable)
        self._check_round()

    def _fail(self, custom_id: str, error: str, *, retryable: bool) -> None:
        for waiter in self._attached.pop(custom_id, []):
            if retryable and self.log.tries(custom_id) < MAX_TRIES:
                # Into the next round: the sample stays waiting, its attempt unchanged.
                self._pending.append(waiter)
                self.stats.failed += 1
            else:
                self._resolve(waiter, None, error)

    def _resolve(
        self, waiter: _Waiter, completions: Sequence[Completion] | None, error: str | None
    ) -> None:
        if waiter.future.done():
            return
        self.stats.pending -= 1
        if completions is None:
            self.stats.failed += 1
            completions = [Completion.failed(error or "failed") for _ in waiter.keys]
        else:
            self.stats.done += 1
        waiter.future.set_result(list(completions))

    # --- an intent without a batch id ------------------------------------------------------

    async def _find(self, chunk: Chunk, *, abandon: bool = True) -> None:
        """Adopt the batch an intent led to, or record that none was created; raise
        ``ConfigError`` when more than one batch could be it."""
        known = {c.batch_id for c in self.log.chunks.values() if c.batch_id}
        matches: list[ProviderBatch] = []
        async for batch in self.api.listing(chunk.intent_at - CLOCK_SKEW_S):
            if batch.id in known:
                continue
            if self.api.provider == "openai":
                same = batch.metadata.get("deonticbench_run") == self.log.run_id and (
                    batch.metadata.get("deonticbench_chunk") == chunk.name
                )
            else:
                same = batch.requests == chunk.requests
            if same:
                matches.append(batch)
        if len(matches) == 1:
            self.log.submitted(chunk.name, matches[0].id, adopted=True)
            self._paid.update(k for keys in chunk.keys.values() for k in keys)
            self.notify(
                f"adopted batch {matches[0].id} for {chunk.name} ({chunk.requests} requests): "
                "the run that sent it stopped before writing its id down."
            )
        elif not matches and abandon:
            self.log.abandoned(chunk.name)
            self.notify(
                f"{chunk.name} ({chunk.requests} requests) was never created at the "
                "provider; its requests are sent again."
            )
        elif matches:
            ids = ", ".join(b.id for b in matches)
            raise ConfigError(
                f"cannot tell which of the batches {ids} is {chunk.name} of this run "
                f"({chunk.requests} requests, created after its intent): adopt the right one "
                f"with 'deonticbench batches {self.log.path.parent} --adopt "
                f"{chunk.name}=BATCH_ID', then run again."
            )


def chunk_runs(sizes: Sequence[tuple[int, int]], api: BatchAPI) -> list[int]:
    """How many consecutive lines go into each batch, given each line's (bytes, input
    tokens): as many as the provider's limits per batch allow (requests, bytes and, for
    OpenAI, the tokens that may wait in its queue at once)."""
    runs: list[int] = []
    count = size = tokens = 0
    for line, line_tokens in sizes:
        full = count and (
            count + 1 > api.max_requests
            or size + line > api.max_bytes
            or (api.queue_tokens is not None and tokens + line_tokens > api.queue_tokens)
        )
        if full:
            runs.append(count)
            count, size, tokens = 0, 0, 0
        count += 1
        size += line
        tokens += line_tokens
    if count:
        runs.append(count)
    return runs


__all__ = [
    "MAX_TRIES",
    "BatchBroker",
    "BatchStats",
    "adopt",
    "cancel_open",
    "chunk_runs",
    "describe",
    "refresh_states",
]
