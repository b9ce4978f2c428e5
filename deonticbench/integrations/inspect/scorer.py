"""The scorer: the last response judged by the library, and the sample's whole record.

The response is judged by ``runner.evaluate_attempt``: the program is pulled out of it
and repaired as the runner does, run in the harness's own sandbox pool (no Docker and
no inspect sandbox), its output read and judged against the case's gold label.  The
``Score`` carries the answer, the outcome and abstain reason and the program's output in
its metadata, beside ``record``: the sample as a records.jsonl line (every attempt), from
which the metrics are computed and ``deonticbench import-inspect`` rebuilds a run folder.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessageAssistant
from inspect_ai.scorer import CORRECT, INCORRECT, NOANSWER, Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from ...data.domains import get_domain
from ...evaluation.runner import evaluate_attempt
from ...prompting import Prompt, prompt_hash
from ...reading.reader import reader_for
from ...solver import Limits
from ...store.record import Attempt, Record
from ._messages import completion_of, from_inspect
from ._plan import TaskOptions, plan_for
from ._sandbox import execute
from .steps import ATTEMPTS_KEY, PENDING_KEY

RECORD_KEY = "record"
"""Score metadata key of the sample's record (``Record.to_json()``)."""

VALUES = {"correct": CORRECT, "wrong": INCORRECT, "abstain": NOANSWER}
"""Inspect's score value of each outcome (``mean`` over epochs reads C as 1, I and N as 0)."""


@scorer(metrics=[])
def deonticbench_scorer(
    domain: str,
    split: str = "hard",
    mode: str = "zero-shot",
    timeout: float = Limits.timeout_s,
    exemplar_seed: int = 0,
    data_dir: str | None = None,
    hub: bool = False,
    revision: str | None = None,
    protocol: str | None = None,
) -> Scorer:
    """Judge the sample's last response with the harness (sandboxed SWI-Prolog for
    program modes) and report the paper's outcome; the metrics come from the task."""
    options = TaskOptions(domain, split, mode, exemplar_seed, data_dir, hub, revision, protocol)
    spec = get_domain(domain)

    async def score(state: TaskState, target: Target) -> Score:
        unit = plan_for(options).unit(state.sample_id)
        stored: list[dict[str, Any]] = state.store.get(ATTEMPTS_KEY, [])
        attempts = [Attempt(**a) for a in stored]
        if state.store.get(PENDING_KEY, True) or not attempts:
            prompt = _last_prompt(state) or unit.render()
            reader = reader_for(unit.protocol)  # the harness's unless -T protocol=paper
            attempt, _ = await evaluate_attempt(
                spec,
                unit.case,
                unit.mode,
                prompt,
                len(attempts),
                completion_of(state.output),
                lambda program: execute(program, timeout, reader.toplevel),
                given=unit.given,
                reader=reader,
            )
            attempts.append(attempt)
        record = Record(
            domain=spec.name,
            case_id=unit.case.id,
            mode=unit.mode,
            sample=state.epoch - 1,
            gold=unit.case.gold,
            model=str(state.model),
            attempts=attempts,
        )
        return score_of(record)

    return score


def score_of(record: Record, **extra: Any) -> Score:
    """The Score of a judged sample: its final outcome, and its record in the metadata
    (``extra``: more metadata, e.g. an agentic trial's trajectory)."""
    final = record.final
    return Score(
        value=VALUES[final.outcome],
        answer=None if final.answer is None else str(final.answer),
        explanation=final.abstain_reason,
        metadata={
            "answer": final.answer,
            "outcome": final.outcome,
            "abstain_reason": final.abstain_reason,
            "first_outcome": record.first.outcome,
            "attempts": len(record.attempts),
            "program_output": program_output(final),
            RECORD_KEY: record.to_json(),
            **extra,
        },
    )


def _last_prompt(state: TaskState) -> Prompt | None:
    """The conversation the last response answered, as the harness's Prompt (its hash is
    what a record keeps), or None when the state holds no response to a prompt."""
    messages = list(state.messages)
    if len(messages) < 2 or not isinstance(messages[-1], ChatMessageAssistant):
        return None
    sent = from_inspect(messages[:-1])
    return Prompt(
        messages=sent, template="inspect", template_hash="", prompt_hash=prompt_hash(sent)
    )


def program_output(attempt: Attempt) -> dict[str, Any] | None:
    execution = attempt.execution
    if execution is None:
        return None
    return {k: execution.get(k) for k in ("status", "stdout", "stderr", "exit_code", "limit")}
