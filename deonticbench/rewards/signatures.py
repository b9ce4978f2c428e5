"""Predicate signatures S(P) and their Jaccard similarity, as the paper's partial credit
uses them (B.5.2).

The reading of a program is SWI-Prolog's own (``library(prolog_xref)`` in the project's
static analysis, ``deonticbench.analysis.static``); this module only adapts that
analysis to the reward: a signature is a ``(name, arity)`` pair, and the set travels in
training files as a list of ``{"name": ..., "arity": ...}`` objects (a shape Arrow,
parquet and JSON all hold without mixing types in a column).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

from ..analysis.engine import analyse_many
from ..analysis.static import analyse_static, signature_jaccard, static_from_json
from ..solver import Solver
from .process_pool import call_in_pool

Signature = tuple[str, int]
Signatures = frozenset[Signature]

_CACHE_SIZE = 16384
_cache: OrderedDict[str, Signatures] = OrderedDict()
_lock = threading.Lock()


def program_signatures(program: str, solver: Solver | None = None) -> Signatures:
    """S(P): the predicate signatures of a program, as SWI-Prolog reads it (run in the
    sandbox pool, like the program itself: the text is untrusted)."""
    key = hashlib.sha256(program.encode("utf-8")).hexdigest()
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    found = call_in_pool(lambda pool: analyse_static(program, pool).signatures, solver)
    signatures = frozenset((str(name), int(arity)) for name, arity in found)
    with _lock:
        _cache[key] = signatures
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return signatures


def prefetch_signatures(programs: Iterable[str], solver: Solver | None = None) -> None:
    """Read the signatures of many programs at once into the cache.

    The analyser's own start (SWI-Prolog loading ``library(prolog_xref)``) costs more
    than reading a typical program, so the batch form pays it once per dozen programs
    (``analysis.engine.analyse_many``).  A program the analyser gave up on is left out:
    ``program_signatures`` will then say why.
    """
    wanted: dict[str, str] = {}
    with _lock:
        for program in programs:
            key = hashlib.sha256(program.encode("utf-8")).hexdigest()
            if key not in _cache:
                wanted.setdefault(key, program)
    if not wanted:
        return
    texts = list(wanted.values())
    reports = call_in_pool(lambda pool: analyse_many(texts, "static", pool), solver)
    with _lock:
        for key, report in zip(wanted, reports, strict=True):
            if "analyser_error" in report or "static" not in report:
                continue
            found = static_from_json(report["static"]).signatures
            _cache[key] = frozenset((str(name), int(arity)) for name, arity in found)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)


def clear_signature_cache() -> None:
    with _lock:
        _cache.clear()


def jaccard(generated: Signatures, reference: Signatures) -> float:
    """|S(P) ∩ S(P*)| / |S(P) ∪ S(P*)|, as the static analysis defines it."""
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
