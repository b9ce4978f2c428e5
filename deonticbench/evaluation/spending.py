"""A spending cap over one or more runs: requests go at once while their worst cases
fit under the cap; near it they go one at a time, each only when what it is expected to
cost fits, so the spend passes the cap by at most what the last request cost beyond its
expectation.

Before each request the runner asks its ``SpendGate`` for room.  The request's worst
case is its prompt tokens (counted as the dry run counts them) on every call it becomes,
at the dearest input rate it can be billed (a cache write costs more than plain input),
plus ``n`` times its output limit at the output rate; a provider batch at its own price.
Its expected cost is the same with its run's mean output per sample so far in place of
the limit.  A request goes at once when its worst case fits beside what is spent and
the worst cases in flight: then the cap cannot be passed.  Otherwise it waits for the
requests in flight to settle; with none in flight it goes alone if its expected cost
fits (the last stretch).  When the reply arrives its worst case is released and what it
was billed is spent (``models.registry.billed_split``, the rule results.json prices
records with).  When not even the expected cost fits, the cap is reached: the budget
says so (``exhausted``) and the request is never sent; whoever runs the requests then
stops them (``eval-set`` cancels its runs, whose records are on disk).

A model without prices costs nothing here, and the budget counts the requests it let
through unpriced, so that a set can say so.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..models.base import (
    Completion,
    Model,
    Request,
    cacheable,
    config_of,
)
from ..models.registry import Prices, billed_split, price_split
from ..models.tokens import request_prompt_tokens

UNSTATED_OUTPUT_LIMIT = 32_768
"""The output a request is assumed to be able to take when its config states no limit
(the registry's largest ``max_tokens``): the worst case must be a bound."""

__all__ = [
    "Bill",
    "Budget",
    "RunSpend",
    "SpendGate",
    "gated",
    "paid_usd",
    "request_costs",
]


class Bill(Protocol):
    """What a request's reply was billed, told to the gate that let it through."""

    def paid(self, completions: Sequence[Completion]) -> None: ...


class SpendGate(Protocol):
    """Room for one request (``RunOptions.spend``): held around the request; the bill it
    yields is told what came back."""

    def request(
        self, model: Model, request: Request, *, batch: bool = False
    ) -> contextlib.AbstractAsyncContextManager[Bill]: ...


def request_costs(
    prices: Prices, model: Model, request: Request, *, batch: bool, mean_output: float | None
) -> tuple[float, float]:
    """What ``request`` may cost at most (each sample writing its output limit) and what
    it is expected to cost (each writing ``mean_output`` tokens; None: the limit too):
    every call's prompt at the dearest input rate it can be billed (a cache write at the
    backend's lifetime costs more than plain input), the output at the output rate, a
    provider batch at its price."""
    tokens = request_prompt_tokens(model, request)
    calls = model.calls_for(request)
    limit = config_of(model, request).max_tokens or UNSTATED_OUTPUT_LIMIT
    write = prices.cache_write_1h if _cache_ttl(model) == "1h" else prices.cache_write_5m
    dearest = max(prices.input, write or 0.0)
    share = 1.0 - (prices.batch_discount or 0.0) if batch else 1.0

    def usd(output_tokens: float) -> float:
        listed = calls * tokens * dearest + request.n * output_tokens * prices.output
        return listed / 1_000_000 * share

    return usd(limit), usd(limit if mean_output is None else mean_output)


def _cache_ttl(model: Model) -> str:
    """The lifetime of the cache entries the backend writes (Anthropic's ``cache_ttl``;
    others write none or at the 5-minute rate)."""
    return str(getattr(model, "cache_ttl", "5m"))


def paid_usd(prices: Prices, completions: Sequence[Completion]) -> float:
    """What some replies were billed at ``prices`` (a token without a price: nothing)."""
    total = 0.0
    for c in completions:
        split = billed_split(
            c.tokens_in, c.cache_read_tokens, c.cache_write_tokens, c.cache_write_1h_tokens,
            c.tokens_out,
        )  # fmt: skip
        cost = price_split(prices, split, batch=c.batch)
        total += 0.0 if cost is None else cost.usd
    return total


@dataclass
class Budget:
    """The cap and what has been spent against it, shared by every run it covers
    (one asyncio loop).  ``cap_usd`` None: no cap, spending is only counted."""

    cap_usd: float | None
    spent_usd: float = 0.0
    """Spent so far, earlier sessions included (a set's ledger)."""
    record: Callable[[str, float], None] | None = None
    """Told (run name, dollars) of every priced reply as it settles (the ledger)."""
    reserved_usd: float = 0.0
    """The worst cases of the priced requests in flight."""
    in_flight: int = 0
    """The priced requests in flight (counted: their reservations, summed and released
    in another order, may leave a float's residue above zero with none in flight)."""
    spent_by_run: dict[str, float] = field(default_factory=dict)
    """Spent per run (the ledger's sums, and what this session added)."""
    unpriced: dict[str, int] = field(default_factory=dict)
    """Per run, the requests let through with no price known (counted as free)."""
    refused_usd: float | None = None
    """What the request that did not fit was expected to cost, once the cap is reached."""
    on_exhausted: Callable[[], None] | None = None
    """Called once when the cap is reached (``eval-set``: cancel the runs)."""
    _changed: asyncio.Condition | None = field(default=None, repr=False)

    @property
    def exhausted(self) -> bool:
        return self.refused_usd is not None

    @property
    def left_usd(self) -> float | None:
        return None if self.cap_usd is None else max(self.cap_usd - self.spent_usd, 0.0)

    def for_run(self, name: str, prices: Prices | None) -> RunSpend:
        """The gate one run's requests go through."""
        return RunSpend(self, name, prices)

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def reserve(self, worst: float, expected: float, *, wait: bool = True) -> None:
        """Hold ``worst`` of the cap for a request while it is in flight.

        A request goes at once when its worst case fits beside what is spent and what
        the requests in flight may still cost.  Otherwise it waits for them to settle;
        with none in flight, the last stretch: it goes alone when its ``expected`` cost
        (its run's mean output so far) fits beside what is spent, so requests near the
        cap go one at a time and only the last can pass the cap, by what it cost beyond
        its expectation.  When even that does not fit, the cap is reached and this never
        returns (``on_exhausted`` stops the caller).  ``wait`` False (a batch item: the
        round it waits for needs it, so waiting for the round would wait for itself): no
        room now is the cap reached."""
        changed = self._condition()
        async with changed:
            while self.cap_usd is not None and self._over(self.reserved_usd + worst):
                if self.in_flight == 0 and not self._over(expected):
                    break  # the last stretch: this request alone
                if not wait or self.in_flight == 0 or self.exhausted:
                    self._exhaust(expected)
                    await asyncio.Event().wait()  # cancelled by whoever stops the runs
                await changed.wait()
            self.reserved_usd += worst
            self.in_flight += 1

    def _over(self, usd: float) -> bool:
        """``usd`` more than what is spent would pass the cap."""
        assert self.cap_usd is not None
        # A hair of slack for float sums: the cap is in dollars, the sums in nano-dollars.
        return self.spent_usd + usd > self.cap_usd + 1e-9

    def _exhaust(self, usd: float) -> None:
        if self.refused_usd is None:
            self.refused_usd = usd
            if self.on_exhausted is not None:
                self.on_exhausted()

    async def settle(self, run: str, reserved: float, paid: float) -> None:
        """A priced request came back (or failed): its reservation is released and what
        it was billed is spent."""
        changed = self._condition()
        async with changed:
            self.in_flight -= 1
            self.reserved_usd = max(self.reserved_usd - reserved, 0.0) if self.in_flight else 0.0
            self.spent_usd += paid
            self.spent_by_run[run] = self.spent_by_run.get(run, 0.0) + paid
            if paid > 0.0 and self.record is not None:
                self.record(run, paid)
            changed.notify_all()


@dataclass
class _RunBill:
    prices: Prices | None
    completions: Sequence[Completion] = ()

    def paid(self, completions: Sequence[Completion]) -> None:
        self.completions = completions


@dataclass
class RunSpend:
    """One run's gate onto a shared ``Budget`` (``SpendGate``)."""

    budget: Budget
    name: str
    prices: Prices | None
    _output_tokens: int = 0
    _samples: int = 0

    @contextlib.asynccontextmanager
    async def request(
        self, model: Model, request: Request, *, batch: bool = False
    ) -> AsyncIterator[Bill]:
        bill = _RunBill(self.prices)
        if self.prices is None:
            if cacheable(model):  # not reference or replay, whose answers cost nothing
                self.budget.unpriced[self.name] = self.budget.unpriced.get(self.name, 0) + 1
            yield bill
            return
        worst, expected = request_costs(
            self.prices, model, request, batch=batch, mean_output=self.mean_output_tokens
        )
        await self.budget.reserve(worst, expected, wait=not batch)
        try:
            yield bill
        finally:
            # A request cut off in flight (cancelled) may still be billed; its worst case
            # is not released as spent, because nothing says what it cost: the ledger
            # counts only replies that arrived.
            paid = paid_usd(self.prices, bill.completions)
            self._saw(bill.completions)
            await _settle_shielded(self.budget, self.name, worst, paid)

    @property
    def mean_output_tokens(self) -> float | None:
        """Output tokens per sample of this run's replies so far (None: none yet)."""
        return self._output_tokens / self._samples if self._samples else None

    def _saw(self, completions: Sequence[Completion]) -> None:
        for c in completions:
            if c.error is None:
                self._output_tokens += c.tokens_out
                self._samples += 1


async def _settle_shielded(budget: Budget, run: str, reserved: float, paid: float) -> None:
    """Settle even while the caller is being cancelled (the ledger must hear of a reply
    that arrived before the cancellation)."""
    task = asyncio.ensure_future(budget.settle(run, reserved, paid))
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.shield(task)


def gated(
    gate: SpendGate | None, model: Model, request: Request, *, batch: bool = False
) -> contextlib.AbstractAsyncContextManager[Bill]:
    """``gate.request(...)``, or no gate at all: a bill nobody reads."""
    if gate is None:
        return contextlib.nullcontext(_RunBill(None))
    return gate.request(model, request, batch=batch)
