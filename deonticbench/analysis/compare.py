"""Comparing a model's proof with the reference proof by meaning: values and constants,
never predicate names (models never use the reference's names).

Normalisation (docs/analysis.md repeats it):

* **Numbers** are compared as floats.  Two computed values match when they differ by
  at most 0.01 or one part in 10,000 (programs round at different steps; the scorer's
  $1 would be too loose: 2599.5 is not 2600).  A constant occurs in a text only when it
  equals one of the text's numbers to the cent.  A percentage and its fraction match
  (15 and 0.15).
* **Numbers in the case text and statutes** are every decimal numeral, with ``$``,
  thousands separators and ordinal suffixes removed (``$1,166.50`` -> 1166.5,
  ``3rd`` -> 3); ``15%`` also gives 0.15; a month name gives its number (``Sep`` -> 9),
  so dates reduce to year, month and day numbers, as programs write them.
* **Names** (atoms and strings) are lower-cased and split into words at anything but
  letters and digits (``"Alice"``, ``alice`` -> {alice}; ``business_class`` ->
  {business, class}).  Two names match when at least 60% of the words of the first
  (ignoring words under three letters and a few stop words) are words of the second.
  A name occurs in a text when its words do, by the same rule.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

from ..data.cases import Case
from ..data.domains import get_domain
from .proof import Node, ProofMemo, facts, walk

_NUMBER = re.compile(r"(?<![\w.])\$?\s?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?\s?(%|st|nd|rd|th)?")
_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_WORD = re.compile(r"[a-z0-9]+")
_STOP = {"the", "and", "for", "has", "had", "was", "are", "not", "with", "from", "that", "its"}
NAME_OVERLAP = 0.6
RELATIVE = 1e-4
"""Computed values match within a cent or one part in 10,000 (rounding at another step),
not within the scorer's $1, which would let 2599.5 pass for 2600."""
SMALL_INTEGERS = range(0, 13)
"""Integers this small are ordinals, counts and identifiers: never 'hallucinated'."""


def numbers_in_text(text: str) -> list[float]:
    found: list[float] = []
    for match in _NUMBER.finditer(text):
        whole, frac, suffix = match.group(1), match.group(2) or "", match.group(3)
        value = float(whole.replace(",", "") + frac)
        found.append(value)
        if suffix == "%":
            found.append(value / 100)
    for word in _WORD.findall(text.lower()):
        if word in _MONTHS:
            found.append(float(_MONTHS[word]))
    return found


def name_words(value: str) -> frozenset[str]:
    words = _WORD.findall(value.lower())
    significant = [w for w in words if len(w) >= 3 and w not in _STOP and not w.isdigit()]
    return frozenset(significant or words)


def numbers_match(a: float, b: float) -> bool:
    for x, y in ((a, b), (a * 100, b), (a, b * 100)):
        if abs(x - y) <= max(0.01, RELATIVE * max(abs(x), abs(y))):
            return True
    return False


def near_any(x: float, ordered: Sequence[float], exact: bool = False) -> bool:
    """Whether a sorted list holds a number matching ``x`` (same rule as numbers_match;
    ``exact``: within a cent, for constants a program copies from a text)."""
    for y in (x, x * 100, x / 100):
        tolerance = 0.01 if exact else max(0.01, RELATIVE * abs(y) * 1.01)
        i = bisect_left(ordered, y - tolerance)
        while i < len(ordered) and ordered[i] <= y + tolerance:
            if exact or numbers_match(x, ordered[i]):
                return True
            i += 1
    return False


def names_match(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a:
        return False
    return len(a & b) / len(a) >= NAME_OVERLAP


_NUMBERS = (int, float)
"""The types a number of a proof has (a bool is no number)."""


def is_number(value: Any) -> bool:
    return type(value) in _NUMBERS


@dataclass(frozen=True)
class CaseVocabulary:
    """What the case states (its text) and what the law states (its statutes)."""

    case_numbers: tuple[float, ...]
    case_words: frozenset[str]
    statute_numbers: tuple[float, ...]

    @classmethod
    def of(cls, case: Case) -> CaseVocabulary:
        key = (case.domain, case.id, hash(case.text), hash(case.statutes))
        found = _VOCABULARIES.get(key)
        if found is None:
            found = _VOCABULARIES[key] = cls._build(case)
        return found

    @classmethod
    def _build(cls, case: Case) -> CaseVocabulary:
        parts = [case.text, case.question, str(case.extra.get("state", ""))]
        if get_domain(case.domain).statute_source == "case":
            # Case-specific law is part of the case: its facts are drawn from it.
            parts.append(case.statutes)
        text = "\n".join(parts)
        return cls(
            case_numbers=tuple(sorted(set(numbers_in_text(text)))),
            case_words=frozenset(_WORD.findall(text.lower())),
            statute_numbers=_statute_numbers(case.statutes),
        )

    def to_json(self) -> dict[str, Any]:
        """The case's stated constants as a training file carries them (the grounded
        reward needs them without the data folder)."""
        return {
            "numbers": list(self.case_numbers),
            "words": sorted(self.case_words),
            "statute_numbers": list(self.statute_numbers),
        }

    @classmethod
    def from_json(cls, obj: Any) -> CaseVocabulary:
        """Read ``to_json``'s object back (ValueError when it is not one)."""
        if isinstance(obj, str):
            obj = json.loads(obj)
        if not isinstance(obj, dict) or not {"numbers", "words", "statute_numbers"} <= set(obj):
            raise ValueError(
                "case constants must be an object with numbers, words, statute_numbers"
            )
        return cls(
            case_numbers=tuple(sorted(float(x) for x in obj["numbers"])),
            case_words=frozenset(str(w) for w in obj["words"]),
            statute_numbers=tuple(sorted(float(x) for x in obj["statute_numbers"])),
        )

    def in_case(self, value: Any) -> bool:
        """Whether the case states this constant (numbers exactly, to the cent)."""
        if is_number(value):
            return near_any(float(value), self.case_numbers, exact=True)
        if isinstance(value, str):
            return names_match(name_words(value), self.case_words)
        return False

    def in_case_or_statutes(self, value: Any) -> bool:
        if self.in_case(value):
            return True
        return is_number(value) and near_any(float(value), self.statute_numbers, exact=True)


_VOCABULARIES: dict[tuple[str, str, int, int], CaseVocabulary] = {}


@lru_cache(maxsize=64)
def _statute_numbers(statutes: str) -> tuple[float, ...]:
    """The numbers of a statutes text, read once per text (a domain's shared statutes
    are the same for all its cases)."""
    return tuple(sorted(set(numbers_in_text(statutes))))


def fact_constants(proof: tuple[Node, ...]) -> list[Any]:
    return [v for node in _facts(proof) for v in node.get("v") or [] if v is not None]


_facts = ProofMemo(facts)
"""The proof's fact nodes, found once per proof (the comparison asks many times)."""


YEARS = range(1900, 2101)


def telling(value: Any) -> bool:
    """A constant that can tie a fact to one case: not a small integer or a year, which
    every case and every rule table mention."""
    if is_number(value):
        number = float(value)
        if number.is_integer() and (int(number) in SMALL_INTEGERS or int(number) in YEARS):
            return False
    return True


def case_facts(proof: tuple[Node, ...], vocab: CaseVocabulary) -> list[Node]:
    """Facts of the proof that state something of the case: a telling constant that the
    case text has (a name, an amount; years and small integers alone do not count)."""
    return [
        f for f in _facts(proof) if any(telling(v) and vocab.in_case(v) for v in f.get("v") or [])
    ]


def _key(value: Any) -> Any:
    if is_number(value):
        return round(float(value), 2)
    return name_words(str(value))


def case_constants(proof: tuple[Node, ...], vocab: CaseVocabulary) -> list[Any]:
    """The distinct constants of the proof's facts that occur in the case text."""
    seen: dict[Any, Any] = {}
    for value in fact_constants(proof):
        key = _key(value)
        if key not in seen and vocab.in_case(value):
            seen[key] = value
    return list(seen.values())


@dataclass(frozen=True)
class Holdings:
    """A proof's constants, indexed for matching: sorted numbers and name word sets."""

    numbers: tuple[float, ...]
    names: tuple[frozenset[str], ...]

    @classmethod
    def of(cls, values: Iterable[Any]) -> Holdings:
        numbers = sorted({float(v) for v in values if is_number(v)})
        names = {name_words(v) for v in values if isinstance(v, str)}
        return cls(tuple(numbers), tuple(names))

    def has(self, value: Any) -> bool:
        if is_number(value):
            return near_any(float(value), self.numbers)
        if isinstance(value, str):
            words = name_words(value)
            return any(names_match(words, held) for held in self.names)
        return False


def used_constants(proof: tuple[Node, ...]) -> list[Any]:
    """Every constant a proof rests on: its facts' constants and the numbers it computes
    with (a program may write a case number into a rule instead of a fact)."""
    values: list[Any] = list(fact_constants(proof))
    for node, _ in walk(proof):
        kind = node.get("k")
        if kind == "arith":
            values.extend(node.get("in") or [])
        elif kind == "cmp":
            values.extend(node.get("args") or [])
    return values


def _same(a: Any, b: Any) -> bool:
    if is_number(a) and is_number(b):
        return numbers_match(float(a), float(b))
    if isinstance(a, str) and isinstance(b, str):
        return names_match(name_words(a), name_words(b))
    return False


def fact_coverage(
    reference: tuple[Node, ...], model: tuple[Node, ...], vocab: CaseVocabulary
) -> tuple[float | None, list[Any]]:
    """Share of the reference proof's case constants the model proof uses; and the
    missing ones.  None when the reference proof uses no case constant."""
    wanted = case_constants(reference, vocab)
    if not wanted:
        return None, []
    have = Holdings.of(used_constants(model))
    missing = [w for w in wanted if not have.has(w)]
    return 1 - len(missing) / len(wanted), missing


class Step(NamedTuple):
    """A value a proof computes: an arithmetic result or an aggregate's value.  A
    named tuple, not a frozen dataclass: a run of hard makes some 44,000, and a frozen
    dataclass's constructor sets each field through ``object.__setattr__``."""

    value: float
    goal: str
    inputs: tuple[float, ...]
    clause: str | None
    line: int | None


def computed_steps(proof: tuple[Node, ...], trivial: bool = False) -> list[Step]:
    """Values the proof computes; with ``trivial``, also 0 and 1 results and the steps
    of failed attempts (``tried``), which are computation but not proof.  Both lists
    come from one pass over the proof, kept per proof."""
    every, proper = _steps(proof)
    return every if trivial else proper


def _computed_steps(proof: tuple[Node, ...]) -> tuple[list[Step], list[Step]]:
    every: list[Step] = []
    proper: list[Step] = []
    for node, rule in walk(proof):
        kind = node.get("k")
        if kind != "arith" and kind != "aggregate_all":
            continue
        out: Any = node.get("out")
        if not is_number(out):
            continue
        value = float(out)
        step = Step(
            value,
            str(node.get("g", "")),
            tuple([float(x) for x in node.get("in") or () if type(x) in _NUMBERS]),
            str(rule.get("g")) if rule else None,
            rule.get("l") if rule else None,
        )
        every.append(step)
        if not node.get("tried") and value != 0.0 and value != 1.0:
            proper.append(step)
    return every, proper


_steps = ProofMemo(_computed_steps)


def all_steps(proof: tuple[Node, ...]) -> list[Step]:
    """Every arithmetic step, 0 and 1 results included (for matching inputs)."""
    return computed_steps(proof, trivial=True)


def model_values(proof: tuple[Node, ...]) -> list[float]:
    """Every number the model's computation holds: computed (failed attempts included),
    computed with, or stated in a fact.  Not the numbers it merely compares with: a
    claim's amount (``Tax =:= 2600``) is given, not reached."""
    values = [s.value for s in all_steps(proof)]
    values += [float(v) for v in fact_constants(proof) if is_number(v)]
    for node, _ in walk(proof):
        if node.get("k") == "arith":
            values.extend(float(x) for x in node.get("in") or [] if is_number(x))
    return values


def value_recall(
    reference: tuple[Node, ...], model: tuple[Node, ...]
) -> tuple[float | None, Step | None]:
    """Share of the reference's intermediate values the model proof reaches, and the
    first one (in the reference's proof order) it never reaches."""
    wanted = computed_steps(reference)
    if not wanted:
        return None, None
    have = Holdings.of(model_values(model)).numbers
    first: Step | None = None
    hits = 0
    distinct: set[float] = set()
    for step in wanted:
        if round(step.value, 2) in distinct:
            continue
        distinct.add(round(step.value, 2))
        if near_any(step.value, have):
            hits += 1
        elif first is None:
            first = step
    return hits / len(distinct), first


def hallucinated_constants(model: tuple[Node, ...], vocab: CaseVocabulary) -> list[float]:
    """Numbers stated in the model proof's *case facts* (see ``case_facts``) that occur
    nowhere in the case text or statutes (small integers excepted).  Rule tables (facts
    with no constant of the case, e.g. a tax bracket) are the law, not the case, and are
    not checked.  Names are not checked: programs invent identifiers freely (``bag2``,
    ``comp``), which is no hallucination."""
    found: list[float] = []
    for value in [v for f in case_facts(model, vocab) for v in f.get("v") or []]:
        if not is_number(value):
            continue
        number = float(value)
        if number.is_integer() and int(number) in SMALL_INTEGERS:
            continue
        if not vocab.in_case_or_statutes(number) and number not in found:
            found.append(number)
    return found


def comparisons(proof: tuple[Node, ...], tried: bool = False) -> list[tuple[float, float, str]]:
    found: list[tuple[float, float, str]] = []
    for node, _ in walk(proof):
        if node.get("k") == "cmp" and (tried or not node.get("tried")):
            args = node.get("args") or []
            if len(args) == 2 and all(is_number(a) for a in args):
                found.append((float(args[0]), float(args[1]), str(node.get("g", ""))))
    return found


def numbers_of(values: Iterable[Any]) -> list[float]:
    return [float(v) for v in values if is_number(v)]
