"""Distractor statutes (``--distractors N``): statute sections that do not bear on a case,
shuffled into its statutes, to measure robustness to irrelevant law (docs/settings.md).

Where they come from, per domain (the statutes' layout is the domain's):

* housing: the numbered statutes (``[k] CITATION``) of other cases of the split whose
  state is another state;
* uscis: the paragraphs of other cases' statutes that share little wording with any
  paragraph of the case's own (the AAO decisions repeat their framework nearly word for
  word, and a paraphrase of the governing law is no distractor);
* sara: every prompt already holds the whole statute, so a case is shown the sections its
  reference program uses (``needed``, read by SWI-Prolog in ``settings.sections``) plus
  N others of the same statute; ``--distractors 0`` is the relevant-only baseline;
* airline: none (one policy document, no section mapping); the plan says so.

Deterministic for a (seed, case id): candidates are ranked by sha256 of the seed, the
case id and the section text, and the sections are put in an order ranked the same way.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections import Counter
from collections.abc import Mapping, Sequence

from ..data.cases import Case
from ..data.domains import Domain

_HOUSING_HEAD = re.compile(r"^\[\d+\]\s*", re.MULTILINE)
_WORD = re.compile(r"[a-z]+")
NEAR_DUPLICATE = 0.5
"""Word-set overlap (Jaccard) above which a uscis paragraph restates the case's own law."""


SectionsNeeded = Mapping[str, "frozenset[str] | str"]
"""Case id -> the numbers of the statute sections its reference program uses, or why that
cannot be told (``settings.sections.needed_sections``, handed in by ``api.prepare``)."""


def distractor_note(domain: Domain, count: int | None) -> str | None:
    """Why a domain gets no distractors (None when it gets them)."""
    if count is not None and domain.statute_source == "shared" and not domain.section_terms:
        return (
            f"{domain.name}: no distractor statutes; its statute is one policy document, "
            "whose headings no reference program is mapped to (docs/robustness.md)"
        )
    return None


def with_distractors(
    domain: Domain,
    cases: Sequence[Case],
    count: int | None,
    *,
    material: Sequence[Case],
    seed: int,
    needed: SectionsNeeded | None = None,
) -> tuple[list[Case], str | None]:
    """``cases`` with ``count`` distractor sections shuffled into each one's statutes, and
    a note for config.json (what was left out and why, or why nothing was added).

    ``None`` leaves the statutes as the paper shows them.  A domain whose prompt holds its
    whole statute (SARA) shows each case the sections it needs (``needed``) plus ``count``
    others of the same statute, so ``0`` is a relevant-only baseline; a case whose needed
    sections are not known, or that has fewer than ``count`` others, is left out."""
    if count is None:
        return list(cases), None
    note = distractor_note(domain, count)
    if note is not None:
        return list(cases), note
    if domain.statute_source == "shared":
        if needed is None:
            raise ValueError(f"{domain.name} distractors need the sections each case uses")
        return _within_statute(domain, cases, count, needed, seed)
    if count == 0:
        return list(cases), None
    return [_add(domain, case, count, material, seed) for case in cases], None


def _within_statute(
    domain: Domain, cases: Sequence[Case], count: int, needed: SectionsNeeded, seed: int
) -> tuple[list[Case], str]:
    kept: list[Case] = []
    reasons: Counter[str] = Counter()
    for case in cases:
        uses = needed.get(case.id, "its sections were not read")
        sections = statute_sections(case.statutes)
        if isinstance(uses, str):
            reasons[uses] += 1
            continue
        others = sorted(
            (n for n, _ in sections if n not in uses),
            key=lambda n: _rank(seed, case.id, "pick", n),
        )
        if len(others) < count:
            reasons[f"fewer than {count} sections it does not use"] += 1
            continue
        shown = set(uses) | set(others[:count])
        order = sorted(
            (pair for pair in sections if pair[0] in shown),
            key=lambda pair: _rank(seed, case.id, "order", pair[0]),
        )
        kept.append(dataclasses.replace(case, statutes="\n\n\n\n".join(t for _, t in order)))
    told = "; ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
    note = (
        f"{domain.name}: the sections each case uses plus {count} others, "
        f"{len(kept)}/{len(cases)} cases" + (f" (left out: {told})" if told else "")
    )
    return kept, note


_SECTION_HEAD = re.compile(r"^§(\d+)\.", re.MULTILINE)


def statute_sections(statutes: str) -> list[tuple[str, str]]:
    """A whole statute text in its numbered sections (``§63. Taxable income defined``):
    (number, text) in order; empty when it has no such headings."""
    heads = list(_SECTION_HEAD.finditer(statutes))
    ends = [h.start() for h in heads[1:]] + [len(statutes)] * bool(heads)
    pairs = zip(heads, ends, strict=True)
    return [(h.group(1), statutes[h.start() : end].strip()) for h, end in pairs]


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
