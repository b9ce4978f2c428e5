"""Judging one answer against the gold label (paper B.3).

Numeric domains: correct iff ``|round(y) - int(gold)| <= 1``.  ``round`` is Python's
(round half to even), the rounding the paper's formula is evaluated with upstream;
numpy's ``np.round`` agrees, so the vectorised scorer in ``metrics`` gives the same
verdicts.  Binary domains: correct iff the class matches.  An abstention is never correct.
"""

from __future__ import annotations

from typing import Literal

from ..data.cases import Gold
from ..data.domains import NUMERIC_TOLERANCE, Domain
from .answers import Answer

Outcome = Literal["correct", "wrong", "abstain"]
OUTCOMES: tuple[Outcome, ...] = ("correct", "wrong", "abstain")


def within_tolerance(value: float, gold: int) -> bool:
    """The paper's $1 tolerance: ``|round(value) - int(gold)| <= 1``."""
    return abs(round(value) - int(gold)) <= NUMERIC_TOLERANCE


def judge_answer(domain: Domain, answer: Answer, gold: Gold) -> Outcome:
    """correct, wrong or abstain: ``answer`` against the gold label by the rule above."""
    if answer.value is None:
        return "abstain"
    if domain.label_kind == "numeric":
        if isinstance(answer.value, str):
            return "abstain"
        return "correct" if within_tolerance(answer.value, int(gold)) else "wrong"
    return "correct" if answer.value == gold else "wrong"
