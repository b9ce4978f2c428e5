"""Predicate signatures S(P) and their Jaccard similarity, as the paper's partial credit
uses them (B.5.2).

The reading of a program is SWI-Prolog's own (``library(prolog_xref)`` in the project's
static analysis, ``deonticbench.analysis.static``); this module only adapts that
analysis to the reward: a signature is a ``(name, arity)`` pair, and the set travels in
training files as a list of ``{"name": ..., "arity": ...}`` objects (a shape Arrow,
parquet and JSON all hold without mixing types in a column).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

Signature = tuple[str, int]
Signatures = frozenset[Signature]


def program_signatures(program: str) -> Signatures:
    """S(P): the predicate signatures a program defines, as SWI-Prolog reads it."""
    return _cached_signatures(program)


@lru_cache(maxsize=4096)
def _cached_signatures(program: str) -> Signatures:
    # Imported on first use: the static analysis starts swipl, which only the partial
    # credit of a failed program (and the exports) need.
    from ..analysis.static import analyse_static

    return frozenset((str(name), int(arity)) for name, arity in analyse_static(program).signatures)


def jaccard(generated: Signatures, reference: Signatures) -> float:
    """|S(P) ∩ S(P*)| / |S(P) ∪ S(P*)|, as the static analysis defines it."""
    from ..analysis.static import signature_jaccard

    return float(signature_jaccard(generated, reference))


def signatures_to_rows(signatures: Iterable[Signature]) -> list[dict[str, Any]]:
    """The file form of a signature set, sorted so that exports are reproducible."""
    return [{"name": name, "arity": arity} for name, arity in sorted(signatures)]


def signatures_from_rows(rows: Iterable[Any] | None) -> Signatures:
    """Read the file form back; also accepts ``[name, arity]`` pairs and ``"name/arity"``."""
    out: set[Signature] = set()
    for row in rows or ():
        if isinstance(row, Mapping):
            out.add((str(row["name"]), int(row["arity"])))
        elif isinstance(row, str):
            name, _, arity = row.rpartition("/")
            out.add((name, int(arity)))
        else:
            name, arity = row
            out.add((str(name), int(arity)))
    return frozenset(out)
