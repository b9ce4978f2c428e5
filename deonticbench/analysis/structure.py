"""The model's rules against the reference's, clause by clause: the rule that tells a
numerical slip from a wrong rule by structure, before any number is compared
(docs/analysis.md, 4).

``prolog/analyse.pl`` gives every clause of a program as SWI-Prolog compiled it, with
the names of the program's own predicates written ``'$p'`` and its variables numbered,
reduced to hashes (``clauses`` of the static report): the clause, its shape with the
numbers blanked, its shape with the arithmetic operators and comparisons blanked too,
and the clause with one call of a defined predicate negated, dropped, or with a
sibling clause's body.  Names never take part (models use their own), nor the order of
clauses or predicates (the clauses are compared as a multiset).

The clauses both programs have are set aside.  What is left is read only when the model
has the reference's structure (at least half of the reference's clauses are the
model's too, and what differs lies in at most two predicates on either side) and when
the proof shows the difference on the answer's path (a differing clause of the
reference in its proof, or of the model in the model's).  Then:

* a model clause that is a reference clause with one call negated, or with one call
  dropped or added, or with the body of a sibling clause; a reference clause the model
  does not have at all (a clause dropped), or one the reference does not have: another
  rule applies, ``wrong_rule``;
* clauses that pair up with the same structure and differ in exactly **one operator or
  one literal**: ``numerical``, unless the new literal is another row's or schedule's
  number (stated by the statutes, by another clause of the reference, or by another
  reference program of the domain), which is ``wrong_rule``;
* clauses that pair up but differ in several places, or a predicate whose clauses are
  another set (a rule table replaced by another case's): ``wrong_rule``.

Anything else (a model written its own way) returns None, and the comparison of values
(``divergence``) decides.  Which model predicate is which reference predicate is told
by their clauses (``pair_predicates``): a clause that calls another predicate of the
same shape (a sibling's ``qualifying_child`` for its ``qualifying_relative``) is a
difference, though its structure with the names blanked is the same.  Every other
clause being the reference's own, what differs is what changed the answer: a clause
off the answer's path cannot change it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .compare import CaseVocabulary, is_number, near_any, numbers_match, telling
from .divergence import Verdict, another_schedule
from .proof import Node, walk

MATCHED_SHARE = 0.5
"""Share of the reference's clauses the model must have unchanged to be read as having
the reference's structure."""
DIFFERING_PREDICATES = 2
"""At most this many predicates on either side may hold the differing clauses."""


@dataclass(frozen=True)
class Clause:
    """One clause as the analyser reduced it (see the module doc)."""

    pred: str
    line: int | None
    fact: bool
    exact: str
    shape: str
    blind: str
    ops: tuple[str, ...]
    numbers: tuple[Any, ...]
    calls: tuple[str, ...]
    negated: frozenset[str]
    dropped: frozenset[str]
    sibling: frozenset[str]
    body: str | None

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Clause:
        line = obj.get("l")
        return cls(
            pred=str(obj.get("p", "")),
            line=line if isinstance(line, int) else None,
            fact=obj.get("f") is True,
            exact=str(obj.get("h", "")),
            shape=str(obj.get("s", "")),
            blind=str(obj.get("o", "")),
            ops=tuple(str(x) for x in obj.get("ops") or ()),
            numbers=tuple(obj.get("n") or ()),
            calls=tuple(str(x) for x in obj.get("c") or ()),
            negated=frozenset(obj.get("t") or ()),
            dropped=frozenset(obj.get("d") or ()),
            sibling=frozenset(obj.get("b") or ()),
            body=obj["bh"] if isinstance(obj.get("bh"), str) else None,
        )


def clauses_of(static: dict[str, Any]) -> list[Clause]:
    return [Clause.of(c) for c in static.get("clauses") or [] if isinstance(c, dict)]


def proof_lines(proof: tuple[Node, ...]) -> set[int]:
    """Lines of the clauses a proof used or tried (rules, facts, failed facts)."""
    return {
        node["l"]
        for node, _ in walk(proof)
        if node.get("k") in ("rule", "fact", "fail_rule") and isinstance(node.get("l"), int)
    }


@dataclass(frozen=True)
class Side:
    """One program for the comparison: its clauses as the analyser reduced them."""

    clauses: list[Clause]

    @classmethod
    def of(cls, static: dict[str, Any]) -> Side:
        return cls(clauses_of(static))


def structural_verdict(
    reference: Side,
    model: Side,
    vocab: CaseVocabulary,
    schedules: Sequence[float] = (),
) -> Verdict | None:
    """``wrong_rule`` or ``numerical`` (``entity_fact`` for a fact's case number) when
    the model has the reference's structure; None otherwise (module doc)."""
    if not reference.clauses:
        return None
    if [(c.exact, c.calls) for c in reference.clauses] == [
        (c.exact, c.calls) for c in model.clauses
    ]:
        return None  # the reference's own clauses, its own names: nothing differs
    shared = Counter(c.exact for c in reference.clauses) & Counter(c.exact for c in model.clauses)
    if sum(shared.values()) < MATCHED_SHARE * len(reference.clauses):
        return None  # a program of the model's own structure (pairing could only match fewer)
    names = pair_predicates(reference.clauses, model.clauses)
    ref_left, model_left = _unmatched(reference.clauses, model.clauses, names)
    if not ref_left and not model_left:
        return None
    kept = len(reference.clauses) - len(ref_left)
    if not reference.clauses or kept < MATCHED_SHARE * len(reference.clauses):
        return None
    if (
        len({c.pred for c in ref_left}) > DIFFERING_PREDICATES
        or len({c.pred for c in model_left}) > DIFFERING_PREDICATES
    ):
        return None
    related = _related(ref_left, model_left, reference.clauses)
    if related is not None:
        return Verdict("wrong_rule", related)
    if not model_left:
        shown = ", ".join(sorted({c.pred for c in ref_left}))
        return Verdict("wrong_rule", f"a clause of the reference's {shown} is dropped")
    if not ref_left:
        shown = ", ".join(sorted({c.pred for c in model_left}))
        return Verdict("wrong_rule", f"the model's {shown} has a clause the reference has not")
    pairs = _paired(ref_left, model_left)
    if pairs is None:
        if len(ref_left) == len(model_left) == 1 and not (ref_left[0].fact or model_left[0].fact):
            # One rule written another way: another rule when it consults other
            # predicates; the same ones computed otherwise is for the values to judge.
            mine = Counter(names.get(n, "?" + n) for n in model_left[0].calls[1:])
            if mine != Counter(ref_left[0].calls[1:]):
                return Verdict(
                    "wrong_rule", OTHER_CALL.format(m=model_left[0].pred, r=ref_left[0].pred)
                )
            return None
        if len({c.pred for c in ref_left}) == 1 and len({c.pred for c in model_left}) == 1:
            new = _new_numbers(ref_left, model_left, vocab)
            shown = ", ".join(f"{v:g}" for v in new[:4]) or "no number of its own"
            return Verdict(
                "wrong_rule",
                f"the rule table {ref_left[0].pred} is another one ({shown})",
            )
        return None
    changes = [change for r, m in pairs for change in _changes(r, m)]
    if len(changes) == 1:
        return _one_change(changes[0], reference.clauses, vocab, schedules)
    new = _new_numbers(ref_left, model_left, vocab)
    foreign = [v for v in new if _schedule_number(v, vocab, schedules)]
    if foreign:
        shown = ", ".join(f"{v:g}" for v in foreign[:4])
        return Verdict("wrong_rule", f"another schedule's numbers in the rule: {shown}")
    shown = "; ".join(c[1] for c in changes[:3])
    return Verdict("wrong_rule", f"several constants changed together: {shown}")


def _unmatched(
    reference: list[Clause], model: list[Clause], names: dict[str, str]
) -> tuple[list[Clause], list[Clause]]:
    """The clauses each side has that the other has not (as multisets): a clause is its
    structure and the predicates it calls, the model's predicates named by the
    reference predicates they pair with (``names``, from ``pair_predicates``)."""
    ref_keys = [(c.exact, c.calls) for c in reference]
    model_keys = [(c.exact, tuple(names.get(n, "?" + n) for n in c.calls)) for c in model]
    theirs = Counter(model_keys)
    ref_left: list[Clause] = []
    for clause, key in zip(reference, ref_keys, strict=True):
        if theirs[key] > 0:
            theirs[key] -= 1
        else:
            ref_left.append(clause)
    ours = Counter(ref_keys)
    model_left: list[Clause] = []
    for clause, key in zip(model, model_keys, strict=True):
        if ours[key] > 0:
            ours[key] -= 1
        else:
            model_left.append(clause)
    return ref_left, model_left


def _name(pred: str) -> str:
    return pred.rsplit("/", 1)[0]


def pair_predicates(reference: list[Clause], model: list[Clause]) -> dict[str, str]:
    """Which reference predicate each model predicate is, by name.  Names never decide:
    a predicate is paired with the one whose clauses are the same structures (a
    predicate renamed); among several of the same structures, with the one whose calls
    go where its own go and whose callers call it where its own callers call it (those
    already paired first, a round at a time); what is left (a predicate changed) by
    arity and the most structures in common."""
    return _Pairing(reference, model).names


ROUNDS = 4


class _Pairing:
    def __init__(self, reference: list[Clause], model: list[Clause]) -> None:
        self.ref_preds, self.model_preds = _grouped(reference), _grouped(model)
        self.ref_by_name = {_name(p): cs for p, cs in self.ref_preds.items()}
        # Who calls each model predicate, and where: (caller, clause, positions).
        self.callers: dict[str, list[tuple[str, Clause, tuple[int, ...]]]] = {}
        for pred, clauses in self.model_preds.items():
            for c in clauses:
                for callee in set(c.calls[1:]):
                    spots = tuple(i for i, n in enumerate(c.calls) if i and n == callee)
                    self.callers.setdefault(callee, []).append((_name(pred), c, spots))
        self.names: dict[str, str] = {}
        buckets: dict[tuple[str, ...], tuple[list[str], list[str]]] = {}
        for pred, cs in self.ref_preds.items():
            buckets.setdefault(_label(pred, cs), ([], []))[0].append(pred)
        for pred, cs in self.model_preds.items():
            buckets.setdefault(_label(pred, cs), ([], []))[1].append(pred)
        for rounds_left in range(ROUNDS, -1, -1):
            for refs, mine in buckets.values():
                self._settle(refs, mine, final=rounds_left == 0)
        self._by_shapes(
            [r for refs, _ in buckets.values() for r in refs],
            [m for _, mine in buckets.values() for m in mine],
        )

    def _settle(self, refs: list[str], mine: list[str], final: bool) -> None:
        """Pair what a bucket of the same structures can tell: the best-agreeing pairs
        first; pairs nothing tells apart only in the last round (by order)."""
        if not refs or not mine:
            return
        if len(refs) == 1 and len(mine) == 1:
            self.names[_name(mine.pop())] = _name(refs.pop())
            return
        scored = sorted(
            (-agreement, i, j, m, r)
            for i, m in enumerate(mine)
            for j, r, agreement in self._agreeing(m, refs)
        )
        for _, _, _, m, r in scored:
            if m in mine and r in refs:
                self.names[_name(m)] = _name(r)
                mine.remove(m)
                refs.remove(r)
        if final:
            # Nothing tells the rest apart: each model predicate left, in order, takes
            # the first reference predicate left.
            paired = min(len(mine), len(refs))
            for m, r in zip(mine[:paired], refs[:paired], strict=True):
                self.names[_name(m)] = _name(r)
            del mine[:paired], refs[:paired]

    def _agreeing(self, model: str, refs: list[str]) -> Iterator[tuple[int, str, int]]:
        """The reference predicates of a bucket the model predicate agrees with at all
        (position, name, agreement).  A predicate whose clauses call nothing agrees
        only through its callers, so only with what their pairs' clauses call: a bucket
        of a hundred facts is not scored a hundred times a hundred times a round."""
        wanted: set[str] | None = None
        if not any(len(c.calls) > 1 for c in self.model_preds[model]):
            wanted = set()
            for caller, _, spots in self.callers.get(_name(model), ()):
                for clause in self.ref_by_name.get(self.names.get(caller, ""), ()):
                    wanted.update(clause.calls[i] for i in spots if i < len(clause.calls))
        for j, r in enumerate(refs):
            if wanted is None or _name(r) in wanted:
                agreement = self._agreement(model, r)
                if agreement:
                    yield j, r, agreement

    def _agreement(self, model: str, reference: str) -> int:
        return _consistency(
            self.model_preds[model], self.ref_preds[reference], self.names
        ) + self._callers_agree(model, reference)

    def _callers_agree(self, model: str, reference: str) -> int:
        """How many calls of the model predicate, from predicates already paired, stand
        where a clause of the same structure of their pair calls the reference one."""
        theirs = _name(reference)
        total = 0
        for caller, m, spots in self.callers.get(_name(model), ()):
            paired = self.ref_by_name.get(self.names.get(caller, ""))
            if paired and any(
                r.exact == m.exact and all(i < len(r.calls) and r.calls[i] == theirs for i in spots)
                for r in paired
            ):
                total += len(spots)
        return total

    def _by_shapes(self, free: list[str], left: list[str]) -> None:
        """The predicates no structure pairs: by arity and the most clause shapes (up to
        numbers and operators) in common."""
        for pred in left:
            arity = pred.rsplit("/", 1)[-1]
            shapes = Counter(c.blind for c in self.model_preds[pred])
            candidates = [r for r in free if r.rsplit("/", 1)[-1] == arity]
            if not candidates:
                continue
            best = max(
                candidates,
                key=lambda r: sum((shapes & Counter(c.blind for c in self.ref_preds[r])).values()),
            )
            free.remove(best)
            self.names[_name(pred)] = _name(best)


def _grouped(clauses: list[Clause]) -> dict[str, list[Clause]]:
    found: dict[str, list[Clause]] = {}
    for c in clauses:
        found.setdefault(c.pred, []).append(c)
    return found


def _label(pred: str, clauses: list[Clause]) -> tuple[str, ...]:
    return (pred.rsplit("/", 1)[-1], *sorted(c.exact for c in clauses))


def _consistency(model: list[Clause], reference: list[Clause], names: dict[str, str]) -> int:
    """How many calls of the model predicate's clauses go to the predicates already
    paired with the reference clauses' callees (the best clause of the same structure
    for each)."""
    total = 0
    for m in model:
        best = 0
        for r in reference:
            if r.exact == m.exact:
                hits = sum(
                    1 for x, y in zip(m.calls[1:], r.calls[1:], strict=False) if names.get(x) == y
                )
                best = max(best, hits)
        total += best
    return total


SIBLING = "a clause of the reference's {r} has the body of another of its clauses"
OTHER_CALL = "the model's {m} calls another predicate where the reference's {r} calls one"
NEGATED = "a condition of the reference's {r} is negated (or its negation dropped)"
DROPPED = "a condition of the reference's {r} is dropped"
ADDED = "the model's {m} adds a condition to the reference's {r}"


def _related(
    ref_left: list[Clause], model_left: list[Clause], reference: list[Clause]
) -> str | None:
    """A model clause that is a reference clause with one call negated, dropped or
    added, or with a sibling's body, or that calls another predicate in the place of
    one of the reference's: which, in words."""
    bodies = {(c.pred, c.body) for c in reference if c.body is not None}
    for m in model_left:
        for r in ref_left:
            if m.exact == r.exact:
                found = SIBLING if m.exact in r.sibling else OTHER_CALL
            elif m.exact in r.negated:
                found = NEGATED
            elif m.exact in r.dropped:
                found = DROPPED
            elif r.exact in m.dropped:
                found = ADDED
            elif m.exact in r.sibling or (
                m.body is not None and m.body != r.body and (r.pred, m.body) in bodies
            ):
                found = SIBLING
            else:
                continue
            return found.format(m=m.pred, r=r.pred)
    return None


def _paired(ref_left: list[Clause], model_left: list[Clause]) -> list[tuple[Clause, Clause]] | None:
    """Each differing model clause with a differing reference clause of the same
    structure up to numbers and operators (the same numbers' shape first); None unless
    every clause on both sides pairs up."""
    if len(ref_left) != len(model_left):
        return None
    free = list(ref_left)
    pairs: list[tuple[Clause, Clause]] = []
    for m in model_left:
        same = [r for r in free if r.blind == m.blind]
        if not same:
            return None
        best = min(same, key=lambda r: (r.shape != m.shape, len(_changes(r, m))))
        free.remove(best)
        pairs.append((best, m))
    return pairs


_Change = tuple[str, str, Any, Any, bool]
"""(what, in words, old, new, in a fact): what is operator or literal."""


def _changes(r: Clause, m: Clause) -> list[_Change]:
    found: list[_Change] = []
    for old, new in zip(r.ops, m.ops, strict=False):
        if old != new:
            found.append(("operator", f"{new} for {old} in {m.pred}", old, new, m.fact))
    for old, new in zip(r.numbers, m.numbers, strict=False):
        if not (is_number(old) and is_number(new)) or float(old) != float(new):
            found.append(("literal", f"{new} for {old} in {m.pred}", old, new, m.fact))
    return found


def _one_change(
    change: _Change, reference: list[Clause], vocab: CaseVocabulary, schedules: Sequence[float]
) -> Verdict:
    what, words, old, new, fact = change
    if what == "operator":
        return Verdict("numerical", f"one operator changed: {words}")
    if fact and is_number(old) and telling(old) and _case_number(float(old), vocab):
        # A fact's number the case states, stated otherwise: the case, not the rule.
        return Verdict("entity_fact", f"a number of the case changed: {words}")
    if is_number(new):
        value = float(new)
        if _schedule_number(value, vocab, schedules):
            return Verdict("wrong_rule", f"{words}: another schedule's number")
        if telling(value) and not _case_number(value, vocab) and _stated(value, reference):
            return Verdict("wrong_rule", f"{words}: another row's number of the reference")
    return Verdict("numerical", f"one literal changed: {words}")


def _case_number(value: float, vocab: CaseVocabulary) -> bool:
    """Whether the case text states this very number (to the cent, no scaling)."""
    return any(abs(value - n) <= 0.005 for n in vocab.case_numbers)


def _stated(value: float, clauses: list[Clause]) -> bool:
    return any(is_number(n) and numbers_match(float(n), value) for c in clauses for n in c.numbers)


def _schedule_number(value: float, vocab: CaseVocabulary, schedules: Sequence[float]) -> bool:
    """Another part's number: the statutes state it, or another reference program of the
    domain does in its rules (and the case does not, exactly: a fee of 200 is not the
    case's 2)."""
    if _case_number(value, vocab) or not telling(value):
        return False
    return another_schedule(value, vocab, schedules)


def _new_numbers(
    ref_left: list[Clause], model_left: list[Clause], vocab: CaseVocabulary
) -> list[float]:
    """Telling numbers of the model's differing clauses that the reference's do not hold."""
    held = sorted({float(n) for c in ref_left for n in c.numbers if is_number(n)})
    found: list[float] = []
    for c in model_left:
        for n in c.numbers:
            if not is_number(n) or not telling(n) or vocab.in_case(n):
                continue
            value = float(n)
            if not near_any(value, held, exact=True) and value not in found:
                found.append(value)
    return found
