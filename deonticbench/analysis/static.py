"""Static analysis of a Prolog program: what it defines, calls and lacks, read by
SWI-Prolog itself (``library(prolog_xref)`` and the compiler's own messages) in
``prolog/analyse.pl``; no directive of the program is run.

Stable API (the training reward uses it)::

    report = analyse_static(program_text)
    report.signatures            # frozenset of (name, arity): S(P) of paper B.5.2
    signature_jaccard(report.signatures, reference.signatures)

S(P) holds every predicate the program *defines* (the head of any clause, facts
included) and every predicate it *calls* that is neither defined, built in nor available
from a library (i.e. its undefined predicates).  Built-ins and library predicates are
left out: every program shares them, so they would only inflate the overlap.  Comments
and layout play no part, because the set is read from terms, not text.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..solver import Limits, Solver
from .engine import run_analyser

Signature = tuple[str, int]


@dataclass(frozen=True)
class Defined:
    name: str
    arity: int
    line: int | None


@dataclass(frozen=True)
class Undefined:
    name: str
    arity: int
    called_by: str
    """The caller as name/arity (``<directive>(N)/1`` for a directive at line N)."""


@dataclass(frozen=True)
class SyntaxErrorAt:
    line: int | None
    column: int | None
    message: str


@dataclass(frozen=True)
class LoadWarning:
    kind: str
    """singleton, discontiguous, redefined_builtin, redefined_library, redefined,
    permission, error (a non-syntax load error) or other."""
    line: int | None
    message: str


@dataclass(frozen=True)
class StaticReport:
    defined: tuple[Defined, ...]
    called: frozenset[Signature]
    undefined: tuple[Undefined, ...]
    syntax_errors: tuple[SyntaxErrorAt, ...]
    warnings: tuple[LoadWarning, ...]
    signatures: frozenset[Signature]
    fail_rules: tuple[Defined, ...]
    """Clauses whose whole body is ``fail``/``false`` (a decision hard-coded to fail)."""

    @property
    def undefined_signatures(self) -> frozenset[Signature]:
        return frozenset((u.name, u.arity) for u in self.undefined)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def static_from_json(obj: dict[str, Any]) -> StaticReport:
    """Build the report from the ``static`` object the analyser prints."""
    return StaticReport(
        defined=tuple(
            Defined(str(d["name"]), int(d["arity"]), _int_or_none(d.get("line")))
            for d in obj.get("defined", [])
        ),
        called=frozenset((str(c["name"]), int(c["arity"])) for c in obj.get("called", [])),
        undefined=tuple(
            Undefined(str(u["name"]), int(u["arity"]), str(u.get("by", "")))
            for u in obj.get("undefined", [])
        ),
        syntax_errors=tuple(
            SyntaxErrorAt(
                _int_or_none(e.get("line")), _int_or_none(e.get("column")), str(e["message"])
            )
            for e in obj.get("syntax_errors", [])
        ),
        warnings=tuple(
            LoadWarning(str(w["kind"]), _int_or_none(w.get("line")), str(w["message"]))
            for w in obj.get("warnings", [])
        ),
        signatures=frozenset((str(n), int(a)) for n, a in obj.get("signatures", [])),
        fail_rules=tuple(
            Defined(str(d["name"]), int(d["arity"]), _int_or_none(d.get("line")))
            for d in obj.get("fail_rules", [])
        ),
    )


def analyse_static(
    program_text: str, solver: Solver | None = None, limits: Limits | None = None
) -> StaticReport:
    """Read ``program_text`` with SWI-Prolog (in the sandbox) and report on it.

    Pass a ``Solver`` to reuse its warm workers when analysing many programs."""
    report = run_analyser(program_text, "static", solver, limits)
    return static_from_json(report["static"])


def signature_jaccard(a: Iterable[Signature], b: Iterable[Signature]) -> float:
    """|A ∩ B| / |A ∪ B| of two signature sets; 1.0 when both are empty."""
    sa, sb = frozenset(a), frozenset(b)
    union = sa | sb
    if not union:
        return 1.0
    return len(sa & sb) / len(union)
