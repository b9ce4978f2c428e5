"""Reading an answer: from a program's stdout, or from a direct-mode response.

Both readers return an ``Answer``: a value (a float for numeric domains, the canonical
class for binary ones) or an abstention with a reason.  An abstention is never guessed
into an answer: absent, unreadable and conflicting answers all abstain.

Program stdout (paper B.4): the domain's answer line must appear; the same value printed
twice is one answer, two different values are a conflict.

Direct text: the *last* stated answer wins over earlier mentions, because models reason
aloud ("at first glance $500 ... so the total is $650").  Marked answers (``\\boxed{}``,
``Answer:``/``Final answer:``) take precedence over unmarked mentions.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .domains import Domain
from .solver.execution import Execution

AnswerValue = float | str


@dataclass(frozen=True)
class Answer:
    value: AnswerValue | None
    reason: str | None = None
    """Why there is no answer (None when there is one)."""

    @property
    def abstained(self) -> bool:
        return self.value is None

    @classmethod
    def abstain(cls, reason: str) -> Answer:
        return cls(value=None, reason=reason)


def read_program_answer(domain: Domain, stdout: str) -> Answer:
    """Find the domain's answer line in a program's stdout."""
    found: list[AnswerValue] = []
    patterns = [re.compile(p, re.IGNORECASE) for p in domain.answer_patterns]
    for line in stdout.splitlines():
        for pattern in patterns:
            match = pattern.match(line)
            if match:
                value = _value_of(domain, match.group(1))
                if value is None:
                    return Answer.abstain(f"unreadable answer line {line.strip()!r}")
                found.append(value)
                break
    if not found:
        if not stdout.strip():
            return Answer.abstain("no output")
        return Answer.abstain(f"no answer line of the form {domain.answer_line!r}")
    distinct = list(dict.fromkeys(found))
    if len(distinct) > 1:
        shown = ", ".join(_show(v) for v in distinct[:4])
        return Answer.abstain(f"conflicting answers: {shown}")
    return Answer(value=distinct[0])


def _value_of(domain: Domain, raw: str) -> AnswerValue | None:
    if domain.label_kind == "numeric":
        return parse_number(raw)
    return domain.canonical_label(raw)


def parse_number(raw: str) -> float | None:
    """Parse '1,166', '$1166.00', '-12.5' or '1.2e3'; None for anything else or non-finite."""
    text = raw.strip().replace(",", "").replace("$", "").replace(" ", "")
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _show(value: AnswerValue) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --- direct-mode text -----------------------------------------------------------------

_BOXED = re.compile(r"\\boxed\{\s*(?:\\text\{)?([^{}]*?)\}?\s*\}")
_MARKER = r"(?:final\s+answer|answer|total\s+cost|tax\s+result|result|decision)\s*(?:is)?\s*[:=]"
# A marked answer runs to the end of its line, or to the next marker on the same line.
_MARKED = re.compile(
    _MARKER + r"\s*\**\s*([^\n]+?)(?=" + _MARKER + r"|\\boxed|$)",
    re.IGNORECASE | re.MULTILINE,
)
_MONEY = re.compile(r"(-?\s*\$\s*-?\d[\d,]*(?:\.\d+)?|-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?)")


def read_direct_answer(domain: Domain, text: str) -> Answer:
    """Read the final answer from a direct-mode response."""
    if not text or not text.strip():
        return Answer.abstain("empty response")
    if domain.label_kind == "numeric":
        return _direct_number(text)
    return _direct_class(domain, text)


def _direct_number(text: str) -> Answer:
    for candidate in reversed(_marked_answers(text)):
        numbers = _MONEY.findall(candidate)
        if numbers:
            value = parse_number(numbers[0])
            if value is not None:
                return Answer(value=value)
    dollars = re.findall(r"-?\s*\$\s*-?\d[\d,]*(?:\.\d+)?", text)
    if dollars:
        value = parse_number(dollars[-1])
        if value is not None:
            return Answer(value=value)
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    numbers = _MONEY.findall(lines[-1]) if lines else []
    if numbers:
        value = parse_number(numbers[-1])
        if value is not None:
            return Answer(value=value)
    return Answer.abstain("no number found in the response")


def _direct_class(domain: Domain, text: str) -> Answer:
    for candidate in reversed(_marked_answers(text)):
        label = _first_class_word(domain, candidate)
        if label is not None:
            return Answer(value=label)
    lines = [ln.strip().strip("*").strip() for ln in text.strip().splitlines() if ln.strip()]
    if lines:
        label = domain.canonical_label(lines[-1].rstrip(".!").strip())
        if label is not None:
            return Answer(value=label)
    if domain.direct_words:
        pattern = re.compile(r"\b(" + "|".join(domain.direct_words) + r")\b", re.IGNORECASE)
        hits = pattern.findall(text)
        if hits:
            label = domain.canonical_label(hits[-1])
            if label is not None:
                return Answer(value=label)
    return Answer.abstain(f"no answer among {', '.join(domain.classes)} found in the response")


def _marked_answers(text: str) -> list[str]:
    """Boxed and ``Answer:``-marked answers, in the order they appear in the text."""
    found = [(m.start(), m.group(1)) for m in _BOXED.finditer(text)]
    found += [(m.start(), m.group(1)) for m in _MARKED.finditer(text)]
    return [candidate for _, candidate in sorted(found)]


def _first_class_word(domain: Domain, candidate: str) -> str | None:
    for word in re.findall(r"[A-Za-z]+", candidate):
        label = domain.canonical_label(word)
        if label is not None:
            return label
    return None


def answer_from_execution(domain: Domain, execution: Execution) -> Answer:
    """The answer a program run gives: none when it was stopped by force, else its stdout's."""
    if execution.killed:
        limit = f" ({execution.limit})" if execution.limit else ""
        return Answer.abstain(f"program stopped: {execution.status}{limit}")
    return read_program_answer(domain, execution.stdout)
