"""DAR's scorer (``evaluate_deonticbench.py`` of ``guangyaodou/harbor-deonticbench``),
restated: what it reads of a trial and how it scores a dataset's trials.

It reads only the ``Normalized expected:`` and ``Normalized got:`` lines DAR's verifier
prints (``reading.dar_verifier`` restates the verifier), the trial's Harbor exception and whether
there was any verifier output.  Then:

* by default a trial is correct when the two strings are equal, so a trial whose
  verifier printed nothing (no answer: ``("", "")``) is **correct**, and for macro-F1
  the classes are the expected values seen, so ``""`` becomes a class of its own;
* with ``--errors-as-incorrect``, a trial with an exception, no verifier output or an
  empty answer is never correct, and for macro-F1 such a trial is ``(expected,
  "__ERROR__")`` when it has an expected label and dropped when it has none.

Standard library only.  Every reader of DAR's figures scores with these rules: a run's
readings per domain x mode (``dar_readings``: ``score``, results.json, the report) and
DAR's two scorers over a Harbor jobs folder (``integrations.harbor.dar_jobs``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

EXPECTED_LINE = re.compile(r"Normalized expected:\s*(.+)")
GOT_LINE = re.compile(r"Normalized got:\s*(.*)")
ERROR_CLASS = "__ERROR__"


def read_verifier_output(text: str) -> tuple[str, str]:
    """The (expected, got) pair their scorer reads from a verifier's stdout: the last
    ``Normalized expected:`` and ``Normalized got:`` lines, empty when absent."""
    expected = got = ""
    for line in text.splitlines():
        match = EXPECTED_LINE.match(line)
        if match:
            expected = match.group(1).strip()
        match = GOT_LINE.match(line)
        if match:
            got = match.group(1).strip()
    return expected, got


@dataclass(frozen=True)
class DarTrial:
    """One trial as DAR's scorer sees it."""

    expected: str
    got: str
    exception: str | None = None
    """Harbor's exception type for the trial, if any."""
    missing_stdout: bool = False
    """The trial has no ``verifier/test-stdout.txt``."""

    @property
    def parse_failure(self) -> bool:
        return self.got == "" and not self.exception

    @property
    def is_error(self) -> bool:
        return bool(self.exception or self.parse_failure or self.missing_stdout)


@dataclass(frozen=True)
class DarScore:
    n: int
    correct: int
    accuracy: float
    macro_f1: float
    classes: tuple[str, ...]
    errors: int


@dataclass(frozen=True)
class ClassScore:
    """One class's precision, recall and F1 as DAR's scorer prints them."""

    precision: float
    recall: float
    f1: float


def class_scores(pairs: Sequence[tuple[str, str]]) -> dict[str, ClassScore]:
    """Per class (the expected values seen, sorted), DAR's precision, recall and F1."""
    scores = {}
    for cls in sorted({expected for expected, _ in pairs}):
        tp = sum(1 for e, g in pairs if e == cls and g == cls)
        fp = sum(1 for e, g in pairs if e != cls and g == cls)
        fn = sum(1 for e, g in pairs if e == cls and g != cls)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        total = precision + recall
        scores[cls] = ClassScore(
            precision, recall, 2 * precision * recall / total if total else 0.0
        )
    return scores


def _macro_f1(pairs: Sequence[tuple[str, str]]) -> tuple[float, tuple[str, ...]]:
    per_class = class_scores(pairs)
    if not per_class:
        return 0.0, ()
    return sum(s.f1 for s in per_class.values()) / len(per_class), tuple(per_class)


def scored_pairs(
    trials: Sequence[DarTrial], errors_as_incorrect: bool = False
) -> list[tuple[str, str]]:
    """The (expected, got) pairs DAR's macro-F1 is taken over: every trial by default;
    with ``--errors-as-incorrect`` an errored trial's answer is ``__ERROR__``, and an
    errored trial without an expected label is left out."""
    if not errors_as_incorrect:
        return [(t.expected, t.got) for t in trials]
    return [
        (t.expected, ERROR_CLASS if t.is_error else t.got)
        for t in trials
        if not (t.is_error and not t.expected)
    ]


def correct_count(trials: Sequence[DarTrial], errors_as_incorrect: bool = False) -> int:
    """Exact matches; with ``--errors-as-incorrect`` an errored trial never counts."""
    return sum(
        1 for t in trials if t.expected == t.got and not (errors_as_incorrect and t.is_error)
    )


def dar_score(trials: Sequence[DarTrial], errors_as_incorrect: bool = False) -> DarScore:
    """DAR's scorer on one dataset's trials: accuracy and macro-F1, both behaviours."""
    correct = correct_count(trials, errors_as_incorrect)
    pairs = scored_pairs(trials, errors_as_incorrect)
    f1, classes = _macro_f1(pairs)
    n = len(trials)
    return DarScore(
        n=n,
        correct=correct,
        accuracy=correct / n if n else 0.0,
        macro_f1=f1,
        classes=classes,
        errors=sum(1 for t in trials if t.is_error),
    )


__all__ = [
    "ERROR_CLASS",
    "ClassScore",
    "DarScore",
    "DarTrial",
    "class_scores",
    "correct_count",
    "dar_score",
    "read_verifier_output",
    "scored_pairs",
]
