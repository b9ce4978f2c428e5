"""The runner end to end: real backends (the openai client against a loopback server,
reference, replay), real swipl in the sandbox pool, real run folders and sqlite cache."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from fakeproviders import FakeProvider, FakeRequest

from deonticbench.data.cases import Case, load_cases, resolve_source
from deonticbench.data.domains import DOMAINS, Domain, get_domain
from deonticbench.evaluation.cache import ResponseCache
from deonticbench.evaluation.runner import Runner
from deonticbench.models.base import Model
from deonticbench.prompting.plan import plan_run
from deonticbench.reading.answers import read_program_answer
from deonticbench.reading.outcomes import judge_answer
from deonticbench.reading.programs import prepare_program
from deonticbench.solver import Solver
from deonticbench.store.folder import RunFolder
from deonticbench.store.record import Record
from deonticbench.store.records_file import write_replay_file
from deonticbench.store.run import Session
from deonticbench.vocabulary.modes import Mode

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)

AIRLINE = get_domain("airline")
FEEDBACK_MARK = "I ran your program"
NO_PROGRAM_MARK = "I could not find a Prolog program"


# --- fixtures and helpers ----------------------------------------------------------------


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with Solver(workers=2) as pool:
        yield pool


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as server:
        yield server


def source():  # type: ignore[no-untyped-def]
    return resolve_source(DATA)


def smoke(domain: Domain) -> list[Case]:
    return load_cases(domain, "smoke", source())


def openai_model(fake: FakeProvider, **overrides: object) -> Model:
    from deonticbench.models import load_model

    options: dict[str, object] = {"max_tries": 2, "backoff_base_s": 0.01, "backoff_cap_s": 0.05}
    options.update(overrides)
    return load_model(f"openai-compatible:fake-model@{fake.openai_url}", overrides=options)


def case_of(request: FakeRequest, cases: Sequence[Case]) -> Case:
    """Which case a request is about: its narrative is in the first user message."""
    first_user = next(m["content"] for m in request.messages if m["role"] == "user")
    matches = [c for c in cases if c.text.strip()[:200] in first_user]
    assert len(matches) == 1, "every request names exactly one case"
    return matches[0]


def fenced(program: str) -> str:
    return f"Here is the program.\n\n```prolog\n{program.strip()}\n```\n"


def run(
    model: Model,
    solver: Solver,
    out: Path,
    *,
    domains: Sequence[Domain] = (AIRLINE,),
    modes: Sequence[Mode] = ("zero-shot",),
    k: int = 1,
    attempts: int = 2,
    limit: int | None = None,
    cache: ResponseCache | None = None,
    concurrency: int = 4,
) -> tuple[Session, dict[tuple[str, str, str, int], Record]]:
    plan = plan_run(
        list(domains), split="smoke", modes=list(modes), source=source(), k=k, limit=limit
    )
    config = {"model": {"spec": model.spec, "identity": model.identity()}, "split": "smoke"}

    async def go() -> tuple[Session, dict[tuple[str, str, str, int], Record]]:
        try:
            with RunFolder.open(out, config) as folder:
                runner = Runner(
                    model, solver, folder, cache, attempts=attempts, concurrency=concurrency
                )
                return await runner.run(plan), dict(folder.done)
        finally:
            await model.aclose()

    return asyncio.run(go())


def attempts_of(records: dict[tuple[str, str, str, int], Record]) -> dict[object, object]:
    return {
        key: [(a.outcome, a.answer, a.error is not None) for a in r.attempts]
        for key, r in records.items()
    }


# --- reference backend ---------------------------------------------------------------------


def test_reference_backend_agrees_with_the_reference_programs_on_every_smoke_domain(
    solver: Solver, tmp_path: Path
) -> None:
    from deonticbench.models.reference import ReferenceModel, reference_table

    domains = list(DOMAINS.values())
    table = reference_table(case for d in domains for case in smoke(d))
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        result, records = run(
            ReferenceModel(table), solver, tmp_path / "run", domains=domains,
            modes=("zero-shot", "direct"), cache=cache,
        )  # fmt: skip
        assert len(cache) == 0, "answers that cost nothing bypass the cache"
    assert result.new == len(records) == 2 * sum(len(smoke(d)) for d in domains)
    for domain in domains:
        for case in smoke(domain):
            # What validate does: run the reference program itself and judge its answer.
            execution = solver.run(prepare_program(domain, case.reference_prolog).text)
            expected = judge_answer(
                domain, read_program_answer(domain, execution.stdout), case.gold
            )
            record = records[(domain.name, case.id, "zero-shot", 0)]
            assert record.first.outcome == expected, (domain.name, case.id)
            assert records[(domain.name, case.id, "direct", 0)].first.outcome == "correct"


# --- the openai client against the loopback server -----------------------------------------


def test_samples_of_a_case_share_one_request_and_are_recorded_one_by_one(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    cases = smoke(AIRLINE)
    fake.responder = lambda r: f"The total is $5.\n\nAnswer: {case_of(r, cases).gold}"
    result, records = run(openai_model(fake), solver, tmp_path / "run", modes=("direct",), k=3)
    requests = fake.generation_requests()
    assert len(requests) == len(cases) and all(r.body.get("n") == 3 for r in requests)
    assert len(records) == 3 * len(cases)
    assert {r.sample for r in records.values()} == {0, 1, 2}
    assert all(r.final.outcome == "correct" for r in records.values())
    # The prompt was billed once per request: on the first sample only.
    firsts = [r.first.tokens_in for r in records.values() if r.sample == 0]
    others = [r.first.tokens_in for r in records.values() if r.sample > 0]
    assert all(t > 0 for t in firsts) and all(t == 0 for t in others)
    assert result.requests == len(cases)


def test_injected_server_errors_end_in_error_attempts_never_gaps(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    cases = smoke(AIRLINE)
    fake.responder = lambda r: f"Answer: {case_of(r, cases).gold}"
    # Every try fails: the shared request (n=2), then each sample's repeat.
    fake.fail_next(status=500, times=50)
    _, records = run(openai_model(fake), solver, tmp_path / "run", modes=("direct",), k=2, limit=1)
    assert sorted(k[3] for k in records) == [0, 1], "every sample has a record"
    for record in records.values():
        assert len(record.attempts) == 2
        for attempt in record.attempts:
            assert attempt.error is not None and attempt.response is None
            assert attempt.outcome == "abstain" and attempt.abstain_reason == "request failed"
        assert "500" in record.first.error  # type: ignore[operator]
    # One shared request and one repeat per sample, each tried twice by the backend.
    assert len(fake.generation_requests()) == 6


def test_a_rate_limit_is_waited_out_and_the_sample_succeeds(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    cases = smoke(AIRLINE)
    fake.responder = lambda r: f"Answer: {case_of(r, cases).gold}"
    fake.fail_next(status=429, retry_after="0")
    _, records = run(openai_model(fake), solver, tmp_path / "run", modes=("direct",), limit=1)
    (record,) = records.values()
    assert len(record.attempts) == 1 and record.final.outcome == "correct"
    assert len(fake.generation_requests()) == 2


# --- retry with feedback ---------------------------------------------------------------------

BROKEN = 'main :- format("Total cost: ~w~n", [X]) oops\n:- initialization(main).'


def broken_then_fixed(cases: list[Case]) -> Callable[[FakeRequest], str]:
    """A model whose first program is broken and whose answer to feedback is right."""

    def respond(request: FakeRequest) -> str:
        case = case_of(request, cases)
        if FEEDBACK_MARK in request.last_user:
            return fenced(case.reference_prolog)
        return fenced(BROKEN)

    return respond


def test_a_broken_program_is_retried_with_feedback_and_fixed(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    cases = smoke(AIRLINE)[:2]

    fake.responder = broken_then_fixed(cases)
    _, records = run(openai_model(fake), solver, tmp_path / "run", limit=2)
    assert len(records) == 2
    for record in records.values():
        assert [a.outcome for a in record.attempts] == ["abstain", "correct"]
        assert record.first.execution is not None
        assert record.first.execution["status"] == "syntax_error"
    retries = [r for r in fake.generation_requests() if FEEDBACK_MARK in r.last_user]
    assert len(retries) == 2
    for request in retries:
        case = case_of(request, cases)
        assert "oops" in request.last_user, "the failed program is quoted"
        assert "error" in request.last_user.lower(), "SWI-Prolog's report is quoted"
        roles = [m["role"] for m in request.messages]
        assert roles[-3:] == ["user", "assistant", "user"]
        # Never the gold label, anywhere in the retry (checked where it is absent from
        # the original prompt, so the assertion can only fail through the feedback).
        original = next(m["content"] for m in request.messages if m["role"] == "user")
        assert str(case.gold) not in original
        assert all(str(case.gold) not in m["content"] for m in request.messages)


def test_a_wrong_answer_is_never_retried(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    fake.responder = lambda r: fenced(
        "main :- format('Total cost: ~w~n', [1]).\n:- initialization(main, main)."
    )
    _, records = run(openai_model(fake), solver, tmp_path / "run", limit=3, attempts=3)
    assert len(records) == 3
    for record in records.values():
        assert len(record.attempts) == 1
        assert record.final.outcome == "wrong" and record.final.answer == 1.0
    assert all(FEEDBACK_MARK not in r.last_user for r in fake.generation_requests())
    assert len(fake.generation_requests()) == 3


def test_an_answer_printed_beside_an_error_is_final(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    """Right or wrong, an answer that was printed stands even when SWI-Prolog also
    reported an error: retrying it would depend on its correctness."""
    cases = smoke(AIRLINE)[:2]

    def respond(request: FakeRequest) -> str:
        case = case_of(request, cases)
        value = case.gold if case is cases[0] else 1
        return fenced(f":- format('Total cost: ~w~n', [{value}]).\n:- X is 1/0, writeln(X).")

    fake.responder = respond
    _, records = run(openai_model(fake), solver, tmp_path / "run", limit=2, attempts=3)
    assert len(records) == 2
    outcomes = set()
    for record in records.values():
        assert len(record.attempts) == 1
        assert record.first.execution is not None
        assert record.first.execution["status"] == "runtime_error"
        outcomes.add(record.final.outcome)
    assert outcomes == {"correct", "wrong"}
    assert all(FEEDBACK_MARK not in r.last_user for r in fake.generation_requests())


def test_a_response_without_a_program_gets_the_no_program_feedback(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    fake.responder = lambda r: "I think the total is about $1000."
    _, records = run(openai_model(fake), solver, tmp_path / "run", limit=1, attempts=2)
    (record,) = records.values()
    assert [a.abstain_reason for a in record.attempts] == ["no Prolog program in the response"] * 2
    requests = fake.generation_requests()
    assert len(requests) == 2 and NO_PROGRAM_MARK in requests[1].last_user


def test_direct_mode_is_not_retried_after_an_unreadable_answer(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    fake.responder = lambda r: "It depends on many things."
    _, records = run(openai_model(fake), solver, tmp_path / "run", modes=("direct",), limit=2)
    assert all(len(r.attempts) == 1 and r.final.outcome == "abstain" for r in records.values())
    assert len(fake.generation_requests()) == 2


# --- cache, replay, resume -------------------------------------------------------------------


def test_the_cache_answers_a_rerun_without_requests_but_errors_are_asked_again(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    cases = smoke(AIRLINE)
    fake.responder = lambda r: f"Answer: {case_of(r, cases).gold}"
    fake.fail_next(status=500, times=2)  # the first case's first attempt fails
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        _first, records1 = run(
            openai_model(fake),
            solver,
            tmp_path / "a",
            modes=("direct",),
            cache=cache,
            concurrency=1,
        )
        sent = len(fake.generation_requests())
        second, records2 = run(
            openai_model(fake), solver, tmp_path / "b", modes=("direct",), cache=cache
        )
    # Only the failed case was asked again (its errors were not cached).
    again = fake.generation_requests()[sent:]
    assert [case_of(r, cases).id for r in again] == [cases[0].id]
    assert second.requests == 1 and second.cache_hits == len(cases) - 1
    for key, record in records2.items():
        if key[1] != cases[0].id:
            assert record.first.cached and record.first.response == records1[key].first.response
    assert records1[("airline", cases[0].id, "direct", 0)].first.error is not None
    assert records2[("airline", cases[0].id, "direct", 0)].first.outcome == "correct"


def _mixed_responder(cases: Sequence[Case]) -> Callable[[FakeRequest], str]:
    """Per case: correct program, wrong program, broken-then-fixed, prose, direct answer."""

    def respond(request: FakeRequest) -> str:
        case = case_of(request, cases)
        index = cases.index(case)
        if "prolog" not in request.messages[-1]["content"].lower() and index % 2:
            return f"Answer: {case.gold}"
        if index == 0:
            return fenced(case.reference_prolog)
        if index == 1:
            return fenced(
                "main :- format('Total cost: ~w~n', [7]).\n:- initialization(main, main)."
            )
        if index == 2:
            return (
                fenced(case.reference_prolog)
                if FEEDBACK_MARK in request.last_user
                else fenced(BROKEN)
            )
        if index == 3:
            return "No idea."
        return f"The total is ${case.gold}. Answer: {case.gold}"

    return respond


def test_replay_of_a_runs_responses_gives_the_same_outcomes(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    from deonticbench.models import load_model

    cases = smoke(AIRLINE)
    fake.responder = _mixed_responder(cases)
    _, original = run(
        openai_model(fake), solver, tmp_path / "a", modes=("direct", "zero-shot"), k=2
    )
    assert {len(r.attempts) for r in original.values()} == {1, 2}
    replay_file = tmp_path / "responses.jsonl"
    assert write_replay_file(original.values(), replay_file) > len(original)
    _, replayed = run(
        load_model(f"replay:{replay_file}"),
        solver,
        tmp_path / "b",
        modes=("direct", "zero-shot"),
        k=2,
    )
    assert attempts_of(replayed) == attempts_of(original)


def test_resume_does_only_what_is_missing(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    cases = smoke(AIRLINE)
    fake.responder = lambda r: f"Answer: {case_of(r, cases).gold}"
    out = tmp_path / "run"
    first, _ = run(openai_model(fake), solver, out, modes=("direct",), k=2, limit=2)
    assert first.new == 4
    second, records = run(openai_model(fake), solver, out, modes=("direct",), k=2)
    assert second.resumed == 4 and second.new == 6 and len(records) == 10
    asked = [case_of(r, cases).id for r in fake.generation_requests()]
    assert sorted(asked) == sorted(c.id for c in cases), "no case was asked twice"
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 10


def test_cancelling_a_run_keeps_finished_records_and_resume_completes(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    cases = smoke(AIRLINE)
    fake.responder = lambda r: f"Answer: {case_of(r, cases).gold}"
    fake.latency_s = 0.2
    model = openai_model(fake)
    plan = plan_run([AIRLINE], split="smoke", modes=["direct"], source=source(), k=1)
    config = {"model": {"spec": model.spec, "identity": model.identity()}, "split": "smoke"}
    out = tmp_path / "run"

    async def interrupted() -> int:
        with RunFolder.open(out, config) as folder:
            runner = Runner(model, solver, folder, None, concurrency=1)
            task = asyncio.ensure_future(runner.run(plan))
            while runner.result.new < 2:
                await asyncio.sleep(0.02)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert runner.result.interrupted
            await model.aclose()
            return runner.result.new

    kept = asyncio.run(interrupted())
    assert 2 <= kept < len(cases)
    fake.latency_s = 0.0
    result, records = run(openai_model(fake), solver, out, modes=("direct",))
    assert result.resumed == kept and len(records) == len(cases)
    assert len((out / "records.jsonl").read_text().splitlines()) == len(cases)


def test_the_cache_also_answers_feedback_retries_on_a_rerun(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    cases = smoke(AIRLINE)[:2]

    fake.responder = broken_then_fixed(cases)
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        _, first = run(openai_model(fake), solver, tmp_path / "a", limit=2, cache=cache)
        sent = len(fake.generation_requests())
        second, again = run(openai_model(fake), solver, tmp_path / "b", limit=2, cache=cache)
    assert sent == 4 and len(fake.generation_requests()) == sent, "nothing asked twice"
    assert second.requests == 0 and second.cache_hits == 4
    assert attempts_of(again) == attempts_of(first)
    for record in again.values():
        assert [a.cached for a in record.attempts] == [True, True]
        # The retry prompt is stable across runs: no sandbox job path in it.
        assert record.attempts[1].prompt_hash == first[record.key].attempts[1].prompt_hash


def test_retry_errors_redoes_failed_samples_and_keeps_one_line_each(
    fake: FakeProvider, solver: Solver, tmp_path: Path
) -> None:
    cases = smoke(AIRLINE)
    fake.responder = lambda r: f"Answer: {case_of(r, cases).gold}"
    fake.fail_next(status=500, times=4)  # an outage: both attempts of the first case fail
    out = tmp_path / "run"
    _, before = run(openai_model(fake), solver, out, modes=("direct",), concurrency=1, limit=1)
    assert before[("airline", cases[0].id, "direct", 0)].final.error is not None
    # A plain resume keeps the error record...
    again, _ = run(openai_model(fake), solver, out, modes=("direct",), limit=1)
    assert again.new == 0
    # ...retry_errors takes it out and does the sample again.
    model = openai_model(fake)
    plan = plan_run([AIRLINE], split="smoke", modes=["direct"], source=source(), k=1, limit=1)
    config = {"model": {"spec": model.spec, "identity": model.identity()}, "split": "smoke"}

    async def redo() -> Session:
        with RunFolder.open(out, config, retry_errors=True) as folder:
            assert folder.loaded.dropped_errors == 1
            result = await Runner(model, solver, folder, None).run(plan)
        await model.aclose()
        return result

    result = asyncio.run(redo())
    assert result.new == 1
    lines = (out / "records.jsonl").read_text().splitlines()
    assert len(lines) == 1
    assert Record.from_json(json.loads(lines[0])).final.outcome == "correct"
