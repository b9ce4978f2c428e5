"""Reading an answer: from a program's stdout, or from a direct-mode response.

Both readers return an ``Answer``: a value (a float for numeric domains, the canonical
class for binary ones) or an abstention with a reason.  An abstention is never guessed
into an answer: absent, unreadable, negated, hedged and conflicting answers all abstain.
docs/scoring.md states these rules for users; keep the two in step.

Numbers (one reader, ``parse_number`` for a whole value and ``_amounts`` for values in
prose, sharing one grammar): an optional sign, an optional ``$``, digits with optional
thousands separators (commas, or spaces in groups of three), an optional decimal part and
exponent, an optional scale (``k``, ``thousand``, ``million``, ``billion``), and an
optional trailing full stop or ``dollars``/``USD``.  A value is read
whole or not at all: ``26 567`` is 26567, never 26, and digits cut apart by a space in a
way no grouping explains make the answer unreadable.

Program stdout (paper B.4): the domain's answer line must appear; the same value printed
twice is one answer, two different values are a conflict.

Direct text, after reasoning blocks (``<think>`` ...) are removed, by precedence:

1. an explicit marker: ``\\boxed{}``, ``Answer:``, ``Final answer:`` or one of the
   domain's ``answer_markers``, or such a marker alone on its line as a heading of the
   next line (the last marked answer that holds a value decides; a calculation is read
   after its last ``=``; a currency amount outranks a bare number, which outranks a year);
2. binary domains: a bare label leading or ending the response ("Yes. The statute ...",
   "No, because ...", a last line "**Contradiction**"); both present and different is a
   conflict;
3. binary domains: a single label mentioned once in prose (only for domains whose
   ``direct_words`` are not everyday words); numeric domains: the last dollar amount,
   else the last number of the last line;
4. otherwise abstain.

Negation and hedging: a label under a negation is never read as that label.  "Not
Entailment" or "is not accepted" (the negation directly governs the label) in a marked
or bare answer is read as the other class, since the task is binary; "Neither ... nor",
a negation further away or after the label, a negated label in prose, and hedges
("probably", "maybe", a question mark) abstain with the reason.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..data.domains import Domain
from ..solver.execution import Execution
from .reasoning import strip_reasoning

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


def _show(value: AnswerValue) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# --- numbers ---------------------------------------------------------------------------

_SPACES = " \u00a0\u202f\u2009"
# The one number grammar.  Integer part: comma groups, space groups (1 to 3 digits, then
# groups of exactly 3), or plain digits.
_AMOUNT = (
    r"(?P<sign>[-+\u2212]\s*)?(?P<cur>\$\s*)?(?P<sign2>[-+\u2212]\s*)?"
    r"(?P<int>\d{1,3}(?:,\d{3})+|\d{1,3}(?:[" + _SPACES + r"]\d{3})+|\d+)"
    r"(?P<frac>\.\d+)?(?P<exp>[eE][-+]?\d+)?"
    r"(?P<scale>\s*(?:thousand|million|billion)\b|k\b)?"
    r"(?P<unit>\s*(?:dollars\b|usd\b))?"
)
_SCALES = {"thousand": 1e3, "k": 1e3, "million": 1e6, "billion": 1e9}
_WHOLE = re.compile(r"\s*(?:usd\s*)?" + _AMOUNT + r"\s*\.?\s*", re.IGNORECASE)
# In prose: not glued to a word, a digit or a separator on either side.
_IN_TEXT = re.compile(
    r"(?<![\w.,$])" + _AMOUNT + r"(?![\w%]|[.,]\d)",
    re.IGNORECASE,
)
_SPLIT_AFTER = re.compile(r"[" + _SPACES + r"]\d")
_SPLIT_BEFORE = re.compile(r"\d[" + _SPACES + r"]$")
_NEGATED_AMOUNT = re.compile(r"\b(?:not|never|isn't|is\s+not|rather\s+than|instead\s+of)\s*$", re.I)


def _to_float(match: re.Match[str]) -> float | None:
    digits = re.sub(r"[," + _SPACES + r"]", "", match.group("int"))
    text = digits + (match.group("frac") or "") + (match.group("exp") or "")
    value = float(text) * _SCALES.get((match.group("scale") or "").strip().lower(), 1.0)
    if (match.group("sign") or match.group("sign2") or "").strip() in ("-", "\u2212"):
        value = -value
    return value if math.isfinite(value) else None


def parse_number(raw: str) -> float | None:
    """Read a whole value: '1,166', '$1166.00', '-12.5', '1.2e3', '26 567', '26567.'.

    None for anything else (the whole text must be one number) or a non-finite value.
    """
    match = _WHOLE.fullmatch(raw)
    return _to_float(match) if match else None


@dataclass(frozen=True)
class _Amount:
    value: float
    currency: bool
    year_like: bool
    split: bool
    """Digits continue across a space in a way no thousands grouping explains."""
    negated: bool


def _amounts(text: str) -> list[_Amount]:
    found: list[_Amount] = []
    for match in _IN_TEXT.finditer(text):
        value = _to_float(match)
        if value is None:
            continue
        bare_int = match.group("int")
        currency = bool(match.group("cur") or match.group("unit"))
        year_like = (
            not currency
            and not match.group("frac")
            and not match.group("exp")
            and not match.group("sign")
            and bare_int.isdigit()
            and len(bare_int) == 4
            and 1900 <= int(bare_int) <= 2100
        )
        # Digits on both sides of a space: "26 5670" is neither 26 nor 5670.  (A sign or
        # a "$" between them, as in "150 + $200", is not a cut.)
        split = bool(
            _SPLIT_AFTER.match(text, match.end())
            or (match.group(0)[0].isdigit() and _SPLIT_BEFORE.search(text[: match.start()]))
        )
        negated = bool(_NEGATED_AMOUNT.search(text[: match.start()]))
        found.append(_Amount(value, currency, year_like, split, negated))
    return found


# An aside in brackets itemises ("$1,366 ($200 for the bag)"); a conclusion word says
# which of several amounts the sentence arrives at ("$200 for the bag, so the total is
# $1,366").
_ASIDE = re.compile(r"\([^()]*\)|\[[^\[\]]*\]")
_CONCLUSION = re.compile(
    r"\b(?:total|so|thus|therefore|hence|overall|altogether|in\s+all|comes\s+to|"
    r"amounts\s+to|in\s+sum|sum\s+of|net)\b",
    re.IGNORECASE,
)


def _concluded_part(candidate: str) -> tuple[str, bool]:
    """The part of a marked answer that states its conclusion, and whether the amount is
    the last of that part (True) or the first (False).

    After the last "=" of a calculation; otherwise, with asides in brackets set apart,
    the text after the last conclusion word when an amount follows it, or the text
    before it when the amount precedes it ("$1,366 total"); otherwise the whole."""
    if "=" in candidate and _amounts(candidate.rsplit("=", 1)[1]):
        return candidate.rsplit("=", 1)[1], False
    plain = _ASIDE.sub(" ", candidate)
    if not _amounts(plain):
        plain = candidate
    cues = list(_CONCLUSION.finditer(plain))
    if cues and len(_amounts(plain)) > 1:
        after, before = plain[cues[-1].end() :], plain[: cues[-1].start()]
        if _amounts(after):
            return after, False
        if _amounts(before):
            return before, True
    return plain, False


def _number_in(candidate: str) -> Answer | None:
    """The amount a marked answer states (see ``_concluded_part`` for which part states
    it): a currency amount outranks a bare number, and a bare number outranks a year.
    None when there is none; an abstention when the only amounts are negated ("not
    $500") or a number is cut apart by a space."""
    candidate, last = _concluded_part(candidate)
    amounts = _amounts(candidate)
    if any(a.split for a in amounts):
        return Answer.abstain(f"a number cut apart by a space in {candidate.strip()!r}")
    if amounts and all(a.negated for a in amounts):
        return Answer.abstain(f"the marked answer only negates an amount: {candidate.strip()!r}")
    amounts = [a for a in amounts if not a.negated]
    if not amounts:
        return None
    ordered = list(reversed(amounts)) if last else amounts
    best = min(ordered, key=lambda a: 0 if a.currency else 2 if a.year_like else 1)
    return Answer(value=best.value)


# --- direct-mode text -----------------------------------------------------------------

_BOXED = re.compile(r"\\boxed\{\s*(?:\\text(?:bf)?\{)?([^{}]*?)\}?\s*\}")
_GENERIC_MARKERS = ("final answer", "answer")


def _marker_pattern(domain: Domain) -> str:
    words = sorted({*_GENERIC_MARKERS, *domain.answer_markers}, key=len, reverse=True)
    alternatives = "|".join(r"\s+".join(map(re.escape, w.split())) for w in words)
    # "**Final Answer**:", "Answer is:", "answer =".
    return r"\b(?:" + alternatives + r")\s*\**\s*(?:is\s*)?[:=]"


def _marked_answers(domain: Domain, text: str) -> list[str]:
    """Boxed and marker-introduced answers, in the order they appear in the text.  A
    marked answer runs to the end of its line, or to the next marker on the same line."""
    marker = _marker_pattern(domain)
    marked = re.compile(
        marker + r"[ \t*]*([^\n]+?)(?=" + marker + r"|\\boxed|$)", re.IGNORECASE | re.MULTILINE
    )
    found = [(m.start(), m.group(1)) for m in _BOXED.finditer(text)]
    found += [(m.start(), m.group(1)) for m in marked.finditer(text)]
    # A marker alone on its line, as a heading ("## Final Answer", "**Answer:**"),
    # marks the next non-empty line.
    heading = re.compile(
        r"^[ \t#>*_]*" + marker.removesuffix("[:=]") + r"[:=]?[ \t*_]*\n\s*([^\n]+)",
        re.IGNORECASE | re.MULTILINE,
    )
    found += [(m.start(), m.group(1)) for m in heading.finditer(text)]
    return [candidate for _, candidate in sorted(found)]


def read_direct_answer(domain: Domain, text: str) -> Answer:
    """Read the final answer from a direct-mode response."""
    if not text or not text.strip():
        return Answer.abstain("empty response")
    visible = strip_reasoning(text)
    if not visible.strip():
        return Answer.abstain("the response holds only reasoning, no answer after it")
    if domain.label_kind == "numeric":
        return _direct_number(domain, visible)
    return _direct_class(domain, visible)


def _direct_number(domain: Domain, text: str) -> Answer:
    for candidate in reversed(_marked_answers(domain, text)):
        answer = _number_in(candidate)
        if answer is not None:
            return answer
    amounts = _amounts(text)
    dollars = [a for a in amounts if a.currency and not a.negated]
    if dollars:
        last = dollars[-1]
        if last.split:
            return Answer.abstain("a number cut apart by a space")
        return Answer(value=last.value)
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    last_line = _amounts(lines[-1]) if lines else []
    if last_line:
        if last_line[-1].split:
            return Answer.abstain("a number cut apart by a space")
        return Answer(value=last_line[-1].value)
    return Answer.abstain("no number found in the response")


# Words around a label that change what it says.  These are English, not domain facts:
# which words are labels comes from the domain spec, and a label word is never taken for
# a negation (housing's "no" is an answer).
_NEGATORS = frozenset(
    ["not", "no", "never", "neither", "nor", "without", "cannot", "non", "rather", "instead"]
)
_HEDGES = frozenset(
    [
        "maybe",
        "perhaps",
        "possibly",
        "probably",
        "likely",
        "unlikely",
        "presumably",
        "arguably",
        "apparently",
        "seemingly",
        "unclear",
        "uncertain",
        "unsure",
        "unknown",
        "undetermined",
        "indeterminate",
        "might",
        "may",
        "could",
        "whether",
        "depends",
        "either",
        "guess",
        "if",
        "unless",
    ]
)
# Hedges that qualify a whole answer wherever they stand in it ("Answer: Yes
# (probably)"); the weaker ones above ("may", "could") only in the label's own clause,
# since an explanation after the label uses them about other things.
_STRONG_HEDGES = frozenset(
    [
        "maybe",
        "perhaps",
        "possibly",
        "probably",
        "likely",
        "unlikely",
        "presumably",
        "arguably",
        "unclear",
        "uncertain",
        "unsure",
        "undetermined",
        "indeterminate",
    ]
)
_HEDGE_PHRASES = re.compile(
    r"\b(?:not\s+(?:sure|certain|clear)|hard\s+to\s+(?:say|tell)|"
    r"(?:cannot|can't|can\s+not)\s+(?:tell|say|determine|decide|be\s+sure)|"
    r"in\s+part|partly|partially)\b",
    re.IGNORECASE,
)
_AFTER_NEGATION = frozenset(["wrong", "incorrect", "false", "excluded", "ruled"])
# Words that may stand between a negation and the label it governs ("is not an
# Entailment", "cannot be accepted", "rather than"): the negation still governs it.
_FILLERS = frozenset(
    [
        "a",
        "an",
        "the",
        "be",
        "is",
        "are",
        "was",
        "were",
        "been",
        "being",
        "it",
        "this",
        "that",
        "of",
        "considered",
        "really",
        "actually",
        "than",
        "instead",
        "to",
        "answer",
        "result",
        "decision",
        "outcome",
        "label",
        "final",
        "one",
    ]
)
_BOUNDARY = re.compile(
    r"[.;,!?:\n()\[\]]|\s[\u2014\u2013-]\s|\u2014|\b(?:because|since|but|although|though|"
    r"however|given|while|whereas|so|as)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_MARKUP = re.compile(r"[*_#>`]+")


@dataclass(frozen=True)
class _Reading:
    label: str | None = None
    problem: str | None = None


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def _is_negator(word: str, domain: Domain) -> bool:
    if word in domain.label_words:
        return False
    return word in _NEGATORS or word.endswith("n't")


def _clauses(text: str) -> list[tuple[str, str]]:
    """The clauses of a text, each with the boundary character that ends it."""
    out: list[tuple[str, str]] = []
    pos = 0
    for match in _BOUNDARY.finditer(text):
        out.append((text[pos : match.start()], match.group(0)))
        pos = match.end()
    out.append((text[pos:], ""))
    return out


# Words that may follow a label that stands as the answer ("yes is right", "no it
# does not", "yes and no"); any other word makes housing's "no" a determiner.
_STANDS_BEFORE = frozenset(["and", "or", "nor", "but", "not", "is", "it", "this", "that"])


def _determiner_use(domain: Domain, words: list[str], index: int) -> bool:
    """Whether an everyday-word label (housing's yes/no: a domain without
    ``direct_words``) is used as an ordinary word here: followed, in its clause, by a word
    it qualifies ("no answer", "no rule applies") rather than standing as the answer."""
    if domain.direct_words or index + 1 >= len(words):
        return False
    following = words[index + 1]
    return following not in _STANDS_BEFORE and following not in domain.label_words


def _read_clause(domain: Domain, clause: str, end: str, *, prose: bool) -> _Reading | None:
    """What one clause says about the label, or None when it names no label.

    ``prose`` is for a label mentioned in running text, where a negation never yields
    the complement (the wording is about something, not necessarily the answer)."""
    words = _words(clause)
    positions = [
        i
        for i, w in enumerate(words)
        if w in domain.label_words and not _determiner_use(domain, words, i)
    ]
    if not positions:
        return None
    if end == "?" or any(w in _HEDGES for w in words):
        return _Reading(problem=f"hedged answer {clause.strip()!r}")
    if "neither" in words:
        return _Reading(problem=f"neither label is asserted in {clause.strip()!r}")
    after = words[positions[-1] + 1 :]
    if any(_is_negator(w, domain) or w in _AFTER_NEGATION for w in after):
        return _Reading(problem=f"the label is negated after it in {clause.strip()!r}")
    labels: set[str] = set()
    previous = 0
    for position in positions:
        label = domain.canonical_label(words[position])
        assert label is not None
        before = words[previous:position]
        negations = [i for i, w in enumerate(before) if _is_negator(w, domain)]
        previous = position + 1
        if not negations:
            labels.add(label)
            continue
        if len(negations) > 1:  # "not not Entailment", "not no": never guessed
            return _Reading(problem=f"more than one negation in {clause.strip()!r}")
        between = before[negations[-1] + 1 :]
        direct = all(w in _FILLERS or _is_negator(w, domain) for w in between)
        if prose or not direct:
            return _Reading(problem=f"negated label in {clause.strip()!r}")
        labels.add(domain.other_class(label))
    if len(labels) > 1:
        return _Reading(problem=f"both labels in {clause.strip()!r}")
    return _Reading(label=labels.pop())


def _first_reading(domain: Domain, text: str) -> _Reading | None:
    """The reading of the first clause of a marked answer that names a label."""
    text = _MARKUP.sub("", text)
    for clause, end in _clauses(text):
        reading = _read_clause(domain, clause, end, prose=False)
        if reading is not None:
            return _hedged_around(reading, text)
    return None


def _hedged_around(reading: _Reading, text: str) -> _Reading:
    """A reading whose surrounding answer is qualified by a strong hedge is hedged."""
    if reading.label is not None and (
        any(w in _STRONG_HEDGES for w in _words(text)) or _HEDGE_PHRASES.search(text)
    ):
        return _Reading(problem=f"hedged answer {text.strip()!r}")
    return reading


def _bare(domain: Domain, clause: str) -> bool:
    """A clause that is a label and nothing else but negations and fillers."""
    words = _words(clause)
    labels = [w for w in words if w in domain.label_words]
    rest = [w for w in words if w not in domain.label_words]
    return len(labels) == 1 and all(_is_negator(w, domain) or w in _FILLERS for w in rest)


def _bare_label(domain: Domain, text: str, *, leading: bool) -> _Reading | None:
    lines = [_MARKUP.sub("", ln).strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        return None
    clauses = [(c, e) for c, e in _clauses(lines[0] if leading else lines[-1]) if c.strip()]
    if not clauses:
        return None
    clause, end = clauses[0] if leading else clauses[-1]
    if not _bare(domain, clause):
        return None
    reading = _read_clause(domain, clause, end, prose=False)
    if reading is None:
        return None
    # The sentence the bare label stands in ("Yes, probably.") may hedge it.
    line = lines[0] if leading else lines[-1]
    sentences = [p for p in _SENTENCE_END.split(line) if p.strip()]
    return _hedged_around(reading, sentences[0] if leading else sentences[-1])


def _direct_class(domain: Domain, text: str) -> Answer:
    # 1. Explicit markers: the last marked answer that names a label decides.
    for candidate in reversed(_marked_answers(domain, text)):
        reading = _first_reading(domain, candidate)
        if reading is not None:
            return _answer(reading)
    # 2. A bare label leading or ending the response.
    bare = [
        r
        for r in (_bare_label(domain, text, leading=True), _bare_label(domain, text, leading=False))
        if r is not None
    ]
    if bare:
        problems = [r.problem for r in bare if r.problem]
        if problems:
            return Answer.abstain(problems[0])
        labels = {r.label for r in bare}
        if len(labels) > 1:
            return Answer.abstain("the response starts with one label and ends with the other")
        return Answer(value=bare[0].label)
    # 3. A single label mentioned once in prose, for domains whose labels are not everyday
    #    words.
    if domain.direct_words:
        words = set(domain.direct_words)
        mentions = [
            (clause, end)
            for clause, end in _clauses(_MARKUP.sub("", text))
            for w in _words(clause)
            if w in words
        ]
        if len(mentions) == 1:
            reading = _read_clause(domain, *mentions[0], prose=True)
            assert reading is not None
            return _answer(reading)
        if len(mentions) > 1:
            return Answer.abstain(
                f"{len(mentions)} label mentions and no marked answer; mark the answer "
                "with 'Answer:'"
            )
    return Answer.abstain(f"no answer among {', '.join(domain.classes)} found in the response")


def _answer(reading: _Reading) -> Answer:
    if reading.problem is not None:
        return Answer.abstain(reading.problem)
    return Answer(value=reading.label)


def answer_from_execution(domain: Domain, execution: Execution) -> Answer:
    """The answer a program run gives: none when it was stopped by force, else its stdout's.

    The one reading of an execution: the runner, ``validate`` and ``exec`` all use it,
    so "the reference backend agrees with validate" holds by construction.  An
    abstention of a program that did not end ``ok`` names its status first.
    """
    if execution.killed:
        # Output of a program stopped by force is not an answer, even if it has one.
        limit = f" ({execution.limit})" if execution.limit else ""
        return Answer.abstain(f"program stopped: {execution.status}{limit}")
    answer = read_program_answer(domain, execution.stdout)
    if answer.abstained and execution.status != "ok":
        return Answer.abstain(f"program {execution.status}: {answer.reason}")
    return answer
