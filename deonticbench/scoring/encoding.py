"""A domain's records as arrays: outcomes of one mode and stage, cases in sorted id
order, so that the bootstrap's draws do not depend on the order the runner happened to
write records in.  Each sample is re-judged from its stored answer; how many verdicts
differ from the stored ones is counted (``Encoded.disagreements``)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..data.domains import Domain
from ..store.record import Attempt, Record
from .metrics import NEGATIVE, POSITIVE, Outcomes, correct_matrix

Stage = Literal["first", "final"]
STAGES: tuple[Stage, ...] = ("first", "final")
"""``first`` is attempt 0, before any retry with feedback; ``final`` the last retry."""


@dataclass(frozen=True)
class SampleDetail:
    """One sample as the per-case table shows it."""

    sample: int
    answer: float | str | None
    outcome: str
    reason: str | None


@dataclass(frozen=True)
class Encoded:
    outcomes: Outcomes
    gold: dict[str, Any]
    """Case id -> the gold label as recorded."""
    samples: dict[str, list[SampleDetail]]
    disagreements: int
    """Samples whose stored outcome differs from the re-judged one."""


def stage_attempt(record: Record, stage: Stage) -> Attempt:
    return record.first if stage == "first" else record.final


def _numeric_value(answer: object) -> float | None:
    # Like outcomes.judge_answer: a string is no number; bools are not numbers either.
    if isinstance(answer, bool) or not isinstance(answer, int | float):
        return None
    value = float(answer)
    return value if math.isfinite(value) else None


def _class_index(domain: Domain, label: object) -> int | None:
    canonical = domain.canonical_label(label) if label is not None else None
    if canonical is None:
        return None
    return POSITIVE if canonical == domain.positive else NEGATIVE


def _gold_value(domain: Domain, gold: object) -> float | None:
    if domain.label_kind == "binary":
        index = _class_index(domain, gold)
        return None if index is None else float(index)
    try:
        return float(int(gold))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def encode(domain: Domain, records: Iterable[Record], stage: Stage) -> Encoded:
    """Encode one domain's records (one mode) as arrays, cases sorted by id."""
    by_case: dict[str, list[Record]] = {}
    for record in records:
        by_case.setdefault(record.case_id, []).append(record)
    case_ids = sorted(by_case)
    k = max((len(v) for v in by_case.values()), default=1)
    n = len(case_ids)
    gold = np.zeros(n)
    pred = np.zeros((n, k))
    abstain = np.zeros((n, k), dtype=bool)
    present = np.zeros(n, dtype=np.intp)
    gold_raw: dict[str, Any] = {}
    stored: list[tuple[int, int, str]] = []
    kept_ids: list[str] = []
    for case_id in case_ids:
        group = sorted(by_case[case_id], key=lambda r: r.sample)
        gold_value = _gold_value(domain, group[0].gold)
        if gold_value is None:
            continue  # an unreadable gold label cannot be scored; counted by the caller
        row = len(kept_ids)
        kept_ids.append(case_id)
        gold[row] = gold_value
        gold_raw[case_id] = group[0].gold
        present[row] = len(group)
        for col, record in enumerate(group):
            attempt = stage_attempt(record, stage)
            value = _answer_value(domain, attempt.answer)
            if value is None or attempt.outcome == "abstain":
                abstain[row, col] = True
            else:
                pred[row, col] = value
            stored.append((row, col, attempt.outcome))
    m = len(kept_ids)
    outcomes = Outcomes(
        kind=domain.label_kind,
        case_ids=tuple(kept_ids),
        gold=gold[:m],
        pred=pred[:m],
        abstain=abstain[:m],
        present=present[:m],
    )
    judged, disagreements = _rejudged(stored, abstain, correct_matrix(outcomes))
    details = _sample_details(by_case, kept_ids, stage, judged)
    return Encoded(outcomes, gold_raw, details, disagreements)


def _answer_value(domain: Domain, answer: object) -> float | None:
    """An answer as the arrays hold it: the number (numeric domains) or the class index
    (binary ones); None when it is neither, which is scored as an abstention."""
    if domain.label_kind == "numeric":
        return _numeric_value(answer)
    index = _class_index(domain, answer)
    return None if index is None else float(index)


def _rejudged(
    stored: list[tuple[int, int, str]], abstain: NDArray[np.bool_], verdict: NDArray[np.bool_]
) -> tuple[dict[tuple[int, int], str], int]:
    """Each stored (row, column, outcome)'s verdict as judged again from the arrays
    (abstain, correct or wrong), and how many of them differ from the stored outcome."""
    disagreements = 0
    judged: dict[tuple[int, int], str] = {}
    for row, col, outcome in stored:
        mine = "abstain" if abstain[row, col] else ("correct" if verdict[row, col] else "wrong")
        judged[(row, col)] = mine
        disagreements += mine != outcome
    return judged, disagreements


def _sample_details(
    by_case: dict[str, list[Record]],
    kept_ids: list[str],
    stage: Stage,
    judged: dict[tuple[int, int], str],
) -> dict[str, list[SampleDetail]]:
    """Per kept case (row order), its samples in sample order as the per-case table
    shows them, with their re-judged outcome."""
    details: dict[str, list[SampleDetail]] = {}
    for row, case_id in enumerate(kept_ids):
        group = sorted(by_case[case_id], key=lambda r: r.sample)
        details[case_id] = [
            SampleDetail(
                sample=r.sample,
                answer=stage_attempt(r, stage).answer,
                outcome=judged[(row, col)],
                reason=stage_attempt(r, stage).abstain_reason,
            )
            for col, r in enumerate(group)
        ]
    return details
