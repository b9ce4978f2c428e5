"""Which statute sections a case needs, read from its reference program (``--distractors``
on a domain whose prompt holds its whole statute: SARA).

The needed sections are those the predicates the answer rests on encode: split.pl
reads the program with SWI-Prolog's reader and ``library(prolog_xref)`` and lists the
predicates the query's conclusion reaches (``used``); each predicate's name is mapped to
a section by the section number it holds (``tax_section_1a``, ``s7703``) or by the domain's
terms (``Domain.section_terms``: ``surviving_spouse`` is §2).  A case whose program
cannot be read, none of whose predicates names a section, or (SARA binary) whose sections
read miss the one its id says it is filed under, is left out with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ..data.cases import Case
from ..data.domains import Domain, get_domain
from ..prompting.distractors import statute_sections
from ..prompting.render import demonstration
from .split import read_clauses

_LEADING_NUMBER = re.compile(r"^(?:section|sec|s)?(\d+)[a-z]*$")


def predicate_sections(domain: Domain, name: str, numbers: Iterable[str]) -> frozenset[str]:
    """The sections (by number) a predicate named ``name`` encodes, among ``numbers``."""
    known = set(numbers)
    words = [w for w in name.lower().split("_") if w]
    found: set[str] = set()
    for word in words:
        match = _LEADING_NUMBER.match(word)
        if match and match.group(1) in known:
            found.add(match.group(1))
    found |= _by_terms(domain.section_terms, words)
    if not found:
        found = _by_terms(domain.section_fallback_terms, words)
    return frozenset(found & known)


def _by_terms(terms: Sequence[tuple[str, str]], words: Sequence[str]) -> set[str]:
    out: set[str] = set()
    for phrase, section in terms:
        wanted = phrase.split()
        if any(words[i : i + len(wanted)] == wanted for i in range(len(words))):
            out.add(section)
    return out


def needed_sections(cases: Sequence[Case]) -> dict[str, frozenset[str] | str]:
    """Case id -> the section numbers its reference program uses, or why that cannot be
    told (the case is then left out of a distractor run)."""
    programs = [demonstration(get_domain(c.domain), c) for c in cases]
    reports = read_clauses(programs)
    out: dict[str, frozenset[str] | str] = {}
    for case, report in zip(cases, reports, strict=True):
        domain = get_domain(case.domain)
        numbers = [number for number, _ in statute_sections(case.statutes)]
        if "error" in report:
            out[case.id] = "SWI-Prolog's reader stopped"
            continue
        names = {pi.rsplit("/", 1)[0] for pi in report.get("used", [])}
        found = frozenset().union(*(predicate_sections(domain, n, numbers) for n in names))
        filed = re.match(domain.case_section, case.id) if domain.case_section else None
        if not found:
            out[case.id] = "no predicate the answer rests on names a section"
        elif filed is not None and filed.group(1) not in found:
            out[case.id] = "the sections read miss the one the case is filed under"
        else:
            out[case.id] = found
    return out
