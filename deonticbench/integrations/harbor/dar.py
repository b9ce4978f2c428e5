"""DAR's judging and scoring (``guangyaodou/harbor-deonticbench``), restated so that a
run can be scored their way beside the paper's (``deonticbench score --dar-rules``).

Their verifier compares strings: the expected label (a whole number, or a class name)
against the answer text with all whitespace removed; for a numeric label the answer is
cut at its first ``.`` (truncation, no tolerance: ``1166.9`` is ``1166``, ``$1,166`` is
not ``1166``), otherwise both are lower-cased.  It prints ``Normalized expected:`` and
``Normalized got:`` lines, which is all their scorer reads.  Their scorer then:

* by default counts a trial as correct when the two strings are equal, so a trial whose
  verifier printed nothing (no answer: ``("", "")``) is **correct**, and for macro-F1
  the classes are the expected values seen, so ``""`` becomes a class of its own;
* with ``--errors-as-incorrect``, a trial with an exception, no verifier output or an
  empty answer is never correct, and for macro-F1 such a trial is ``(expected,
  "__ERROR__")`` when it has an expected label and dropped when it has none.

Standard library only: the task verifier ships this module to print the same lines.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...reading import dar as dar_verifier

EXPECTED_LINE = re.compile(r"Normalized expected:\s*(.+)")
GOT_LINE = re.compile(r"Normalized got:\s*(.*)")
ERROR_CLASS = "__ERROR__"

# DAR's verifier rules are reading's (``reading.dar``); offered here under their old names.
normalise = dar_verifier.normalise
squeeze = dar_verifier.squeeze


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


def _macro_f1(pairs: Sequence[tuple[str, str]]) -> tuple[float, tuple[str, ...]]:
    classes = tuple(sorted({expected for expected, _ in pairs}))
    if not classes:
        return 0.0, classes
    scores = []
    for cls in classes:
        tp = sum(1 for e, g in pairs if e == cls and g == cls)
        fp = sum(1 for e, g in pairs if e != cls and g == cls)
        fn = sum(1 for e, g in pairs if e == cls and g != cls)
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        total = precision + recall
        scores.append(2 * precision * recall / total if total else 0.0)
    return sum(scores) / len(scores), classes


def dar_score(trials: Sequence[DarTrial], errors_as_incorrect: bool = False) -> DarScore:
    """DAR's scorer on one dataset's trials: accuracy and macro-F1, both behaviours."""
    if errors_as_incorrect:
        correct = sum(1 for t in trials if not t.is_error and t.expected == t.got)
        pairs = [
            (t.expected, ERROR_CLASS if t.is_error else t.got)
            for t in trials
            if not (t.is_error and not t.expected)
        ]
    else:
        correct = sum(1 for t in trials if t.expected == t.got)
        pairs = [(t.expected, t.got) for t in trials]
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
    "DarScore",
    "DarTrial",
    "dar_score",
    "normalise",
    "read_verifier_output",
    "squeeze",
]


def __getattr__(name: str) -> Any:
    # ``score`` was renamed: ``deonticbench.score`` (the public API) scores run folders.
    if name == "score":
        warnings.warn(
            "deonticbench.integrations.harbor.dar.score is now "
            "deonticbench.integrations.harbor.dar.dar_score.",
            DeprecationWarning,
            stacklevel=2,
        )
        return dar_score
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
