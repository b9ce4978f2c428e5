"""Distractor statutes (``--distractors N``): statute sections that do not bear on a case,
shuffled into its statutes, to measure robustness to irrelevant law (docs/settings.md).

Where they come from, per domain (the statutes' layout is the domain's):

* housing: the numbered statutes (``[k] CITATION``) of other cases of the split whose
  state is another state;
* uscis: the paragraphs of other cases' statutes that share little wording with any
  paragraph of the case's own (the AAO decisions repeat their framework nearly word for
  word, and a paraphrase of the governing law is no distractor);
* sara and airline: none.  Every prompt already holds the domain's whole statute text,
  so there is no section of the domain's law left to add; these cases are left as they
  are and the plan says so.

Deterministic for a (seed, case id): candidates are ranked by sha256 of the seed, the
case id and the section text, and the sections are put in an order ranked the same way.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence

from ..data.cases import Case
from ..data.domains import Domain

_HOUSING_HEAD = re.compile(r"^\[\d+\]\s*", re.MULTILINE)
_WORD = re.compile(r"[a-z]+")
NEAR_DUPLICATE = 0.5
"""Word-set overlap (Jaccard) above which a uscis paragraph restates the case's own law."""


def distractor_note(domain: Domain, count: int) -> str | None:
    """Why a domain gets no distractors (None when it gets them)."""
    if count and domain.statute_source == "shared":
        return (
            f"{domain.name}: no distractor statutes, every prompt already holds the "
            "domain's whole statute text"
        )
    return None


def with_distractors(
    domain: Domain, cases: Sequence[Case], count: int, *, material: Sequence[Case], seed: int
) -> list[Case]:
    """``cases`` with ``count`` distractor sections shuffled into each one's statutes."""
    if count <= 0 or distractor_note(domain, count) is not None:
        return list(cases)
    return [_add(domain, case, count, material, seed) for case in cases]


def _sections(domain: Domain, statutes: str) -> list[str]:
    if domain.name == "housing":
        parts = re.split(r"\n\s*\n(?=\[\d+\])", statutes.strip())
        return [_HOUSING_HEAD.sub("", p, count=1).strip() for p in parts if p.strip()]
    return [p.strip() for p in re.split(r"\n\s*\n", statutes.strip()) if p.strip()]


def _join(domain: Domain, sections: Sequence[str]) -> str:
    if domain.name == "housing":
        return "\n\n".join(f"[{i}] {s}" for i, s in enumerate(sections, start=1))
    return "\n\n".join(sections)


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def _candidates(domain: Domain, case: Case, material: Sequence[Case]) -> list[str]:
    own = _sections(domain, case.statutes)
    own_words = [_words(s) for s in own]
    found: dict[str, None] = {}
    for other in material:
        if other.id == case.id or other.statutes == case.statutes:
            continue
        if domain.name == "housing" and other.extra.get("state") == case.extra.get("state"):
            continue
        for section in _sections(domain, other.statutes):
            if section in own or section in found:
                continue
            words = _words(section)
            if any(_overlap(words, w) > NEAR_DUPLICATE for w in own_words):
                continue
            found[section] = None
    return list(found)


def _rank(seed: int, case_id: str, salt: str, text: str) -> str:
    return hashlib.sha256(f"{seed}\0{case_id}\0{salt}\0{text}".encode()).hexdigest()


def _add(domain: Domain, case: Case, count: int, material: Sequence[Case], seed: int) -> Case:
    pool = sorted(
        _candidates(domain, case, material), key=lambda s: _rank(seed, case.id, "pick", s)
    )
    sections = _sections(domain, case.statutes) + pool[:count]
    shuffled = sorted(sections, key=lambda s: _rank(seed, case.id, "order", s))
    return dataclasses.replace(case, statutes=_join(domain, shuffled))
