"""The feedback-retry rule, in one place: which judged attempts call for another.

An attempt is retried when its request failed (an error, or no text), or when a mode that
writes a program got no answer from it (no program, a syntax or runtime error that
stopped it, a timeout or other limit, no or conflicting answer lines).  A direct answer is
never retried, nor is a program that printed one answer, right or wrong: retrying it
could only be prompted by the answer's correctness, which the loop must never look at.
The runner (``evaluation.runner.evaluate_attempt``) follows it when it runs a sample,
and re-reading a stored run (``scoring.rereading``) follows it to find the attempts a
different reader would have made.
"""

from __future__ import annotations

from ..vocabulary.modes import DIRECT_MODES


def calls_for_retry(mode: str, *, failed: bool, answered: bool) -> bool:
    """Whether an attempt in ``mode`` calls for another: ``failed``, its request failed;
    ``answered``, it gave an answer (the gold label plays no part)."""
    if failed:
        return True
    return mode not in DIRECT_MODES and not answered
