"""The evaluation pipeline: case -> prompt -> completion -> program -> execution -> answer
-> outcome, for every domain x case x mode x sample, written as records.

    plan = plan_run(domains, split="hard", modes=MODES, source=resolve_source())
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
Every attempt is kept, so a run yields the first-attempt score (the paper's protocol)
and the final score.

Resume: samples that already have a record are skipped; a response already in the
cache is reused instead of requested again.
"""

from __future__ import annotations

import asyncio
import re
import sys
import time
from collections.abc import (
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, TypeVar

from .answers import Answer, answer_from_execution, read_direct_answer
from .chat import Message
from .data import Case, describe_source, load_cases, pin_source
from .domains import Domain
from .models.base import Completion, Model, Request
from .modes import Mode
from .outcomes import judge
from .programs import extract_program, prepare_program
from .prompting import (
    Prompt,
    choose_exemplars,
    exemplar_pool,
    render,
    render_feedback,
    template_hashes,
)
from .records import Attempt, Record
from .selection import CaseLimit, check_ids_found, select_cases
from .solver import Execution, Solver
from .sources import DataSource
from .spec import DEFAULT_ATTEMPTS, DEFAULT_CONCURRENCY, RunSpec
from .store import (
    CachedResponse,
    RecordKey,
    ResponseCache,
    RunFolder,
    cache_key,
    environment_facts,
)

T = TypeVar("T")
FEEDBACK_STDERR_CHARS = 3000
FEEDBACK_STDOUT_CHARS = 1500


# --- the plan ------------------------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One domain x case x mode: its samples share the first prompt."""

    domain: Domain
    case: Case
    mode: Mode
    k: int
    exemplars: tuple[Case, ...] = ()

    def sample_keys(self) -> list[RecordKey]:
        return [(self.domain.name, self.case.id, self.mode, s) for s in range(self.k)]


@dataclass
class RunPlan:
    domains: list[Domain]
    split: str
    modes: list[Mode]
    k: dict[str, int]
    units: list[Unit]
    seed: int
    pool_notes: dict[str, str] = field(default_factory=dict)
    source: DataSource | None = None
    """The data source, pinned: every case of the plan was read from this snapshot."""

    @property
    def total_samples(self) -> int:
        return sum(u.k for u in self.units)

    def totals(self) -> dict[tuple[str, str], int]:
        """Samples per (domain, mode): what the progress display counts towards."""
        out: dict[tuple[str, str], int] = {}
        for u in self.units:
            key = (u.domain.name, u.mode)
            out[key] = out.get(key, 0) + u.k
        return out


def plan_run(
    domains: Sequence[Domain],
    *,
    split: str,
    modes: Sequence[Mode],
    source: DataSource,
    k: int | Sequence[tuple[str, int]] | None = None,
    limit: CaseLimit | None = None,
    seed: int = 0,
    load: Callable[[Domain, str, DataSource], list[Case]] | None = None,
    case_ids: Collection[str] | None = None,
) -> RunPlan:
    """Load the cases and choose few-shot exemplars: everything a run will do, in order.

    ``k`` is samples per case: one number, ``(domain, K)`` pairs, or None for each
    domain's default (see ``RunSpec.k``).  ``limit`` and ``case_ids`` choose cases (see
    ``selection.select_cases``)."""
    loader = load or load_cases
    if load is None:
        source = pin_source(source)
    units: list[Unit] = []
    ks: dict[str, int] = {}
    notes: dict[str, str] = {}
    for domain in domains:
        cases = select_cases(loader(domain, split, source), limit=limit, case_ids=case_ids)
        if isinstance(k, int):
            ks[domain.name] = k
        else:  # None, or per domain (a resumed run's config): the domain's default else
            ks[domain.name] = dict(k or ()).get(domain.name, domain.default_k)
        pool: list[Case] = []
        if "few-shot" in modes:
            pool_cases, note = exemplar_pool(domain, source)
            pool = list(pool_cases)
            notes[domain.name] = note
        for case in cases:
            for mode in modes:
                exemplars: tuple[Case, ...] = ()
                if mode == "few-shot":
                    exemplars = tuple(
                        choose_exemplars(domain, pool, case, domain.few_shot_count, seed)
                    )
                units.append(Unit(domain, case, mode, ks[domain.name], exemplars))
    check_ids_found(case_ids, (u.case.id for u in units))
    return RunPlan(list(domains), split, list(modes), ks, units, seed, notes, source)


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


@dataclass
class RunResult:
    records: dict[RecordKey, Record]
    """Every record of the run folder: resumed and new."""
    new: int = 0
    resumed: int = 0
    requests: int = 0
    """Model requests actually sent (cache hits excluded)."""
    cache_hits: int = 0
    interrupted: bool = False


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
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.model = model
        self.solver = solver
        self.run_folder = run
        # Replay and reference answers cost nothing: caching them would only grow the file.
        self.cache = cache if model.cacheable else None
        self.attempts = attempts
        self.concurrency = concurrency
        self.observer: Observer = observer or _Silent()
        self._identity = model.identity()
        self._requests: asyncio.Semaphore | None = None
        self._executions: asyncio.Semaphore | None = None
        self._result = RunResult(records=run.done)

    async def run(self, plan: RunPlan) -> RunResult:
        """Do every sample of the plan that has no record yet.  Cancellation stops
        cleanly: finished records are already on disk, in-flight samples are dropped."""
        done = self.run_folder.done
        self._result.resumed = sum(1 for u in plan.units for key in u.sample_keys() if key in done)
        self.observer.started(plan.totals(), [r for r in done.values() if _in_plan(plan, r)])
        self._requests = asyncio.Semaphore(self.concurrency)
        # The bound is on HTTP calls: a backend that splits a request into single calls
        # (a server ignoring n) still has at most `concurrency` of them in flight.
        self.model.limit_in_flight(self.concurrency)
        # No more programs handed to the pool than it has workers: each waiting program
        # would hold one of asyncio's few default threads, which the event loop also
        # needs (name resolution for new connections, among others).
        self._executions = asyncio.Semaphore(max(1, int(getattr(self.solver, "size", 2))))
        todo = [u for u in plan.units if any(key not in done for key in u.sample_keys())]
        try:
            await _bounded(todo, self._unit, limit=max(2 * self.concurrency, 4))
        except asyncio.CancelledError:
            self._result.interrupted = True
            raise
        return self._result

    @property
    def result(self) -> RunResult:
        return self._result

    # one unit: the samples of a case in a mode ------------------------------------

    async def _unit(self, unit: Unit) -> None:
        done = self.run_folder.done
        samples = [
            s for s in range(unit.k) if (unit.domain.name, unit.case.id, unit.mode, s) not in done
        ]
        prompt = render(unit.case, unit.mode, unit.exemplars)
        first = await self._draw(unit, prompt, samples, attempt=0)
        await asyncio.gather(*(self._sample(unit, prompt, s, first[s]) for s in samples))

    async def _draw(
        self, unit: Unit, prompt: Prompt, samples: list[int], attempt: int
    ) -> dict[int, _Response]:
        """Responses for ``samples`` of one prompt: from the cache, else requested in
        batches of consecutive sample indices (one request per batch, ``n`` = its size)."""
        hits, batches = split_requests(samples, lambda s: self._cached(prompt, s, attempt))
        out = {s: _Response(hit, cached=True) for s, hit in hits.items()}
        drawn = await asyncio.gather(
            *(self._request(unit, prompt, batch, attempt) for batch in batches)
        )
        for batch, completions in zip(batches, drawn, strict=True):
            for s, completion in zip(batch, completions, strict=True):
                out[s] = _Response(completion, cached=False)
                self._store(prompt, s, attempt, completion)
        return out

    async def _request(
        self, unit: Unit, prompt: Prompt, batch: list[int], attempt: int
    ) -> list[Completion]:
        request = Request(
            messages=tuple(prompt.messages),
            n=len(batch),
            domain=unit.domain.name,
            case_id=unit.case.id,
            mode=unit.mode,
            sample_start=batch[0],
            attempt=attempt,
        )
        assert self._requests is not None
        async with self._requests:
            self._result.requests += 1
            completions = await self.model.generate(request)
        if len(completions) != len(batch):
            # A backend bug must not shift answers between samples: fail the batch.
            error = f"backend returned {len(completions)} completions for n={len(batch)}"
            return [Completion.failed(error) for _ in batch]
        return completions

    def _cached(self, prompt: Prompt, sample: int, attempt: int) -> Completion | None:
        if self.cache is None:
            return None
        hit = self.cache.get(cache_key(self._identity, prompt.prompt_hash, sample, attempt))
        if hit is None:
            return None
        self._result.cache_hits += 1
        return Completion(
            text=hit.text,
            tokens_in=hit.tokens_in,
            tokens_out=hit.tokens_out,
            latency_s=hit.latency_s,
            finish_reason=hit.finish_reason,
        )

    def _store(self, prompt: Prompt, sample: int, attempt: int, completion: Completion) -> None:
        # Errors are not cached: a re-run should try the request again.
        if self.cache is None or completion.error is not None or completion.text is None:
            return
        self.cache.put(
            cache_key(self._identity, prompt.prompt_hash, sample, attempt),
            CachedResponse(
                text=completion.text,
                tokens_in=completion.tokens_in,
                tokens_out=completion.tokens_out,
                latency_s=completion.latency_s,
                finish_reason=completion.finish_reason,
            ),
        )

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
        record = Record(
            domain=unit.domain.name,
            case_id=unit.case.id,
            mode=unit.mode,
            sample=sample,
            gold=unit.case.gold,
            model=self.model.spec,
            attempts=attempts,
        )
        self.run_folder.append(record)
        self._result.new += 1
        self.observer.recorded(record)

    async def _evaluate(
        self, unit: Unit, prompt: Prompt, index: int, response: _Response
    ) -> tuple[Attempt, Prompt | None]:
        """Judge one attempt; also return the next attempt's prompt when a retry is due."""
        c = response.completion
        attempt = Attempt(
            index=index,
            prompt_hash=prompt.prompt_hash,
            response=c.text,
            error=c.error,
            tokens_in=c.tokens_in,
            tokens_out=c.tokens_out,
            latency_s=c.latency_s,
            cached=response.cached,
        )
        if c.error is not None or c.text is None:
            attempt.error = c.error or "the backend returned no text"
            attempt.abstain_reason = "request failed"
            # Nothing to give feedback on: the same prompt again.
            return attempt, prompt
        domain = unit.domain
        if unit.mode == "direct":
            answer = read_direct_answer(domain, c.text)
            _set_answer(attempt, domain, answer, unit.case)
            return attempt, None
        program = extract_program(c.text)
        if program is None:
            _set_answer(attempt, domain, Answer.abstain("no Prolog program in the response"), None)
            feedback = "No Prolog program (a ```prolog code block) was found in the response."
            return attempt, render_feedback(prompt, c.text, None, feedback)
        prepared = prepare_program(domain, program)
        attempt.program = prepared.text
        attempt.repaired = prepared.repaired
        assert self._executions is not None
        async with self._executions:
            execution = await self.solver.arun(prepared.text)
        attempt.execution = execution.to_dict()
        answer = answer_from_execution(domain, execution)
        _set_answer(attempt, domain, answer, unit.case)
        if answer.abstained:
            # The program failed to give an answer (a syntax or runtime error that stopped
            # it, a timeout or other limit, no or conflicting answer lines): feedback.
            feedback = feedback_text(domain, execution, answer)
            # The program as it ran, so that SWI-Prolog's line numbers match it.
            return attempt, render_feedback(prompt, c.text, prepared.text, feedback)
        # A program that printed one answer is final, right or wrong, even if SWI-Prolog
        # also reported an error or warning along the way: retrying it could only be
        # prompted by the answer's correctness, which the loop must never look at.
        return attempt, None


def _in_plan(plan: RunPlan, record: Record) -> bool:
    return (
        record.domain in plan.k
        and record.mode in plan.modes
        and record.sample < plan.k[record.domain]
    )


def _set_answer(attempt: Attempt, domain: Domain, answer: Answer, case: Case | None) -> None:
    attempt.answer = answer.value
    attempt.abstain_reason = answer.reason
    attempt.outcome = judge(domain, answer, case.gold) if case is not None else "abstain"


def feedback_text(domain: Domain, execution: Execution, answer: Answer) -> str:
    """What the model is told after a failed program: SWI-Prolog's own output.

    Built only from the execution and the domain's required answer line, so the gold
    label cannot reach it.  stderr is cut at its end (the first errors matter most),
    stdout at its start (the last lines show how far the program got).
    """
    parts = [f"Running the program with SWI-Prolog ended with status {execution.status}"]
    if execution.limit:
        parts[0] += f" (limit hit: {execution.limit})"
    parts[0] += "."
    if execution.status == "ok" and answer.abstained:
        parts.append(
            f"It printed no readable answer ({answer.reason}); the program must print "
            f"exactly one line of the form {domain.answer_line}."
        )
    stderr = _stable_paths(execution.stderr.strip())
    if stderr:
        parts.append("stderr:\n" + _head(stderr, FEEDBACK_STDERR_CHARS))
    stdout = _stable_paths(execution.stdout.strip())
    parts.append("stdout:\n" + (_tail(stdout, FEEDBACK_STDOUT_CHARS) if stdout else "(empty)"))
    return "\n\n".join(parts)


# The sandbox runs each program in a fresh job folder, whose name SWI-Prolog puts in
# every message.  It means nothing to the model, and it would make the retry prompt (so
# its cache key) differ on every run: keep the file name only.
_JOB_PATH = re.compile(r"(?:/[^\s/:'\"()]+)+/(program\.pl)")


def _stable_paths(text: str) -> str:
    return _JOB_PATH.sub(r"\1", text)


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n... (cut)"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "(cut) ...\n" + text[-limit:]


def split_requests(
    samples: Iterable[int], cached: Callable[[int], T | None]
) -> tuple[dict[int, T], list[list[int]]]:
    """The one batching rule, for the runner and the dry-run estimate alike: the samples
    the cache answers (``cached`` returns a response or None), and the requests for the
    rest, one per run of consecutive sample indices (``n`` = its length)."""
    hits: dict[int, T] = {}
    missing: list[int] = []
    for s in samples:
        hit = cached(s)
        if hit is not None:
            hits[s] = hit
        else:
            missing.append(s)
    return hits, list(_consecutive_runs(missing))


def _consecutive_runs(samples: list[int]) -> Iterator[list[int]]:
    """[0, 1, 3] -> [0, 1], [3]: a request covers consecutive sample indices only,
    because backends that look samples up by index (replay) count from sample_start."""
    run: list[int] = []
    for s in sorted(samples):
        if run and s != run[-1] + 1:
            yield run
            run = []
        run.append(s)
    if run:
        yield run


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


# --- configuration and estimates ------------------------------------------------------


def build_config(spec: RunSpec, model: Model, plan: RunPlan) -> dict[str, Any]:
    """What a run folder's config.json says: everything that produced its numbers.

    Built from the spec (resolved: ``spec.attempts`` set), the model it names and the
    plan made from it.  The model part holds the spec, the identity (the cache key:
    model, endpoint and every sampling parameter) and never a key: backends read keys
    from the environment and do not put them in ``identity()``.
    """
    if spec.attempts is None:
        raise ValueError("build_config needs a spec whose attempts are resolved")
    if plan.source is None:
        raise ValueError("build_config needs a plan made from a data source")
    facts = environment_facts()
    return {
        "harness": "deonticbench",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "model": {
            "spec": model.spec,
            "provider": model.provider,
            "model_name": model.model_name,
            "identity": model.identity(),
            "params": model.params.to_dict(),
        },
        "split": plan.split,
        "domains": [d.name for d in plan.domains],
        "modes": list(plan.modes),
        "k": dict(plan.k),
        "attempts": spec.attempts,
        "seed": plan.seed,
        "data": describe_source(plan.source),
        "templates": template_hashes(),
        "few_shot_pools": dict(plan.pool_notes),
        "limits": asdict(spec.limits),
        "environment": facts,
        "sessions": [
            {
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "git_commit": facts.get("git_commit"),
                "limit": spec.limit,
                "case_ids": list(spec.case_ids) or None,
                "concurrency": spec.concurrency,
                "argv": list(sys.argv),
            }
        ],
    }


@dataclass
class DryRunRow:
    domain: str
    mode: str
    samples: int = 0
    done: int = 0
    cached: int = 0
    requests: int = 0
    prompt_tokens: int = 0


@dataclass
class DryRunEstimate:
    """What a run would send, before anything is spent (``--dry-run``)."""

    rows: list[DryRunRow]
    attempts: int

    @property
    def requests(self) -> int:
        return sum(r.requests for r in self.rows)

    @property
    def prompt_tokens(self) -> int:
        return sum(r.prompt_tokens for r in self.rows)

    @property
    def samples_left(self) -> int:
        return sum(r.samples - r.done for r in self.rows)


def estimate(
    model: Model,
    plan: RunPlan,
    *,
    done: Mapping[RecordKey, Record] | None = None,
    cache: ResponseCache | None = None,
    attempts: int = DEFAULT_ATTEMPTS,
    count_tokens: Callable[[Model, Sequence[Message]], int],
) -> DryRunEstimate:
    """Count the first-attempt requests and their prompt tokens, exactly as ``Runner``
    would batch them (finished samples and cached responses excluded).  Retries depend
    on how programs fare, so they are only bounded, not counted."""
    finished = done or {}
    use_cache = cache if model.cacheable else None
    identity = model.identity()
    rows: dict[tuple[str, str], DryRunRow] = {}
    for unit in plan.units:
        row = rows.setdefault((unit.domain.name, unit.mode), DryRunRow(unit.domain.name, unit.mode))
        row.samples += unit.k
        pending = [s for s, key in enumerate(unit.sample_keys()) if key not in finished]
        row.done += unit.k - len(pending)
        if not pending:
            continue
        prompt = render(unit.case, unit.mode, unit.exemplars)

        def cached(s: int, prompt: Prompt = prompt) -> CachedResponse | None:
            if use_cache is None:
                return None
            return use_cache.get(cache_key(identity, prompt.prompt_hash, s, 0))

        hits, batches = split_requests(pending, cached)
        row.cached += len(hits)
        if batches:
            row.requests += len(batches)
            row.prompt_tokens += len(batches) * count_tokens(model, prompt.messages)
    return DryRunEstimate(list(rows.values()), attempts)


__all__ = [
    "DEFAULT_ATTEMPTS",
    "DEFAULT_CONCURRENCY",
    "Observer",
    "RunPlan",
    "RunResult",
    "Runner",
    "Unit",
    "build_config",
    "estimate",
    "feedback_text",
    "plan_run",
]
