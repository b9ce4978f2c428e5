"""Confidence signals: one number in [0, 1] per sample, from what a run already holds.

Each signal is an (N, K) matrix laid out like the scoring stage's ``Outcomes`` of the
same domain x mode x stage (cases sorted by id, samples packed by index), so the
correctness matrix and every signal line up cell by cell.  A signal that cannot be
computed for a group is its reason instead (shown as n/a).  docs/reliability.md says
what each signal can and cannot tell.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..analysis.run import ANALYSIS_FILE, read_analysis
from ..data.domains import DISPLAY_ORDER, DOMAINS, NUMERIC_TOLERANCE
from ..errors import ConfigError
from ..reading.confidence import answer_probability, read_verbal_confidence
from ..scoring.encoding import STAGES, Stage, encode, stage_attempt
from ..scoring.metrics import Outcomes, correct_matrix
from ..store.record import Attempt, Record
from ..store.run import Run
from ..vocabulary.modes import ALL_MODES, DIRECT_MODES, VERBAL_MODE
from ._combined import combined_signal
from ._group import BASE_SIGNALS, OPT_IN_SIGNALS, SIGNALS, GroupSignals, Matrix

EXECUTION_PENALTY = 0.25
"""What each blemish of a program's run takes off the execution score (see
``execution_score``)."""
DERIVATION_SCORES: Mapping[str, float] = {
    "grounded": 1.0,
    "ungrounded": 0.5,
    "hard_coded": 0.25,
    "no_proof": 0.0,
}
"""The derivation axis of ``analyze`` as a score: a proof from the case's facts is worth
most, an answer written into the program or without a proof least."""

__all__ = [
    "BASE_SIGNALS",
    "OPT_IN_SIGNALS",
    "SIGNALS",
    "GroupSignals",
    "Matrix",
    "agree",
    "check_signal",
    "consistency",
    "cross_mode",
    "execution_score",
    "run_signals",
]
"""The shared names of ``_group`` are re-exported: this is where callers find them."""


def check_signal(signal: str) -> None:
    """``--signal``, checked before any scoring: a misspelt signal would otherwise leave
    every group without a cost table, silently."""
    if signal not in SIGNALS:
        raise ConfigError(f"--signal takes one of {', '.join(SIGNALS)}, not {signal!r}.")


def _records_by_cell(records: Sequence[Record], case_ids: Sequence[str]) -> list[list[Record]]:
    by_case: dict[str, list[Record]] = {}
    for record in records:
        by_case.setdefault(record.case_id, []).append(record)
    return [sorted(by_case[c], key=lambda r: r.sample) for c in case_ids]


def agree(
    o: Outcomes, a: Matrix, a_abstain: NDArray[np.bool_], b: Matrix, b_abstain: NDArray[np.bool_]
) -> NDArray[np.bool_]:
    """Two answers agree: numbers within the paper's $1 after rounding, labels equal;
    an abstention agrees with nothing."""
    if o.kind == "numeric":
        return np.asarray(
            (np.abs(np.round(a) - np.round(b)) <= NUMERIC_TOLERANCE) & ~a_abstain & ~b_abstain
        )
    return np.asarray((a == b) & ~a_abstain & ~b_abstain)


def consistency(o: Outcomes) -> Matrix:
    """The share of the case's samples (this mode) whose answer equals this sample's,
    itself included; 0 for an abstention."""
    valid = o.valid
    same = agree(
        o, o.pred[:, :, None], o.abstain[:, :, None], o.pred[:, None, :], o.abstain[:, None, :]
    )
    same &= valid[:, :, None] & valid[:, None, :]
    return np.asarray(same.sum(axis=2) / o.present[:, None], dtype=np.float64)


def cross_mode(o: Outcomes, others: Sequence[Outcomes]) -> Matrix:
    """The share of the same case's samples in the run's other modes that agree with
    this sample's answer (0 for an abstention, or a case no other mode holds)."""
    hits = np.zeros(o.pred.shape)
    total = np.zeros(o.n_cases)
    for other in others:
        where = {c: i for i, c in enumerate(other.case_ids)}
        rows = np.array([where.get(c, -1) for c in o.case_ids], dtype=np.intp)
        held = rows >= 0
        if not held.any():
            continue
        r = rows[held]
        same = agree(
            o,
            o.pred[held][:, :, None],
            o.abstain[held][:, :, None],
            other.pred[r][:, None, :],
            other.abstain[r][:, None, :],
        )
        same &= other.valid[r][:, None, :]
        hits[held] += same.sum(axis=2)
        total[held] += other.present[r]
    share = np.divide(hits, total[:, None], out=np.zeros_like(hits), where=total[:, None] > 0)
    return np.asarray(share * o.valid, dtype=np.float64)


def execution_score(attempt: Attempt) -> float:
    """1 for a program that ran and answered at its first attempt, without entrypoint
    repair and without SWI-Prolog warnings or errors; ``EXECUTION_PENALTY`` less for each
    of: repaired, warned or did not exit cleanly, needed a retry; 0 when it gave no
    answer."""
    if attempt.outcome == "abstain" or attempt.answer is None:
        return 0.0
    score = 1.0
    if attempt.repaired:
        score -= EXECUTION_PENALTY
    run = attempt.execution or {}
    if int(run.get("warnings") or 0) > 0 or run.get("status") != "ok":
        score -= EXECUTION_PENALTY
    if attempt.index > 0:
        score -= EXECUTION_PENALTY
    return score


def _per_cell(
    cells: list[list[Record]], shape: tuple[int, ...], stage: Stage, value: Any
) -> Matrix:
    out = np.zeros(shape)
    for i, group in enumerate(cells):
        for j, record in enumerate(group):
            out[i, j] = value(record, stage_attempt(record, stage))
    return out


def _analysis_index(path: Path) -> dict[tuple[str, str, str, int, str], str] | None:
    if not (path / ANALYSIS_FILE).is_file():
        return None
    return {
        (r["domain"], r["case_id"], r["mode"], int(r["sample"]), r["stage"]): r["derivation"]
        for r in read_analysis(path)
    }


def run_signals(run: Run, *, combined: bool = True) -> list[GroupSignals]:
    """Every signal of every domain x mode x stage of a run."""
    run.records.load()  # each domain x mode below passes over the records again
    stages: tuple[Stage, ...] = STAGES if run.has_retries else ("first",)
    derivations = _analysis_index(run.path)
    out: list[GroupSignals] = []
    for domain in (DOMAINS[name] for name in DISPLAY_ORDER):
        by_mode = {
            mode: [r for r in run.records if r.domain == domain.name and r.mode == mode]
            for mode in ALL_MODES
        }
        by_mode = {m: rs for m, rs in by_mode.items() if rs}
        for stage in stages:
            encoded = {m: encode(domain, rs, stage).outcomes for m, rs in by_mode.items()}
            for mode, records in by_mode.items():
                o = encoded[mode]
                if o.n_cases == 0:
                    continue
                cells = _records_by_cell(records, o.case_ids)
                g = GroupSignals(
                    run.name, run.model, domain.name, mode, stage, o, correct_matrix(o)
                )
                g.signals["consistency"] = consistency(o)
                # The verbal variant is the direct prompt plus a line: not another way
                # of solving the case, so it is neither compared with nor compared to.
                others = [
                    e for m, e in encoded.items() if m != mode and VERBAL_MODE not in (m, mode)
                ]
                g.signals["cross_mode"] = (
                    cross_mode(o, others) if others else "the run has no other mode to compare"
                )
                if mode in DIRECT_MODES:
                    g.signals["execution"] = "a direct answer runs no program"
                    g.signals["derivation"] = "a direct answer has no program to analyse"
                else:
                    g.signals["execution"] = _per_cell(
                        cells, o.pred.shape, stage, lambda _r, a: execution_score(a)
                    )
                    g.signals["derivation"] = _derivation(g, cells, derivations, stage)
                g.signals["verbal"] = _verbal(g, cells, stage)
                g.signals["logprob"] = _logprob(g, cells, stage)
                if combined:
                    g.signals["combined"] = combined_signal(g)
                out.append(g)
    return out


def _derivation(
    g: GroupSignals,
    cells: list[list[Record]],
    index: dict[tuple[str, str, str, int, str], str] | None,
    stage: Stage,
) -> Matrix | str:
    if index is None:
        return "no analysis.jsonl: run `deonticbench analyze` on the run first"
    missing = 0

    def value(record: Record, _attempt: Attempt) -> float:
        nonlocal missing
        found = index.get((record.domain, record.case_id, record.mode, record.sample, stage))
        if found is None:
            missing += 1
            return 0.0
        return DERIVATION_SCORES.get(found, 0.0)

    matrix = _per_cell(cells, g.outcomes.pred.shape, stage, value)
    if missing:
        g.notes.append(f"derivation: {missing} sample(s) not in analysis.jsonl scored 0")
    return matrix


def _verbal(g: GroupSignals, cells: list[list[Record]], stage: Stage) -> Matrix | str:
    if g.mode != VERBAL_MODE:
        return f"only the {VERBAL_MODE} mode asks for a confidence (eval --confidence verbal)"
    missing = 0

    def value(_record: Record, attempt: Attempt) -> float:
        nonlocal missing
        stated = read_verbal_confidence(attempt.response)
        if stated is None:
            missing += 1
            return 0.0
        return stated

    matrix = _per_cell(cells, g.outcomes.pred.shape, stage, value)
    if missing:
        g.notes.append(f"verbal: {missing} sample(s) stated no confidence and count as 0")
    return matrix


def _logprob(g: GroupSignals, cells: list[list[Record]], stage: Stage) -> Matrix | str:
    if g.mode not in DIRECT_MODES:
        return "the answer of a program is printed by Prolog, not spelled by the model"
    if not any(getattr(stage_attempt(r, stage), "logprobs", None) for c in cells for r in c):
        return "the run holds no token log-probabilities (eval --confidence logprob)"

    def value(_record: Record, attempt: Attempt) -> float:
        p = answer_probability(getattr(attempt, "logprobs", None))
        return 0.0 if p is None or not math.isfinite(p) else p

    return _per_cell(cells, g.outcomes.pred.shape, stage, value)
