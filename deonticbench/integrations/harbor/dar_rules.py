"""DAR's judging and scoring (``guangyaodou/harbor-deonticbench``), offered to Harbor
users in one place, so that a run can be scored their way beside the paper's
(``deonticbench score --dar-rules``).

Their verifier compares strings: the expected label (a whole number, or a class name)
against the answer text with all whitespace removed; for a numeric label the answer is
cut at its first ``.`` (truncation, no tolerance: ``1166.9`` is ``1166``, ``$1,166`` is
not ``1166``), otherwise both are lower-cased.  It prints ``Normalized expected:`` and
``Normalized got:`` lines, which is all their scorer reads.  Their scorer counts a trial
with no answer (``("", "")``) as correct by default and as wrong with
``--errors-as-incorrect``.

The verifier's string rules live in ``reading.dar_verifier`` (``normalise``, ``squeeze``), the
scorer's in ``scoring.dar_scorer``; this module names both.
"""

from __future__ import annotations

from ...reading import dar_verifier
from ...scoring import dar_scorer

normalise = dar_verifier.normalise
squeeze = dar_verifier.squeeze

EXPECTED_LINE = dar_scorer.EXPECTED_LINE
GOT_LINE = dar_scorer.GOT_LINE
ERROR_CLASS = dar_scorer.ERROR_CLASS
ClassScore = dar_scorer.ClassScore
DarScore = dar_scorer.DarScore
DarTrial = dar_scorer.DarTrial
class_scores = dar_scorer.class_scores
correct_count = dar_scorer.correct_count
dar_score = dar_scorer.dar_score
read_verifier_output = dar_scorer.read_verifier_output
scored_pairs = dar_scorer.scored_pairs

__all__ = [
    "ClassScore",
    "DarScore",
    "DarTrial",
    "class_scores",
    "correct_count",
    "dar_score",
    "normalise",
    "read_verifier_output",
    "scored_pairs",
    "squeeze",
]
