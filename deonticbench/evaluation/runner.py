"""The evaluation pipeline: case -> prompt -> completion -> program -> execution -> answer
-> outcome, for every domain x case x mode x sample, written as records.

    plan = plan_run(domains, split="hard", modes=MODES, source=resolve_source())  # prompting
    with Solver() as solver, RunFolder.open(out, config) as run:
        result = await Runner(model, solver, run, cache).run(plan)

Concurrency: up to ``concurrency`` model requests, and provider calls (HTTP requests,
however a backend splits a request), are in flight at once, and program
executions go through the solver's pool (bounded by the cores), so waiting on the model
and running Prolog overlap.  The K samples of one case share their first prompt, so
they are drawn with one request of ``n=K`` (the prompt is sent and billed once) and
then followed one by one.

Retries (paper B.1): the rule is stated once, in docs/running.md ("Retries"); ``_evaluate``
below implements it: a retry with feedback when the program gave no answer, the same
prompt again when the request failed, never a decision that looks at the gold label.
Every attempt is kept, so a run yields the first-attempt score
and the final score.

Resume: samples that already have a record are skipped; a response already in the
cache is reused instead of requested again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Protocol, TypeVar

from ..agents.scripted import as_agent
from ..data.cases import Case
from ..data.domains import Domain
from ..models.base import (
    Completion,
    Model,
    cache_routed,
    cacheable,
    calls_sent,
    limit_in_flight,
)
from ..models.sampling import RunSampling, run_sampling
from ..prompting import (
    NO_PROGRAM_REPORT,
    Prompt,
    render_feedback,
    solver_report,
)
from ..prompting.plan import RunPlan, Unit
from ..reading.confidence import without_confidence
from ..reading.feedback_retry import calls_for_retry
from ..reading.harness import HARNESS_READER
from ..reading.judging import Reply, ajudge_attempt
from ..reading.reader import Reader, reader_for
from ..settings.split import join_parts
from ..solver import Execution, Limits, Solver, Toplevel
from ..store.folder import RunFolder
from ..store.record import AgentInfo, Attempt, Record
from ..store.run import Session
from ..store.spec import DEFAULT_ATTEMPTS, AgentOptions
from ..vocabulary.modes import DIRECT_MODES, VERBAL_MODE, Mode, is_agentic
from .batching import BatchBroker
from .cache import CachedResponse, ResponseCache, prompted_key
from .requests import cache_group, prefix_group, prompt_request, split_requests
from .spending import SpendGate, gated
from .trials import TrialDriver, goes_by_batch

T = TypeVar("T")

DEFAULT_CONCURRENCY = 8
"""Model requests in flight at once (``RunOptions.concurrency``)."""


# --- observing ------------------------------------------------------------------------


class Observer(Protocol):
    """Told about progress; never changes what the runner does."""

    def started(self, totals: dict[tuple[str, str], int], done: Iterable[Record]) -> None: ...

    def recorded(self, record: Record) -> None: ...


class _Silent:
    def started(self, totals: dict[tuple[str, str], int], done: Iterable[Record]) -> None:
        pass

    def recorded(self, record: Record) -> None:
        pass


# --- the runner ----------------------------------------------------------------------


@dataclass
class _Response:
    completion: Completion
    cached: bool


class Runner:
    def __init__(
        self,
        model: Model,
        solver: Solver,
        run: RunFolder,
        cache: ResponseCache | None = None,
        *,
        attempts: int = DEFAULT_ATTEMPTS,
        concurrency: int = DEFAULT_CONCURRENCY,
        observer: Observer | None = None,
        agent: AgentOptions | None = None,
        batcher: BatchBroker | None = None,
        sampling: RunSampling | None = None,
        spend: SpendGate | None = None,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.model = model
        self.solver = solver
        self.run_folder = run
        # Replay and reference answers cost nothing: caching them would only grow the file.
        self.cache = cache if cacheable(model) else None
        self.attempts = attempts
        self.concurrency = concurrency
        self.observer: Observer = observer or _Silent()
        self.sampling = sampling or run_sampling(model)
        """Which generation settings each request goes with (``models.sampling``)."""
        self._identity = self.sampling.identity(model)
        self._requests: asyncio.Semaphore | None = None
        self._executions: asyncio.Semaphore | None = None
        self._result = Session()
        self.agent = agent or AgentOptions()
        self.agent_model = as_agent(model)
        self.spend = spend
        """The spending cap every request asks for room (``spending``); None: no cap."""
        self._prefix_groups: dict[str, asyncio.Event] = {}
        """With prompt caching: per shared prefix, set once its first request answered."""
        self.batcher = batcher
        """``eval --batch``: the prompted requests go through provider batches (agentic
        trials stay interactive); see ``batching``."""
        self._trials = TrialDriver(
            model,
            self.agent_model,
            self.agent,
            self.cache,
            self._result,
            self._execute,
            solver.limits,
            run.path,
            self.sampling,
            programs=self,
            spend=spend,
        )

    async def run(self, plan: RunPlan) -> Session:
        """Do every sample of the plan that has no record yet.  Cancellation stops
        cleanly: finished records are already on disk, in-flight samples are dropped."""
        done = self.run_folder.done
        self._trials.protocol, self._trials.source = plan.protocol, plan.source
        self._result.resumed = sum(1 for u in plan.units for key in u.sample_keys() if key in done)
        self.observer.started(plan.totals(), [r for r in done.values() if _in_plan(plan, r)])
        # An engine that serves one request at a time gets one: more would only queue.
        self._requests = asyncio.Semaphore(
            min(self.concurrency, self.model.parallel_requests or self.concurrency)
        )
        # The bound is on HTTP calls: a backend that splits a request into single calls
        # (a server ignoring n) still has at most `concurrency` of them in flight.
        limit_in_flight(self.model, self.concurrency)
        # No more programs handed to the pool than it has workers: each waiting program
        # would hold one of asyncio's few default threads, which the event loop also
        # needs (name resolution for new connections, among others).
        self._executions = asyncio.Semaphore(max(1, int(getattr(self.solver, "size", 2))))
        todo = [u for u in plan.units if any(key not in done for key in u.sample_keys())]
        limit = max(2 * self.concurrency, 4)
        calls_before = calls_sent(self.model)
        try:
            if self.batcher is None:
                await _bounded(todo, self._unit, limit=limit)
            else:
                await self._batched(todo, limit)
        except asyncio.CancelledError:
            self._result.interrupted = True
            raise
        finally:
            self._count_calls(calls_before)
        return self._result

    def _count_calls(self, before: int | None) -> None:
        """The provider calls this run sent (what the server received); a backend that
        does not count calls (no HTTP) is said to send one per request."""
        after = calls_sent(self.model)
        if before is None or after is None:
            self._result.calls = self._result.requests
        else:
            self._result.calls = after - before

    async def _batched(self, todo: list[Unit], limit: int) -> None:
        """Every prompted unit at once (a round of batches is sent when all of them are
        waiting, so none may be held back by a bound), the agentic ones as usual."""
        assert self.batcher is not None
        done = self.run_folder.done
        prompted = [u for u in todo if goes_by_batch(u.mode)]
        agentic = [u for u in todo if not goes_by_batch(u.mode)]
        self.batcher.expect(sum(1 for u in prompted for k in u.sample_keys() if k not in done))
        try:
            await self.batcher.start()
            await asyncio.gather(
                _bounded(prompted, self._unit, limit=max(len(prompted), 1)),
                _bounded(agentic, self._unit, limit=limit),
            )
        finally:
            await self.batcher.close()

    @property
    def result(self) -> Session:
        """What this run has done so far (the records are the run folder's)."""
        return self._result

    # one unit: the samples of a case in a mode ------------------------------------

    async def _unit(self, unit: Unit) -> None:
        done = self.run_folder.done
        samples = [
            s for s in range(unit.k) if (unit.domain.name, unit.case.id, unit.mode, s) not in done
        ]
        if is_agentic(unit.mode):
            # Trials are independent conversations: no shared first request.
            await asyncio.gather(*(self._trial(unit, s) for s in samples))
            return
        prompt = unit.render()
        group = self._prefix_group(unit, prompt)
        if group is None:
            first = await self._draw(unit, prompt, samples, attempt=0)
        elif group not in self._prefix_groups:
            # The first request of a shared prefix goes alone: a provider's cache entry
            # is readable only once the response that wrote it has begun (docs/cost.md).
            self._prefix_groups[group] = event = asyncio.Event()
            try:
                first = await self._draw(unit, prompt, samples, attempt=0)
            finally:
                event.set()
        else:
            await self._prefix_groups[group].wait()
            first = await self._draw(unit, prompt, samples, attempt=0)
        await asyncio.gather(*(self._sample(unit, prompt, s, first[s]) for s in samples))

    def _prefix_group(self, unit: Unit, prompt: Prompt) -> str | None:
        """The shared prefix a prompt's first request writes or reads (its text, hashed,
        and its cache group where the provider keeps one cache per group), when the model
        caches prompts interactively and the prompt has one; else None.  A batch round
        goes out whole, so batches are never held back this way."""
        caching = self.sampling.base.prompt_cache
        if not caching or prompt.shared_prefix <= 0 or self.batcher is not None:
            return None
        return prefix_group(prompt, cache_group(unit, prompt) if cache_routed(self.model) else "")

    async def _draw(
        self, unit: Unit, prompt: Prompt, samples: list[int], attempt: int
    ) -> dict[int, _Response]:
        """Responses for ``samples`` of one prompt: from the cache, else requested in
        runs of consecutive sample indices (one request per run, ``n`` = its length)."""
        hits, requests = split_requests(samples, lambda s: self._cached(prompt, s, attempt))
        # A response a batch of this run drew counts as paid here, even from the cache.
        out = {s: _Response(hit, cached=not hit.batch) for s, hit in hits.items()}
        # The samples the cache answered wait for the others: to the batches, waiting.
        held = self.batcher.holding(len(hits)) if self.batcher else contextlib.nullcontext()
        with held:
            drawn = await asyncio.gather(
                *(self._request(unit, prompt, run, attempt) for run in requests)
            )
        for run, completions in zip(requests, drawn, strict=True):
            for s, completion in zip(run, completions, strict=True):
                out[s] = _Response(completion, cached=False)
        return out

    async def _request(
        self, unit: Unit, prompt: Prompt, samples: list[int], attempt: int
    ) -> list[Completion]:
        """One request for ``samples`` of ``prompt``; its replies are in the response
        cache before its room under a spending cap is given back (``spending``), so a
        set stopped at its cap, which waits until nothing is in flight, has every paid
        reply stored and pays for none of them again when it resumes."""
        request = prompt_request(unit, prompt, samples, attempt, self.sampling)
        assert self._requests is not None
        if self.batcher is not None:
            # Waiting for a batch holds no HTTP slot: the bound is for interactive calls.
            async with gated(self.spend, self.model, request, batch=True) as bill:
                self._result.requests += 1
                completions = self._checked(await self.batcher.generate(request), samples)
                self._store_all(prompt, samples, attempt, completions)
                bill.paid(completions)
        else:
            async with self._requests, gated(self.spend, self.model, request) as bill:
                self._result.requests += 1
                completions = self._checked(await self.model.generate(request), samples)
                self._store_all(prompt, samples, attempt, completions)
                bill.paid(completions)
        return completions

    @staticmethod
    def _checked(completions: list[Completion], samples: list[int]) -> list[Completion]:
        if len(completions) != len(samples):
            # A backend bug must not shift answers between samples: fail the request.
            error = f"backend returned {len(completions)} completions for n={len(samples)}"
            return [Completion.failed(error) for _ in samples]
        return completions

    def _store_all(
        self, prompt: Prompt, samples: list[int], attempt: int, completions: list[Completion]
    ) -> None:
        for s, completion in zip(samples, completions, strict=True):
            self._store(prompt, s, attempt, completion)

    def _cached(self, prompt: Prompt, sample: int, attempt: int) -> Completion | None:
        if self.cache is None:
            return None
        key = prompted_key(self._identity, prompt.messages, sample, attempt)
        hit = self.cache.get(key)
        if hit is None:
            return None
        # Drawn by a batch of this run before a restart: paid by this run, not a hit.
        paid = self.batcher is not None and self.batcher.paid(key)
        self._result.cache_hits += 0 if paid else 1
        return hit.completion(batch=paid)

    def _store(self, prompt: Prompt, sample: int, attempt: int, completion: Completion) -> None:
        # Errors are not cached: a re-run should try the request again.
        if self.cache is None or completion.error is not None or completion.text is None:
            return
        self.cache.put(
            prompted_key(self._identity, prompt.messages, sample, attempt),
            CachedResponse.of(completion, completion.text),
        )

    # one agentic trial ---------------------------------------------------------

    async def _execute(self, program: str, limits: Limits | None = None) -> Execution:
        return await self.arun(program, limits)

    async def arun(
        self, program: str, limits: Limits | None = None, *, toplevel: Toplevel = "halt"
    ) -> Execution:
        """A program through the pool, no more waiting for it at once than it has workers
        (the agents' tools, and DAR's verifier under the dar protocol)."""
        assert self._executions is not None
        async with self._executions:
            return await self.solver.arun(program, limits, toplevel=toplevel)

    async def _trial(self, unit: Unit, sample: int) -> None:
        """An agentic trial (``trials.TrialDriver``), recorded when it ends."""
        assert self._requests is not None
        attempt, info = await self._trials.trial(unit, sample, self._requests)
        self._record(unit, sample, [attempt], agent=info)

    def _record(
        self,
        unit: Unit,
        sample: int,
        attempts: list[Attempt],
        prompt: Prompt | None = None,
        agent: AgentInfo | None = None,
    ) -> None:
        record = Record(
            domain=unit.domain.name,
            case_id=unit.case.id,
            mode=unit.mode,
            sample=sample,
            gold=unit.case.gold,
            model=self.model.spec,
            attempts=attempts,
            # a setting's template hash and a retrieved run's exemplars: written only then
            template_hash=prompt.template_hash if prompt is not None and unit.given else None,
            exemplars=tuple(e.id for e in unit.exemplars) if unit.retrieved else None,
            agent=agent,
        )
        self.run_folder.append(record)
        self._result.new += 1
        self.observer.recorded(record)
        if self.batcher is not None and agent is None:
            self.batcher.sample_done()

    # one sample: its attempts ---------------------------------------------------

    async def _sample(self, unit: Unit, prompt: Prompt, sample: int, first: _Response) -> None:
        attempts: list[Attempt] = []
        current, response = prompt, first
        for index in range(self.attempts):
            if index > 0:
                response = (await self._draw(unit, current, [sample], attempt=index))[sample]
            attempt, retry = await self._evaluate(unit, current, index, response)
            attempts.append(attempt)
            if retry is None or index + 1 >= self.attempts:
                break
            current = retry
        self._record(unit, sample, attempts, prompt)

    async def _evaluate(
        self, unit: Unit, prompt: Prompt, index: int, response: _Response
    ) -> tuple[Attempt, Prompt | None]:
        """Judge one attempt; also return the next attempt's prompt when a retry is due.
        Read by the reader of the unit's protocol (the paper's for ``--protocol paper``'s
        direct, zero-shot and few-shot units; the harness's for the rest, settings
        included, as the plan decides)."""
        reader = reader_for(unit.protocol)

        async def execute(program: str) -> Execution:
            assert self._executions is not None
            async with self._executions:
                return await self.solver.arun(program, toplevel=reader.toplevel)

        return await evaluate_attempt(
            unit.domain,
            unit.case,
            unit.mode,
            prompt,
            index,
            response.completion,
            execute,
            cached=response.cached,
            given=unit.given,
            reader=reader,
        )


async def evaluate_attempt(
    domain: Domain,
    case: Case,
    mode: Mode,
    prompt: Prompt,
    index: int,
    completion: Completion,
    execute: Callable[[str], Awaitable[Execution]],
    *,
    cached: bool = False,
    given: str = "",
    reader: Reader = HARNESS_READER,
) -> tuple[Attempt, Prompt | None]:
    """Judge one attempt of a sample; also return the next attempt's prompt when the
    retry rule calls for one (None: this attempt is final).

    The runner's side of judging (``reading.judging``, the one extract -> execute ->
    read -> judge path) and of the retry rule, shared by the runner and the other front
    doors (the inspect_ai integration).
    ``execute`` runs a program in the sandbox (the caller bounds its concurrency) as
    ``reader.toplevel`` says.  ``reader`` reads and judges (``reading.reader``; the
    harness's by default); the retry rule is the same whichever reads.
    ``given`` is a setting's shown part of the reference program: it goes before the
    model's program, and the record's program is the two together, as they ran.
    """
    c = completion
    attempt = _attempt_of(c, index, prompt, cached)
    if c.error is not None or c.text is None:
        attempt.error = c.error or "the backend returned no text"
        attempt.abstain_reason = "request failed"
        # Nothing to give feedback on: the same prompt again.
        return attempt, _next(mode, attempt, prompt)
    direct = mode in DIRECT_MODES
    # The verbal variant's confidence line is the reliability stage's, not an answer.
    text = without_confidence(c.text) if mode == VERBAL_MODE else c.text
    completed_by = partial(join_parts, given) if given else None
    reply = Reply(text, direct=direct, completed_by=completed_by)
    judged = await ajudge_attempt(reply, domain, case.gold, reader, run=execute)
    attempt.program = judged.program
    attempt.repaired = judged.repaired
    attempt.execution = judged.execution.to_dict() if judged.execution is not None else None
    attempt.answer = judged.answer.value
    attempt.abstain_reason = judged.answer.reason
    attempt.outcome = judged.outcome or "abstain"
    if direct:
        return attempt, _next(mode, attempt, prompt)
    if judged.program is None or judged.execution is None:
        return attempt, _next(
            mode, attempt, render_feedback(prompt, c.text, None, NO_PROGRAM_REPORT)
        )
    execution = judged.execution
    if calls_for_retry(mode, failed=False, answered=attempt.answer is not None):
        # The program failed to give an answer (a syntax or runtime error that stopped
        # it, a timeout or other limit, no or conflicting answer lines): feedback.
        feedback = solver_report(
            domain,
            status=execution.status,
            limit=execution.limit,
            stdout=execution.stdout,
            stderr=execution.stderr,
            no_answer=judged.answer.reason if execution.status == "ok" else None,
        )
        # The program as it ran, so that SWI-Prolog's line numbers match it.
        return attempt, render_feedback(prompt, c.text, judged.program, feedback)
    # A program that printed one answer is final, right or wrong, even if SWI-Prolog
    # also reported an error or warning along the way (``reading.feedback_retry``).
    return attempt, None


def _attempt_of(c: Completion, index: int, prompt: Prompt, cached: bool) -> Attempt:
    """An attempt as its completion left it, before reading (a response-cache hit is not
    billed: its cache tokens are the provider's, not this run's)."""
    return Attempt(
        index=index,
        prompt_hash=prompt.prompt_hash,
        response=c.text,
        error=c.error,
        tokens_in=c.tokens_in,
        tokens_out=c.tokens_out,
        latency_s=c.latency_s,
        cached=cached,
        cache_read_tokens=0 if cached else c.cache_read_tokens,
        cache_write_tokens=0 if cached else c.cache_write_tokens,
        cache_write_1h_tokens=0 if cached else c.cache_write_1h_tokens,
        logprobs=[[t, lp] for t, lp in c.logprobs] if c.logprobs else None,
        batch=c.batch,
        choice_fault=c.choice_fault,
    )


def _next(mode: str, attempt: Attempt, retry_prompt: Prompt) -> Prompt | None:
    """The next attempt's prompt when the retry rule (``reading.feedback_retry``) calls for one."""
    failed = attempt.error is not None or attempt.response is None
    answered = attempt.answer is not None
    return retry_prompt if calls_for_retry(mode, failed=failed, answered=answered) else None


def _in_plan(plan: RunPlan, record: Record) -> bool:
    return (
        record.domain in plan.k
        and record.mode in plan.modes
        and record.sample < plan.k[record.domain]
    )


async def _bounded(
    items: Iterable[Unit], job: Callable[[Unit], Awaitable[None]], *, limit: int
) -> None:
    """Run ``job`` over the items with at most ``limit`` in flight, in order; the first
    failure (or a cancellation) cancels the rest."""
    pending: set[asyncio.Future[None]] = set()
    source = iter(items)
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) < limit:
                item = next(source, None)
                if item is None:
                    exhausted = True
                    break
                pending.add(asyncio.ensure_future(job(item)))
            if not pending:
                return
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in finished:
                task.result()
    finally:
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)


__all__ = [
    "DEFAULT_ATTEMPTS",
    "DEFAULT_CONCURRENCY",
    "Observer",
    "Runner",
    "evaluate_attempt",
]
