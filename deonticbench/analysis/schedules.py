"""The numbers of a domain's law as its reference programs state them: every schedule a
model might take a number from (another cabin's fees, another year's or filing
status's table).  The failure taxonomy calls a changed literal another schedule's
number, a ``wrong_rule``, when the statutes state it or when one of these does.

Each reference program's clauses are read by SWI-Prolog's reader (``prolog/analyse.pl``,
``deonticbench_numbers/1``: nothing is loaded or run); a number counts when it is
telling (not a small integer or a year), the program's own case does not state it (a
bag's size or a person's income is the case, not the law), and it is not in a fact that
states its case (``bag(1, 63, 40)``: 40 lbs is in the case text, so 63 is that bag's
size summed by the program's author, not a schedule's number).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import overload

from ..solver import SandboxKind, Solver
from ..solver.pool import SANDBOX_PROLOG
from .compare import CaseVocabulary, is_number, telling
from .engine import ANALYSER, analysis_limits, prolog_string


def numbers_job(programs: Sequence[str], sandbox: SandboxKind) -> str:
    """One job that prints the numbers of every program's clauses, one line each."""
    texts = ", ".join(prolog_string(p) for p in programs)
    call = f":- initialization(deonticbench_numbers([{texts}]), main).\n"
    if sandbox == "bwrap":
        return f":- encoding(utf8).\n:- use_module('{SANDBOX_PROLOG}/{ANALYSER.name}').\n{call}"
    return ANALYSER.read_text(encoding="utf-8") + "\n" + call


Clauses = list[tuple[bool, list[float]]]
"""A program's clauses that state numbers: (whether a fact, its numbers)."""


def program_clauses(programs: Sequence[str], solver: Solver) -> list[Clauses]:
    """The numbers each clause of each program states (none for a program the reader
    could not read)."""
    if not programs:
        return []
    execution = solver.run(
        numbers_job(programs, solver.sandbox),
        analysis_limits(solver.limits, len(programs)),
        preload=ANALYSER.name,  # a worker that loaded the analyser already reads at once
    )
    found: list[Clauses] = [[] for _ in programs]
    for line in execution.stdout.splitlines():
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        index = obj.get("index")
        if isinstance(index, int) and 0 <= index < len(found):
            found[index] = [
                (c.get("fact") is True, [float(v) for v in c.get("numbers") or [] if is_number(v)])
                for c in obj.get("clauses") or []
                if isinstance(c, dict)
            ]
    return found


def law_numbers(
    programs: Sequence[str], vocabularies: Sequence[CaseVocabulary], solver: Solver
) -> tuple[float, ...]:
    """The telling numbers the programs state, outside facts of their cases, that their
    own cases do not state; sorted."""
    found: set[float] = set()
    for clauses, vocab in zip(program_clauses(programs, solver), vocabularies, strict=True):
        for fact, numbers in clauses:
            told = [v for v in numbers if telling(v)]
            if fact and any(float(v) in vocab.case_numbers for v in told):
                continue  # a fact of the case (its other numbers are the case's too)
            found.update(v for v in told if not vocab.in_case(v))
    return tuple(sorted(found))


class LazyNumbers(Sequence[float]):
    """Sorted numbers computed on first use, once (diagnoses run in several threads):
    a run whose answers are right, or whose slips never land on a literal, never reads
    the domain's programs."""

    def __init__(self, compute: Callable[[], tuple[float, ...]]) -> None:
        self._compute = compute
        self._numbers: tuple[float, ...] | None = None
        self._lock = threading.Lock()

    def _get(self) -> tuple[float, ...]:
        with self._lock:
            if self._numbers is None:
                self._numbers = self._compute()
            return self._numbers

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[float]: ...

    def __getitem__(self, index: int | slice) -> float | Sequence[float]:
        return self._get()[index]

    def __len__(self) -> int:
        return len(self._get())
