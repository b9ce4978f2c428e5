"""Carrying a set out: its lanes side by side, each lane's runs one after another, all
under one budget, every run into its ordinary folder under the set's.

At the start every model is asked, all at once, whether its server is there and takes
its key (free: ``Model.check``): a run that cannot run is said at once and never sends
a request, while the other lanes go on.  The
budget (``evaluation.spending.Budget``) starts from the set's ledger, so a resumed set
counts what it paid before; when the cap is reached every run is stopped as Ctrl-C
stops ``eval`` (the records are kept, results.json written) and the runs not started
are left for the next invocation.  A run that fails (its server goes away, say) is
reported and the other lanes go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..api import arun
from ..errors import DeonticBenchError
from ..evaluation import Budget
from ..models import model_prices
from ..scoring import figures
from ..store import sets
from ..store.run import Run
from .plan import PlannedRun, SetPlan
from .progress import SetProgress

__all__ = ["RunOutcome", "SetOutcome", "run_set"]

logger = logging.getLogger(__name__)

RunState = Literal["done", "interrupted", "not started", "failed"]


@dataclass
class RunOutcome:
    name: str
    state: RunState = "not started"
    run: Run | None = None
    error: str | None = None
    wall_s: float = 0.0


@dataclass
class SetOutcome:
    runs: list[RunOutcome]
    budget: Budget
    stopped_by: Literal["budget", "signal"] | None = None
    wall_s: float = 0.0
    lanes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return all(r.state == "done" and r.run is not None and _finished(r.run) for r in self.runs)


def _finished(run: Run) -> bool:
    session = run.session
    return session is None or (not session.interrupted and session.missing == 0)


async def run_set(
    plan: SetPlan,
    *,
    max_usd: float | None,
    progress: SetProgress | None = None,
    after_run: Callable[[str, Path], object] | None = None,
) -> SetOutcome:
    """Run every run of ``plan`` that is not finished (each resumes from its folder).
    ``after_run(name, folder)`` is called on a thread for each run its lane finishes
    (``eval-set`` scores it there, while the other lanes run)."""
    sets.write_set_manifest(plan.folder, plan.source, [r.manifest_row for r in plan.runs])
    ledger = sets.SpendLedger(plan.folder)
    spent = ledger.by_run()
    budget = Budget(
        max_usd,
        spent_usd=sum(spent.values()),
        record=ledger.append,
        spent_by_run=dict(spent),
    )
    if progress is not None:
        progress.budget = budget
        for run in plan.runs:
            progress.observer(run.name)
    outcomes = {run.name: RunOutcome(run.name) for run in plan.runs}
    lanes = plan.lanes()
    tasks: list[asyncio.Task[None]] = []
    stopped: list[Literal["budget", "signal"]] = []

    stopper: list[asyncio.Task[None]] = []

    def stop_at_cap() -> None:
        if not stopped:
            stopped.append("budget")
        if not stopper:  # called inside the refused request's reserve: stop a little later
            stopper.append(asyncio.ensure_future(_stop_after_stores(tasks)))

    budget.on_exhausted = stop_at_cap
    started = time.monotonic()

    # Every model is asked at once, at the start, whether its server is there and takes
    # its key: a run late in its lane that cannot run is said now, not hours later.
    checks = {run.name: asyncio.ensure_future(_check(run, progress)) for run in plan.runs}
    closing: list[asyncio.Future[None]] = []

    async def lane(runs: list[PlannedRun]) -> None:
        for run in runs:
            if stopped:
                return
            outcome = outcomes[run.name]
            failure = await checks[run.name]
            if failure is not None:
                outcome.state, outcome.error = "failed", failure
                continue
            try:
                await _one(run, budget, outcome, progress)
                if after_run is not None and outcome.state == "done":
                    await asyncio.to_thread(after_run, run.name, run.prepared.out)
            except Exception as exc:  # a bug must not end its lane unsaid
                outcome.state, outcome.error = "failed", f"{type(exc).__name__}: {exc}"
                logger.exception("run %s failed", run.name)
            if not closing:  # the set's closing modules load while the other lanes run
                closing.append(asyncio.ensure_future(asyncio.to_thread(_load_closing)))

    tasks.extend(asyncio.ensure_future(lane(runs)) for runs in lanes.values())
    try:
        await asyncio.gather(*tasks, return_exceptions=True)
    except asyncio.CancelledError:
        if not stopped:
            stopped.append("signal")
        await asyncio.gather(*tasks, return_exceptions=True)
    for task in stopper:
        task.cancel()
    for check in checks.values():
        check.cancel()
    await asyncio.gather(*closing, *checks.values(), return_exceptions=True)
    if progress is not None:
        progress.finish()
    return SetOutcome(
        [outcomes[r.name] for r in plan.runs],
        budget,
        stopped[0] if stopped else None,
        time.monotonic() - started,
        {lane: [r.name for r in runs] for lane, runs in lanes.items()},
    )


STORE_TURNS = 50
"""Turns of the event loop the runs are given, once the cap is reached, before they are
stopped.  Every paid reply is in the response cache by then (the runner stores it before
its room under the cap is given back), so nothing is paid twice either way; these turns
let the last replies (a direct answer needs no program) become records too, so a capped
set keeps what it paid for as records.  No request can start meanwhile: every request
after the cap waits for ever."""


async def _stop_after_stores(tasks: list[asyncio.Task[None]]) -> None:
    for _ in range(STORE_TURNS):
        await asyncio.sleep(0)
    for task in tasks:
        task.cancel()


async def _check(run: PlannedRun, progress: SetProgress | None) -> str | None:
    """Whether ``run``'s model can be used: None, or the sentence saying why not (said at
    once).  Its client, the provider's SDK imported, is made on a thread: the import (up
    to 1.6 s) would otherwise hold every lane's event loop."""
    model = run.prepared.model
    try:
        await asyncio.to_thread(_made_client, model)
        await model.check()
    except DeonticBenchError as exc:
        sentence = f"{run.entry.where}: {exc}"
        if progress is not None:
            progress.say(f"error: {sentence}")
        return sentence
    return None


def _made_client(model: object) -> None:
    client = getattr(model, "client", None)
    if callable(client):
        client()


def _load_closing() -> None:
    """Import what the set's closing comparison draws with (the report, pyplot: about
    1 s), on a thread while the slowest lane still runs."""
    importlib.import_module("deonticbench.report")
    with contextlib.suppress(DeonticBenchError):  # no matplotlib: the report says so
        figures.pyplot()


async def _one(
    run: PlannedRun, budget: Budget, outcome: RunOutcome, progress: SetProgress | None
) -> None:
    """One run, resumed from its folder, its requests under the set's budget."""
    prepared = run.prepared
    options = dataclasses.replace(
        prepared.options,
        spend=budget.for_run(run.name, model_prices(prepared.model.spec)),
        observer=progress.observer(run.name) if progress is not None else None,
    )
    started = time.monotonic()
    try:
        made = await arun(dataclasses.replace(prepared, options=options))
    except asyncio.CancelledError:
        outcome.state = "interrupted" if outcome.run is None else outcome.state
        raise
    except DeonticBenchError as exc:
        outcome.state, outcome.error = "failed", str(exc)
        if progress is not None:
            progress.state(run.name, "failed")
        return
    finally:
        outcome.wall_s = time.monotonic() - started
    outcome.run = made
    interrupted = made.session is not None and made.session.interrupted
    outcome.state = "interrupted" if interrupted else "done"
    if progress is not None:
        progress.state(run.name, outcome.state)
