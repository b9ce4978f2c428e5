"""What a response says about its own confidence: the verbal ``Confidence: NN%`` line
and the probability of the answer's tokens.

The ``direct-verbal`` mode's template asks for a last line ``Confidence: NN%``; the
line is read here and removed before the answer is read, so a percentage is never taken
for the answer.  Token log-probabilities (``eval --confidence logprob``) are stored with
the attempt as ``[token, logprob]`` pairs; the answer's probability is the product of
the probabilities of the tokens that spell the value on the answer line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from .reasoning import strip_reasoning

_CONFIDENCE = re.compile(
    r"^[ \t>*_#-]*confidence[*_]*\s*[:=]\s*[*_]*\s*(\d{1,3}(?:\.\d+)?)\s*%[*_ \t.]*$",
    re.IGNORECASE | re.MULTILINE,
)


def read_verbal_confidence(text: str | None) -> float | None:
    """The stated confidence in [0, 1] from the last ``Confidence: NN%`` line outside
    reasoning blocks, or None when there is none (a value above 100% is clipped)."""
    if not text:
        return None
    found = _CONFIDENCE.findall(strip_reasoning(text))
    if not found:
        return None
    return min(1.0, float(found[-1]) / 100.0)


def without_confidence(text: str) -> str:
    """The response with its ``Confidence: NN%`` lines removed (what the answer reader
    sees in the direct-verbal mode)."""
    return _CONFIDENCE.sub("", text)


def answer_probability(logprobs: Sequence[Sequence[object]] | None) -> float | None:
    """The probability of the tokens that spell the answer's value.

    The answer line is the last non-empty line that is not a confidence line; its value
    is what follows the line's first colon (the whole line when it has none).  Every
    token that overlaps the value's characters counts.  None when there are no
    log-probabilities or no answer line.
    """
    if not logprobs:
        return None
    tokens = [(str(t[0]), float(t[1])) for t in logprobs]  # type: ignore[arg-type]
    text = "".join(t for t, _ in tokens)
    span = _value_span(text)
    if span is None:
        return None
    lo, hi = span
    total, at = 0.0, 0
    for token, logprob in tokens:
        end = at + len(token)
        if end > lo and at < hi and math.isfinite(logprob):
            total += logprob
        at = end
    return math.exp(total)


def _value_span(text: str) -> tuple[int, int] | None:
    offset = len(text)
    for line in reversed(text.splitlines(keepends=True)):
        offset -= len(line)
        body = line.strip()
        if not body or _CONFIDENCE.fullmatch(line.rstrip("\r\n")):
            continue
        colon = line.find(":")
        lo = colon + 1 if colon >= 0 else 0
        value = line[lo:].strip()
        if not value:
            return None
        start = offset + line.index(value, lo)
        return start, start + len(value)
    return None
