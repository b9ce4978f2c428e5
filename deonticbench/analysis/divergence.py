"""Where a model's computation first departs from the reference's, and what changed
there: the rule that tells a numerical slip from a wrong rule (docs/analysis.md, 4).

The reference proof's steps (arithmetic and comparisons, failed attempts included) are
walked in execution order; the **divergence** is the first one the model does not
reproduce (an arithmetic value it never reaches, a comparison of the same two numbers
with the same operator that it never makes).  At the divergence the model has either a
counterpart of the reference's structure that differs in **one operator or one
literal**, or none:

* an arithmetic step from the same inputs with another result (an operator changed);
* an arithmetic step of the same shape (the expression with its numbers blanked) whose
  numbers differ in one place, a literal of the program on both sides (a rate, a fee,
  a bound changed);
* a comparison of the same two numbers with another operator (``>`` for ``>=``);
* a comparison with the same operator and the same value on one side but another
  literal on the other (a threshold changed).

One operator or one literal changed is ``numerical``.  It is a ``wrong_rule`` instead
when the changed literal equals a constant stated elsewhere in the statutes or in the
rules of the domain's other reference programs (the model took another subsection's or
schedule's number: the rule chosen is wrong), or when several literals of the
reference's answer path are changed together (another schedule), or when the model has
no counterpart of the reference's structure at all.

This is the fallback: a model with the reference's clauses is judged clause by clause
first (``structure``), whatever number diverges first.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .compare import CaseVocabulary, Holdings, is_number, near_any, numbers_match, telling
from .proof import Node, walk

MIRROR = {"<": ">", ">": "<", "=<": ">=", ">=": "=<", "=:=": "=:=", "=\\=": "=\\="}


@dataclass(frozen=True)
class Verdict:
    """What the divergence shows: ``numerical`` or ``wrong_rule``, and why."""

    category: str
    reason: str


@dataclass(frozen=True)
class _Arith:
    shape: str | None
    inputs: tuple[float, ...]
    value: float
    goal: str


@dataclass(frozen=True)
class _Cmp:
    op: str
    a: float
    b: float
    goal: str


def _steps(proof: tuple[Node, ...]) -> list[_Arith | _Cmp]:
    found: list[_Arith | _Cmp] = []
    for node, _ in walk(proof):
        kind = node.get("k")
        if kind == "arith" and is_number(node.get("out")):
            inputs = tuple(float(x) for x in node.get("in") or [] if is_number(x))
            shape = node.get("s")
            found.append(
                _Arith(
                    shape=shape if isinstance(shape, str) else None,
                    inputs=inputs,
                    value=float(node["out"]),
                    goal=str(node.get("g", "")),
                )
            )
        elif kind == "cmp":
            args = node.get("args") or []
            if len(args) == 2 and all(is_number(a) for a in args):
                found.append(
                    _Cmp(str(node.get("op")), float(args[0]), float(args[1]), str(node.get("g")))
                )
    return found


def _computed(steps: Sequence[_Arith | _Cmp], extra: Sequence[float]) -> tuple[float, ...]:
    return tuple(sorted({s.value for s in steps if isinstance(s, _Arith)} | set(extra)))


def _aggregates(proof: tuple[Node, ...]) -> list[float]:
    return [
        float(n["out"])
        for n, _ in walk(proof)
        if n.get("k") not in ("arith", "cmp") and is_number(n.get("out"))
    ]


def _oriented(c: _Cmp) -> list[tuple[str, float, float]]:
    """The comparison as written and mirrored (``a > b`` is ``b < a``)."""
    return [(c.op, c.a, c.b), (MIRROR.get(c.op, c.op), c.b, c.a)]


def _same_cmp(c: _Cmp, d: _Cmp) -> bool:
    return any(
        op == d.op and numbers_match(a, d.a) and numbers_match(b, d.b) for op, a, b in _oriented(c)
    )


def statute_constant(value: float, vocab: CaseVocabulary) -> bool:
    """Whether the statutes state exactly this number (a percentage as its fraction too,
    but no other scaling: a rate of 0.18 is not 'section 18')."""
    ordered = vocab.statute_numbers
    i = bisect_left(ordered, value - 1e-9)
    return i < len(ordered) and abs(ordered[i] - value) <= 1e-9 * max(1.0, abs(value))


def another_schedule(value: float, vocab: CaseVocabulary, schedules: Sequence[float]) -> bool:
    """Another part's number: the statutes state it, or another reference program of the
    domain does in its rules (``schedules``, exactly)."""
    return statute_constant(value, vocab) or (telling(value) and _exactly_in(value, schedules))


def _exactly_in(value: float, ordered: Sequence[float]) -> bool:
    """Whether a sorted list holds this very number (no percentage scaling: a schedule's
    2401 is not a rate of 24.01)."""
    i = bisect_left(ordered, value - 1e-9)
    return i < len(ordered) and abs(ordered[i] - value) <= 1e-9 * max(1.0, abs(value))


def first_divergence(
    reference: tuple[Node, ...],
    model: tuple[Node, ...],
    reference_constants: Sequence[Any],
    model_constants: Sequence[Any],
    vocab: CaseVocabulary,
    schedules: Sequence[float] = (),
) -> Verdict | None:
    """The verdict at the first reference step the model does not reproduce and has a
    counterpart of; None when there is none (the caller then decides between a wrong
    rule and unknown).

    A step downstream of a change is not reproduced either, and a failed clause's
    comparisons are recorded after the steps of the clause that succeeded, so the steps
    are searched in order for the first whose counterpart shows a change the reference
    program does not already hold (an operator, or a literal it never states); only
    when none does, for one that puts another of its own constants in a literal's place.
    """
    ref_steps, model_steps = _steps(reference), _steps(model)
    ref_computed = _computed(ref_steps, _aggregates(reference))
    model_computed = _computed(model_steps, _aggregates(model))
    reached = Holdings.of(
        [s.value for s in model_steps if isinstance(s, _Arith)]
        + [x for s in model_steps if isinstance(s, _Arith) for x in s.inputs]
        + _aggregates(model)
    ).numbers
    model_cmps = [s for s in model_steps if isinstance(s, _Cmp)]
    model_ariths = [s for s in model_steps if isinstance(s, _Arith)]
    outputs = Holdings.of([s.value for s in model_ariths] + _aggregates(model)).numbers
    own = Holdings.of(reference_constants)
    changes: list[_Change] = []
    for step in ref_steps:
        if isinstance(step, _Arith):
            if step.value in (0.0, 1.0) or near_any(step.value, outputs):
                continue
            found = _arith_changes(step, model_ariths, ref_computed, model_computed)
            if not found and near_any(step.value, reached):
                continue  # the model has the value (from a fact, say) and no other step
        else:
            if any(_same_cmp(step, m) for m in model_cmps):
                continue
            found = _cmp_changes(step, model_cmps, ref_computed, model_computed)
        for change in found:
            if change.new is None or not own.has(change.new):
                return _judge(change, own, model_constants, vocab, schedules)
        changes.extend(found)
    # No counterpart shows a change of its own: the divergence is downstream of one
    # the proofs do not pair up (a branch another clause took).  The programs' own
    # numbers then say whether one literal changed.
    single = one_literal_changed(reference_constants, model_constants, vocab, schedules)
    if single is not None:
        return single
    if changes:
        return _judge(changes[0], own, model_constants, vocab, schedules)
    return None


def one_literal_changed(
    reference_constants: Sequence[Any],
    model_constants: Sequence[Any],
    vocab: CaseVocabulary,
    schedules: Sequence[float] = (),
) -> Verdict | None:
    """``numerical`` when the model's program states exactly one number the reference's
    does not, in place of at most one of the reference's, and the statutes do not state
    it (else it is another part's number, which ``first_divergence`` judges)."""
    own, theirs = Holdings.of(reference_constants), Holdings.of(model_constants)
    new = _distinct(v for v in model_constants if _plain(v, vocab) and not own.has(v))
    gone = _distinct(v for v in reference_constants if _plain(v, vocab) and not theirs.has(v))
    if len(new) != 1 or len(gone) > 1 or another_schedule(new[0], vocab, schedules):
        return None
    was = f"{gone[0]:g}" if gone else "a number of the reference"
    return Verdict("numerical", f"one literal changed: {new[0]:g} for {was}")


def _plain(value: Any, vocab: CaseVocabulary) -> bool:
    """A number a program writes that is neither trivial (0, 1) nor stated by the case."""
    return is_number(value) and float(value) not in (0.0, 1.0) and not vocab.in_case(value)


def _distinct(values: Iterable[Any]) -> list[float]:
    found: list[float] = []
    for value in values:
        if not any(numbers_match(float(value), f) for f in found):
            found.append(float(value))
    return found


@dataclass(frozen=True)
class _Change:
    what: str
    """operator, comparison or literal."""
    detail: str
    old: float | None = None
    new: float | None = None
    several: bool = False


def _literal(value: float, computed: tuple[float, ...]) -> bool:
    return not near_any(value, computed)


def _arith_changes(
    step: _Arith,
    model: list[_Arith],
    ref_computed: tuple[float, ...],
    model_computed: tuple[float, ...],
) -> list[_Change]:
    found: list[_Change] = []
    for m in model:
        if m.inputs and same_inputs(step.inputs, m.inputs):
            return [
                _Change(
                    "operator", f"same inputs, {m.value:g} instead of {step.value:g} ({m.goal})"
                )
            ]
    for m in model:
        if step.shape is None or m.shape != step.shape or len(m.inputs) != len(step.inputs):
            continue
        differ = [
            (r, x) for r, x in zip(step.inputs, m.inputs, strict=True) if not numbers_match(r, x)
        ]
        if not differ or not all(
            _literal(r, ref_computed) and _literal(x, model_computed) for r, x in differ
        ):
            continue
        if len(differ) == 1:
            old, new = differ[0]
            found.append(_Change("literal", f"{new:g} instead of {old:g} in {m.goal}", old, new))
        else:
            shown = ", ".join(f"{x:g} for {r:g}" for r, x in differ)
            found.append(_Change("literal", f"{shown} in {m.goal}", several=True))
    return found


def _cmp_changes(
    step: _Cmp,
    model: list[_Cmp],
    ref_computed: tuple[float, ...],
    model_computed: tuple[float, ...],
) -> list[_Change]:
    for m in model:
        for op, a, b in _oriented(step):
            if numbers_match(a, m.a) and numbers_match(b, m.b) and op != m.op:
                return [_Change("comparison", f"{m.goal} where the reference compares {step.goal}")]
    found: list[_Change] = []
    for m in model:
        for op, a, b in _oriented(step):
            if op != m.op:
                continue
            for kept, (old, new) in (((a, m.a), (b, m.b)), ((b, m.b), (a, m.a))):
                if not numbers_match(*kept) or numbers_match(old, new):
                    continue
                if _literal(old, ref_computed) and _literal(new, model_computed):
                    found.append(
                        _Change(
                            "literal", f"threshold {new:g} instead of {old:g} ({m.goal})", old, new
                        )
                    )
    return found


def same_inputs(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    """Whether two steps read the same numbers (in any order); never for no inputs."""
    if not a or len(a) != len(b):
        return False
    rest = list(b)
    for x in a:
        hit = next((y for y in rest if numbers_match(x, y)), None)
        if hit is None:
            return False
        rest.remove(hit)
    return True


def _judge(
    change: _Change,
    reference_constants: Holdings,
    model_constants: Sequence[Any],
    vocab: CaseVocabulary,
    schedules: Sequence[float] = (),
) -> Verdict:
    if change.what != "literal":
        label = "operator" if change.what == "operator" else "comparison operator"
        return Verdict("numerical", f"{label} changed: {change.detail}")
    if change.several:
        return Verdict("wrong_rule", f"several constants changed: {change.detail}")
    assert change.new is not None and change.old is not None
    if another_schedule(change.new, vocab, schedules) and not vocab.in_case(change.new):
        return Verdict(
            "wrong_rule",
            f"{change.detail}: {change.new:g} is a constant of another part of the law",
        )
    new = _new_literals(reference_constants, model_constants, vocab)
    if len(new) >= 2:
        shown = ", ".join(f"{v:g}" for v in new[:4])
        return Verdict("wrong_rule", f"several constants the reference never states: {shown}")
    return Verdict("numerical", f"one literal changed: {change.detail}")


def _new_literals(
    reference_constants: Holdings,
    model_constants: Sequence[Any],
    vocab: CaseVocabulary,
) -> list[float]:
    """Numbers the model's program states that the reference program states nowhere:
    not numbers the case states, not small integers or years.  One is the literal that
    changed; a second means several constants changed together, in a branch the case
    takes or not (another schedule)."""
    found: list[float] = []
    for value in model_constants:
        if not is_number(value) or not telling(value):
            continue
        number = float(value)
        if reference_constants.has(number) or vocab.in_case(number):
            continue
        if not any(numbers_match(number, f) for f in found):
            found.append(number)
    return found
