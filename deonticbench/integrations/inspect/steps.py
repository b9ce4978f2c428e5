"""inspect's solver step (an inspect ``Solver``; not our ``solver``, the Prolog sandbox):
the harness's prompt, then retry with feedback exactly as the runner does.

Each attempt's prompt is rendered by ``prompting`` (system message, the domain's
template for the mode, exemplars chosen by ``plan_run``).  Every attempt but the last is
judged here with ``runner.evaluate_attempt`` (the one implementation of extract ->
execute -> read -> judge and of the retry rule), because whether to retry depends on it;
the last attempt is left to the scorer, so with ``attempts=1`` the step only renders
and generates.  Judged attempts go to the sample's store for the scorer.
"""

from __future__ import annotations

from dataclasses import asdict

from inspect_ai.solver import Generate, Solver, TaskState, solver

from ...data.domains import get_domain
from ...evaluation.runner import evaluate_attempt
from ...reading.reader import reader_for
from ...solver import Limits
from ._messages import completion_of, to_inspect
from ._plan import TaskOptions, plan_for
from ._sandbox import execute

ATTEMPTS_KEY = "deonticbench:attempts"
"""Store key of the attempts the step judged (``Attempt`` dicts, in order)."""
PENDING_KEY = "deonticbench:pending"
"""Store key: True while the last response still awaits judging by the scorer."""


@solver
def deonticbench_solver(
    domain: str,
    split: str = "hard",
    mode: str = "zero-shot",
    attempts: int = 1,
    timeout: float = Limits.timeout_s,
    exemplar_seed: int = 0,
    data_dir: str | None = None,
    hub: bool = False,
    revision: str | None = None,
    protocol: str | None = None,
) -> Solver:
    """Render the sample's prompt under its protocol and generate; with
    ``attempts`` > 1, retry with SWI-Prolog's feedback when a program gave no answer."""
    options = TaskOptions(domain, split, mode, exemplar_seed, data_dir, hub, revision, protocol)
    spec = get_domain(domain)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        unit = plan_for(options).unit(state.sample_id)
        prompt = unit.render()
        reader = reader_for(unit.protocol)  # as the scorer and the runner read it
        judged: list[dict[str, object]] = []
        pending = True
        for index in range(attempts):
            state.messages = to_inspect(prompt.messages)
            state = await generate(state)
            if index + 1 == attempts:
                break  # the last attempt is the scorer's to judge
            attempt, retry = await evaluate_attempt(
                spec,
                unit.case,
                unit.mode,
                prompt,
                index,
                completion_of(state.output),
                lambda program: execute(program, timeout, reader.toplevel),
                given=unit.given,
                reader=reader,
            )
            judged.append(asdict(attempt))
            if retry is None:
                pending = False
                break
            prompt = retry
        state.store.set(ATTEMPTS_KEY, judged)
        state.store.set(PENDING_KEY, pending)
        return state

    return solve
