"""Runner benchmark: concurrent requests through the runner versus one-after-another calls.

Every side talks to the loopback server (``tests/support/fakeproviders.py``, run in its own
process as a real provider runs on its own machine) through the real openai client,
with a fixed latency per request, measured in one run:

* one after another: ``await model.generate(request)`` for each case in turn, nothing
  else (the floor of any sequential harness: N x latency);
* bare gather: the same calls under an ``asyncio.Semaphore(C)``, nothing else: what the
  client and server allow, so ``runner / bare gather`` is the runner's own cost;
* runner: ``Runner.run`` at ``--concurrency C`` end to end: rendering, requests, answer
  reading and judging, a fsync'd record per sample.

Direct mode, K=1, so each case is one request and Prolog CPU does not enter the picture
(the executor has its own benchmark).  The latency-bound limit of the runner is
N x latency / C; goal: runner time within 1.3x of it.  The real prompts are
long (airline, ~16 kB), so each request costs the client and server a few ms of CPU;
with few requests the start-up (client, connections) weighs more: N defaults to 300
airline cases (hard and whole).

A second part (--overlap N, default 80, 0 skips it) runs zero-shot with each case's reference
program as the response, to show model latency and Prolog CPU overlapping.

Usage: python benchmarks/runner.py [--cases N] [--concurrency C] [--latency S] [--rounds R]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from fakeproviders import FakeProvider, FakeRequest  # noqa: E402

from deonticbench.data.cases import Case, load_cases, resolve_source  # noqa: E402
from deonticbench.data.domains import get_domain  # noqa: E402
from deonticbench.evaluation.runner import Runner  # noqa: E402
from deonticbench.models import Request, load_model  # noqa: E402
from deonticbench.models.base import Model  # noqa: E402
from deonticbench.prompting import Prompt, render  # noqa: E402
from deonticbench.prompting.plan import plan_run  # noqa: E402
from deonticbench.reading.programs import prepare_program  # noqa: E402
from deonticbench.solver import Solver  # noqa: E402
from deonticbench.store.folder import RunFolder  # noqa: E402
from deonticbench.vocabulary.modes import Mode  # noqa: E402


def load(n: int) -> list[Case]:
    source = resolve_source()
    pool: dict[str, Case] = {}
    for split in ("hard", "whole"):
        for case in load_cases("airline", split, source):
            pool.setdefault(case.id, case)  # whole repeats some hard cases
    return list(pool.values())[:n]


def respond(request: FakeRequest) -> str:
    # A plausible direct answer; which case it is does not matter here.
    return f"The fees add up.\n\nAnswer: {len(request.last_user) % 997}"


def program_responder(cases: list[Case]) -> Callable[[FakeRequest], str]:
    """Answer each zero-shot prompt with its case's reference program."""
    by_text = {c.text.strip()[:200]: c for c in cases}

    def answer(request: FakeRequest) -> str:
        prompt = next(m["content"] for m in request.messages if m["role"] == "user")
        for key, case in by_text.items():
            if key in prompt:
                return f"```prolog\n{case.reference_prolog.strip()}\n```"
        return "no case matched"

    return answer


def serve(latency: float, ready: multiprocessing.Queue[str], stop: Any, programs: int) -> None:
    """The loopback server's process: report the URL, serve until told to stop."""
    responder = program_responder(load(programs)) if programs else respond
    with FakeProvider(responder, latency_s=latency) as fake:
        ready.put(fake.openai_url)
        stop.wait()


def model_for(url: str) -> Model:
    return load_model(f"openai-compatible:bench@{url}", overrides={"max_tries": 1})


async def sequential(url: str, cases: list[Case]) -> float:
    model = model_for(url)
    prompts = [render(c, "direct") for c in cases]
    started = time.perf_counter()
    for case, prompt in zip(cases, prompts, strict=True):
        request = Request(prompt.messages, 1, case.domain, case.id, mode="direct", sample_start=0)
        (completion,) = await model.generate(request)
        assert completion.error is None, completion.error
    elapsed = time.perf_counter() - started
    await model.aclose()
    return elapsed


async def bare_gather(url: str, cases: list[Case], concurrency: int) -> float:
    """The same requests as plain ``generate`` calls under a semaphore: what any asyncio
    harness could reach with this client and server, nothing of the runner in it."""
    model = model_for(url)
    prompts = [render(c, "direct") for c in cases]
    gate = asyncio.Semaphore(concurrency)

    async def one(case: Case, prompt: Prompt) -> None:
        async with gate:
            request = Request(
                prompt.messages, 1, case.domain, case.id, mode="direct", sample_start=0
            )
            (completion,) = await model.generate(request)
            assert completion.error is None, completion.error

    started = time.perf_counter()
    await asyncio.gather(*(one(c, p) for c, p in zip(cases, prompts, strict=True)))
    elapsed = time.perf_counter() - started
    await model.aclose()
    return elapsed


async def through_runner(
    url: str,
    cases: list[Case],
    solver: Solver,
    concurrency: int,
    out: Path,
    mode: Mode = "direct",
) -> tuple[float, int]:
    model = model_for(url)
    airline = get_domain("airline")
    plan = plan_run(
        [airline], split="bench", modes=[mode], source=resolve_source(), k=1,
        load=lambda d, s, src: cases,
    )  # fmt: skip
    config = {"model": {"spec": model.spec, "identity": model.identity()}, "split": "bench"}
    started = time.perf_counter()
    with RunFolder.open(out, config) as run:
        result = await Runner(model, solver, run, None, concurrency=concurrency).run(plan)
    elapsed = time.perf_counter() - started
    await model.aclose()
    errors = [a.error for r in run.done.values() for a in r.attempts if a.error]
    assert result.new == len(cases) and not errors, f"failed requests: {errors[:3]}"
    if mode != "direct":
        ran = sum(r.first.execution is not None for r in run.done.values())
        assert ran == len(cases), "every response's program was run"
    return elapsed, result.requests


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=3, help="runner rounds (median kept)")
    parser.add_argument(
        "--overlap", type=int, default=80, help="cases for the zero-shot overlap part (0: skip)"
    )
    args = parser.parse_args()

    cases = load(args.cases)
    n, c, latency = len(cases), args.concurrency, args.latency

    # The server runs in its own process, as a real provider runs on its own machine:
    # its JSON work must not compete with the runner for this process's GIL.
    ctx = multiprocessing.get_context("spawn")
    ready: multiprocessing.Queue[str] = ctx.Queue()
    stop = ctx.Event()
    server = ctx.Process(target=serve, args=(latency, ready, stop, 0), daemon=True)
    server.start()
    url = ready.get(timeout=60)
    try:
        with Solver() as solver:
            seq = asyncio.run(sequential(url, cases))
            runs, bares, cpu = [], [], []
            with tempfile.TemporaryDirectory() as tmp:
                # Interleaved rounds, so machine noise hits both alike.
                for index in range(args.rounds):
                    bares.append(asyncio.run(bare_gather(url, cases, c)))
                    before = time.process_time()
                    elapsed, requests = asyncio.run(
                        through_runner(url, cases, solver, c, Path(tmp) / f"run{index}")
                    )
                    cpu.append(time.process_time() - before)
                    assert requests == n
                    runs.append(elapsed)
    finally:
        stop.set()
        server.join(10)
    conc = statistics.median(runs)
    bound = n * latency / c
    print(f"runner benchmark: {n} requests, latency {latency:.2f} s, direct mode, K=1")
    print(f"  one after another:        {seq:7.2f} s  (N x latency = {n * latency:.2f} s)")
    print(
        f"  runner, concurrency {c:<3}:  {conc:7.2f} s  (median of {len(runs)}: "
        + ", ".join(f"{r:.2f}" for r in runs)
        + ")"
    )
    bare = statistics.median(bares)
    print(f"  bare asyncio.gather, C={c:<3}: {bare:6.2f} s  (same requests, no runner; median)")
    print(f"  speed-up over one after another: {seq / conc:.1f}x")
    print(f"  runner / bare gather:     {conc / bare:7.2f}x  (what the runner itself adds)")
    print(
        f"  runner CPU in this process: {statistics.median(cpu) / n * 1000:.1f} ms per request "
        "(client library, rendering, judging, fsync'd records)"
    )
    print(f"  latency-bound limit N x latency / C = {bound:.2f} s")
    ratio = conc / bound
    verdict = "meets" if ratio <= 1.3 else "misses"
    print(f"  runner / limit:           {ratio:7.2f}x  ({verdict} the goal of <= 1.3x)")
    if args.overlap:
        overlap(args.overlap, c, latency)


def overlap(count: int, concurrency: int, latency: float) -> None:
    """Zero-shot, every response the case's reference program: do waiting on the model
    and running Prolog overlap?  Compares the runner with Prolog alone (the same
    programs through the pool) and with the requests' latency bound."""
    cases = load(count)
    ctx = multiprocessing.get_context("spawn")
    ready: multiprocessing.Queue[str] = ctx.Queue()
    stop = ctx.Event()
    server = ctx.Process(target=serve, args=(latency, ready, stop, count), daemon=True)
    server.start()
    url = ready.get(timeout=60).removesuffix("#nodelay")
    airline = get_domain("airline")
    programs = [prepare_program(airline, c.reference_prolog).text for c in cases]
    try:
        with Solver() as solver, tempfile.TemporaryDirectory() as tmp:
            solver.map(programs[:4])  # warm the workers
            started = time.perf_counter()
            solver.map(programs)
            prolog = time.perf_counter() - started
            elapsed, _ = asyncio.run(
                through_runner(url, cases, solver, concurrency, Path(tmp) / "zs", "zero-shot")
            )
            workers = solver.size
    finally:
        stop.set()
        server.join(10)
    requests = len(cases) * latency / concurrency
    print(f"overlap: zero-shot, {len(cases)} reference programs as responses, C={concurrency}")
    print(f"  Prolog alone ({workers} workers):   {prolog:7.2f} s")
    print(f"  requests alone (N x latency / C):{requests:7.2f} s")
    print(f"  runner:                         {elapsed:7.2f} s  (no overlap would be about "
          f"{prolog + requests:.2f} s)")  # fmt: skip


if __name__ == "__main__":
    main()
