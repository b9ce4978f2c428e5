"""The dry run: what a run would send and what its first attempts' input will cost,
before anything is spent.

It walks the plan as the runner does (``requests.split_requests`` groups the samples into
requests; finished samples and response-cache hits are left out) and counts calls as they
will be billed: a request of K samples is one call where the API draws K choices at
once (OpenAI), K calls where each sample is a call (Anthropic, and servers that ignore
``n``).
Prompt tokens are an estimate (``models.tokens``: cl100k, the paper's unit).

It restates none of the backend's or the runner's rules: it asks them.  The backend
says where it puts cache breakpoints in each request (``models.base.cache_breakpoints``: which
of them pass its threshold, tool definitions counted), what else it bills as input
(``models.base.billed_extra_text``: Anthropic's tool definitions), and its batch API the cache
lifetime its lines ask for (``BatchAPI.cache_ttl``); the runner says which requests go
by batch under ``--batch`` (``trials.goes_by_batch``: agentic trials stay interactive)
and builds the requests (``requests.prompt_request``, ``trials.turn_request``).  What is
left here is the provider's side, per shared prefix, under the runner's order of
sending (docs/cost.md):

* breakpoints (Anthropic): the first call of a prefix group writes up to its last
  breakpoint; every later case of the group reads the shared prefix and writes the rest;
  a case's other K - 1 calls read the whole prompt.  A prefix below the model's minimum
  in tokens writes nothing.
* OpenAI: it caches by itself; with the order of sending, every case after a group's
  first reads the shared prefix in 128-token steps past 1,024.

It prices the first attempts' input with and without caching and batches, through the
one pricing rule (``models.registry.price_tokens``).  Output, reasoning tokens, retries
and agentic turns after the first depend on the model and cannot be known beforehand;
``assume_output_tokens`` gives a full estimate for a stated output length.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..agents.loop import first_messages, offered_tools
from ..agents.scripted import as_agent
from ..agents.tool_table import tool_specs
from ..errors import ConfigError
from ..models.base import (
    Model,
    Request,
    cache_breakpoints,
    cache_routed,
    cacheable,
)
from ..models.batch import BatchAPI, batch_api
from ..models.registry import ZERO_COST, Cost, Prices, model_prices, price_tokens
from ..models.sampling import RunSampling, run_sampling
from ..models.tokens import request_prompt_tokens
from ..prompting import Prompt
from ..prompting.dar_task import DarTask
from ..prompting.plan import RunPlan, Unit
from ..store.record import Record, RecordKey
from ..store.spec import DEFAULT_ATTEMPTS, AgentOptions
from ..vocabulary.chat import Message
from ..vocabulary.modes import is_agentic
from .cache import CachedResponse, ResponseCache, prompted_key
from .requests import cache_group, prefix_group, prompt_request, split_requests
from .trials import goes_by_batch, trial_setup, turn_key, turn_request, unit_dar_task

OPENAI_CACHE_MIN = 1024
OPENAI_CACHE_STEP = 128
"""OpenAI caches prefixes of 1,024 tokens and more, in steps of 128 tokens."""


@dataclass
class Tokens:
    """Input tokens of some calls by how they are billed, and output tokens."""

    uncached: int = 0
    cache_write: int = 0
    cache_read: int = 0
    output: int = 0

    def add(self, other: Tokens) -> None:
        self.uncached += other.uncached
        self.cache_write += other.cache_write
        self.cache_read += other.cache_read
        self.output += other.output

    @property
    def input(self) -> int:
        return self.uncached + self.cache_write + self.cache_read


@dataclass
class DryRunRow:
    domain: str
    mode: str
    samples: int = 0
    done: int = 0
    response_hits: int = 0
    """Samples the response cache answers: nothing is sent for them."""
    calls: int = 0
    """Provider calls that will be sent (billed) for the first attempts."""
    prompt_tokens: int = 0
    """Their prompt tokens, every call counted (an estimate: see the module doc)."""
    prompt_cache_tokens: Tokens = field(default_factory=Tokens)
    """The same input under the chosen prompt caching: written, read, the rest uncached."""
    first_turns: bool = False
    """An agentic row: only each trial's first turn is counted."""
    by_batch: bool = False
    """Under ``--batch`` its requests go by the provider's batch API (the runner's rule,
    ``trials.goes_by_batch``); otherwise they stay interactive, at full price."""


@dataclass
class DryRunEstimate:
    """What a run would send, before anything is spent (``--dry-run``)."""

    rows: list[DryRunRow]
    attempts: int
    prompt_cache: bool = False
    """Whether the chosen options cache prompts (the model's, unless --no-prompt-cache)."""
    prices: Prices | None = None
    max_turns: int = AgentOptions.max_turns
    cache_ttl: str = "5m"
    """The cache lifetime the backend's interactive calls ask for."""
    batch_cache_ttl: str | None = None
    """The one its batch lines ask for (``BatchAPI.cache_ttl``)."""
    batchable: bool = False
    """The backend has a batch API: the batch figures can be priced."""
    token_count_method: str = ""
    """How the prompt tokens were counted (``models.tokens``): per model, as its
    provider bills them where we can."""
    count_calls: int = 0
    """Calls made to the provider's free token-counting endpoint (no generation)."""

    @property
    def calls(self) -> int:
        """Provider calls the first attempts will send."""
        return sum(r.calls for r in self.rows)

    @property
    def prompt_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.rows)

    @property
    def samples_left(self) -> int:
        return sum(r.samples - r.done for r in self.rows)

    @property
    def prompted_left(self) -> int:
        """Samples left in the prompted modes: the only ones retried with feedback."""
        return sum(r.samples - r.done for r in self.rows if not r.first_turns)

    @property
    def trials_left(self) -> int:
        return sum(r.samples - r.done for r in self.rows if r.first_turns)

    @property
    def expected(self) -> Tokens:
        """First-attempt input under the chosen caching (reads, writes, uncached)."""
        total = Tokens()
        for row in self.rows:
            total.add(row.prompt_cache_tokens)
        return total

    def input_cost(self, *, caching: bool, batch: bool) -> Cost | None:
        """The first attempts' input in dollars; None without prices for it, for caching
        the options turned off (``--no-prompt-cache``), or for batches a backend without
        a batch API.  Under ``batch`` only the rows that go by batch get its price and
        its cache lifetime; the others stay interactive."""
        if self.prices is None or (caching and not self.prompt_cache):
            return None
        if batch and not self.batchable:
            return None
        total: Cost | None = ZERO_COST
        for row in self.rows:
            batched = batch and row.by_batch
            ttl = (self.batch_cache_ttl or self.cache_ttl) if batched else self.cache_ttl
            use = row.prompt_cache_tokens if caching else Tokens(uncached=row.prompt_tokens)
            hour = ttl == "1h"
            cost = price_tokens(
                self.prices,
                uncached=use.uncached,
                cache_write_5m=0 if hour else use.cache_write,
                cache_write_1h=use.cache_write if hour else 0,
                cache_read=use.cache_read,
                batch=batched,
            )
            total = None if cost is None or total is None else total + cost
        return total

    def output_cost(self, tokens_per_sample: int, *, batch: bool) -> Cost | None:
        """Output of the first attempts at ``tokens_per_sample`` each (an assumption)."""
        if self.prices is None or (batch and not self.batchable):
            return None
        total: Cost | None = ZERO_COST
        for row in self.rows:
            left = tokens_per_sample * (row.samples - row.done)
            cost = price_tokens(self.prices, output=left, batch=batch and row.by_batch)
            total = None if cost is None or total is None else total + cost
        return total

    def to_json(
        self, *, batch: bool = False, assume_output_tokens: int | None = None
    ) -> dict[str, Any]:
        """The ``eval --dry-run --json`` object: ``calls`` that will be sent and
        ``usd_input`` (first-attempt input under the chosen options), with the rest."""

        def usd(cost: Cost | None) -> float | None:
            return None if cost is None else round(cost.usd, 6)

        chosen = self.input_cost(caching=self.prompt_cache, batch=batch)
        expected = self.expected if self.prompt_cache else Tokens(uncached=self.prompt_tokens)

        doc: dict[str, Any] = {
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "prompt_tokens_are": "an estimate",
            "cache_write_tokens": expected.cache_write,
            "cache_read_tokens": expected.cache_read,
            "uncached_tokens": expected.uncached,
            "prompt_cache": self.prompt_cache,
            "batch": batch,
            "samples_left": self.samples_left,
            "usd_input": usd(chosen),
            "usd_input_parts": None if chosen is None else chosen.to_json(),
            "usd_input_uncached": usd(self.input_cost(caching=False, batch=False)),
            "usd_input_cached": usd(self.input_cost(caching=True, batch=False)),
            "usd_input_batch": usd(self.input_cost(caching=False, batch=True)),
            "usd_input_cached_batch": usd(self.input_cost(caching=True, batch=True)),
            "prices": None if self.prices is None else self.prices.to_json(),
            "max_retry_requests": (self.attempts - 1) * self.prompted_left,
            "agent_trials": self.trials_left,
            "agent_max_turns": self.max_turns,
            "token_count_method": self.token_count_method,
            "count_calls": self.count_calls,
            "rows": [self._row_json(r) for r in self.rows],
        }
        if assume_output_tokens is not None:
            out = self.output_cost(assume_output_tokens, batch=batch)
            doc["assume_output_tokens"] = assume_output_tokens
            doc["usd_output"] = usd(out)
            doc["usd_total"] = None if out is None or chosen is None else usd(chosen + out)
        return doc

    def _row_json(self, r: DryRunRow) -> dict[str, Any]:
        """One domain x mode row of ``to_json``; cache figures only where caching is on."""
        return {
            "domain": r.domain,
            "mode": r.mode,
            "samples": r.samples,
            "done": r.done,
            "cached": r.response_hits,
            "requests": r.calls,
            "prompt_tokens": r.prompt_tokens,
            "cache_write_tokens": r.prompt_cache_tokens.cache_write if self.prompt_cache else 0,
            "cache_read_tokens": r.prompt_cache_tokens.cache_read if self.prompt_cache else 0,
            "first_turns_only": r.first_turns,
        }


@dataclass(frozen=True)
class _Marks:
    """Which prefixes of a request the backend marks for caching and the provider
    will cache (long enough in tokens)."""

    end: bool = False
    """The whole prompt."""
    shared: bool = False
    """The prefix every case of its group shares."""


@dataclass
class _Caching:
    """What the provider bills a call under the runner's order of sending (module doc)."""

    kind: str
    """``breakpoints`` (the backend marks prefixes), ``openai`` (automatic) or ``none``."""
    min_tokens: int = 1024
    written: set[str] = field(default_factory=set)
    """Prefix groups whose first call has been counted."""

    def marks(self, model: Model, request: Request, prompt: int, shared: int) -> _Marks:
        """Ask the backend where the request's breakpoints are; keep those the provider
        caches (a prefix of ``min_tokens`` or more)."""
        found = cache_breakpoints(model, request) if self.kind == "breakpoints" else None
        if not found:
            return _Marks()
        breakpoints, total = found
        return _Marks(
            end=total in breakpoints and prompt >= self.min_tokens,
            shared=any(b < total for b in breakpoints) and shared >= self.min_tokens,
        )

    def first_call(self, group: str | None, prompt: int, shared: int, marks: _Marks) -> Tokens:
        """The first call of a case (or a group's very first)."""
        if self.kind == "none":
            return Tokens(uncached=prompt)
        known = group is not None and group in self.written
        if group is not None:
            self.written.add(group)
        if self.kind == "openai":
            read = _openai_steps(shared) if known else 0
            return Tokens(uncached=prompt - read, cache_read=read)
        mid = group is not None and marks.shared
        read = shared if known and mid else 0
        if marks.end:
            return Tokens(cache_write=prompt - read, cache_read=read)
        if mid and not known:
            return Tokens(uncached=prompt - shared, cache_write=shared)
        return Tokens(uncached=prompt - read, cache_read=read)

    def later_call(self, prompt: int, shared: int, marks: _Marks, grouped: bool) -> Tokens:
        """One of a case's other samples, after its first answered (breakpoints only)."""
        if self.kind != "breakpoints":
            return Tokens(uncached=prompt)
        if marks.end:
            return Tokens(cache_read=prompt)
        if grouped and marks.shared:
            return Tokens(uncached=prompt - shared, cache_read=shared)
        return Tokens(uncached=prompt)


def _openai_steps(tokens: int) -> int:
    if tokens < OPENAI_CACHE_MIN:
        return 0
    return OPENAI_CACHE_MIN + (tokens - OPENAI_CACHE_MIN) // OPENAI_CACHE_STEP * OPENAI_CACHE_STEP


def _caching_of(model: Model, sampling: RunSampling) -> _Caching:
    if not sampling.base.prompt_cache:
        return _Caching("none")
    if cache_routed(model):
        return _Caching("openai", OPENAI_CACHE_MIN)
    minimum = int(getattr(model, "cache_min_tokens", OPENAI_CACHE_MIN))
    return _Caching("breakpoints", minimum)


def _batch_api_of(model: Model, chosen: BatchAPI | None) -> BatchAPI | None:
    """The batch API the run uses, or the one it would (for the batch figures); None
    for a backend without one."""
    if chosen is not None:
        return chosen
    try:
        return batch_api(model)
    except ConfigError:
        return None


@dataclass
class _Counting:
    """What counting a prompted unit's first attempts needs, as the runner would send
    them: the model, how to count tokens, the provider's caching, the run's sampling and
    the response cache (None: not read)."""

    model: Model
    count_tokens: Callable[[Model, Sequence[Message]], int]
    caching: _Caching
    rule: RunSampling
    cache: ResponseCache | None
    shared_counts: dict[str, int] = field(default_factory=dict)
    identity: dict[str, Any] = field(init=False)
    """The response-cache key's identity, made once: every unit's lookups share it."""

    def __post_init__(self) -> None:
        self.identity = self.rule.identity(self.model)

    def prompted(self, row: DryRunRow, unit: Unit, pending: list[int]) -> None:
        """A prompted unit's pending samples: cache hits, then calls in the runner's order,
        each with its prompt tokens and what caching makes of them."""
        model, caching = self.model, self.caching
        prompt = unit.render()

        def cached(s: int) -> CachedResponse | None:
            if self.cache is None:
                return None
            return self.cache.get(prompted_key(self.identity, prompt.messages, s, 0))

        hits, requests = split_requests(pending, cached)
        row.response_hits += len(hits)
        if not requests:
            return
        tokens = self.count_tokens(model, prompt.messages)
        route = cache_group(unit, prompt) if cache_routed(model) else ""
        group, shared = _shared(model, prompt, self.count_tokens, self.shared_counts, route)
        first = True
        for samples in requests:
            request = prompt_request(unit, prompt, samples, 0, self.rule)
            marks = caching.marks(model, request, tokens, shared)
            calls = model.calls_for(request)
            row.calls += calls
            row.prompt_tokens += calls * tokens
            for _ in range(calls):
                if first:
                    use = caching.first_call(group, tokens, shared, marks)
                    first = False
                else:
                    use = caching.later_call(tokens, shared, marks, group is not None)
                row.prompt_cache_tokens.add(use)

    def first_turns(
        self,
        row: DryRunRow,
        unit: Unit,
        pending: list[int],
        options: AgentOptions,
        dar: DarTask | None = None,
    ) -> None:
        """An agentic unit: the first turn of each pending trial (one call each).  How many
        turns follow, each re-sending the conversation so far, depends on the model: they
        are bounded by ``max_turns``, never counted."""
        model, count_tokens = self.model, self.count_tokens
        agent_model = as_agent(model)
        with tempfile.TemporaryDirectory() as empty:  # a first turn's workspace: nothing written
            setup = trial_setup(unit, 0, model, agent_model, options, Path(empty), dar=dar)
            messages = first_messages(setup)
            tools = offered_tools(setup, tool_specs(options.tool_set), Path(empty))
        request = turn_request(unit, 0, messages, tools, 0, options.tool_set, self.rule)
        tokens = request_prompt_tokens(model, request, count_tokens)
        # Trials start together: every first turn writes its opening (none reads another's).
        marks = self.caching.marks(model, request, tokens, 0)
        for sample in pending:
            key = turn_key(self.identity, agent_model, unit, sample, messages, tools)
            if self.cache is not None and self.cache.get(key) is not None:
                row.response_hits += 1
                continue
            row.calls += 1
            row.prompt_tokens += tokens
            if marks.end:
                row.prompt_cache_tokens.add(Tokens(cache_write=tokens))
            else:
                row.prompt_cache_tokens.add(Tokens(uncached=tokens))


def estimate(
    model: Model,
    plan: RunPlan,
    *,
    done: Mapping[RecordKey, Record] | None = None,
    cache: ResponseCache | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    count_tokens: Callable[[Model, Sequence[Message]], int],
    agent: AgentOptions | None = None,
    batches: BatchAPI | None = None,
    sampling: RunSampling | None = None,
) -> DryRunEstimate:
    """Count the first-attempt calls, their prompt tokens and what caching makes of
    them, exactly as ``Runner`` would batch and order them (finished samples and cached
    responses excluded).  Retries depend on how programs fare, so they are only bounded.
    ``sampling``: the run's generation settings (None: the model's settings'), which
    the requests asked about carry as the run's do."""
    finished = done or {}
    rule = sampling or run_sampling(model)
    batch = _batch_api_of(model, batches)
    counting = _Counting(
        model,
        count_tokens,
        _caching_of(model, rule),
        rule,
        cache if cacheable(model) else None,
    )
    return DryRunEstimate(
        _count_units(plan, finished, counting, agent),
        attempts,
        prompt_cache=counting.rule.base.prompt_cache,
        prices=model_prices(model.spec),
        max_turns=(agent or AgentOptions()).max_turns,
        cache_ttl=str(getattr(model, "cache_ttl", "5m")),
        batch_cache_ttl=None if batch is None else batch.cache_ttl,
        batchable=batch is not None,
    )


def _count_units(
    plan: RunPlan,
    finished: Mapping[RecordKey, Record],
    counting: _Counting,
    agent: AgentOptions | None,
) -> list[DryRunRow]:
    """One row per (domain, mode) of the plan, in plan order: its samples, those already
    finished, and what ``counting`` makes of the pending ones' first calls (an agentic
    unit's first turns, a prompted unit's first attempts)."""
    rows: dict[tuple[str, str], DryRunRow] = {}
    for unit in plan.units:
        row = rows.setdefault(
            (unit.domain.name, unit.mode),
            DryRunRow(unit.domain.name, unit.mode, by_batch=goes_by_batch(unit.mode)),
        )
        row.samples += unit.k
        pending = [s for s, key in enumerate(unit.sample_keys()) if key not in finished]
        row.done += unit.k - len(pending)
        if not pending:
            continue
        if is_agentic(unit.mode):
            row.first_turns = True
            dar = unit_dar_task(unit, plan.protocol, plan.source)  # DAR's opening, under dar
            counting.first_turns(row, unit, pending, agent or AgentOptions(), dar)
            continue
        counting.prompted(row, unit, pending)
    return list(rows.values())


def _shared(
    model: Model,
    prompt: Prompt,
    count_tokens: Callable[[Model, Sequence[Message]], int],
    known: dict[str, int],
    route: str,
) -> tuple[str | None, int]:
    """The prompt's shared prefix: its group (``requests.prefix_group``, as the runner
    orders by it) and its tokens; (None, 0) when only the system message is shared."""
    if prompt.shared_prefix <= 0:
        return None, 0
    head = [m for m in prompt.messages if m.role == "system"]
    user = next((m for m in prompt.messages if m.role == "user"), None)
    if user is None:
        return None, 0
    part = replace(user, content=user.content[: prompt.shared_prefix])
    group = prefix_group(prompt, route)
    if group not in known:
        known[group] = count_tokens(model, (*head, part))
    return group, known[group]


__all__ = ["DryRunEstimate", "DryRunRow", "Tokens", "estimate"]
