"""The failure taxonomy (paper Table 4) and the derivation axis, decided per attempt.

Failure category, for every wrong or abstained program-mode attempt, the first rule
that applies:

1. ``impl_bug``: the program did not run to an answer: no program, a syntax error, a
   runtime error, a limit, no answer line, or an undefined predicate on the answer's path.
2. ``unknown``: the evidence cannot decide: the reference program has no proof (its
   analysis failed or no goal printed its answer), or the model's answer goal has none.
3. ``entity_fact``: a constant of the case that the reference proof's facts use is
   missing from the constants the model proof uses (fact coverage below 1).
4. ``numerical``: facts agree, and the model differs from the reference in one
   operator or one literal that is not another row's or schedule's number.
5. ``wrong_rule``: facts agree but another rule applies: a condition negated or dropped,
   a sibling clause's body, a clause dropped, another rule table, another schedule's
   number, several constants changed; for programs without arithmetic, a different
   answer from the same facts.

   The two are told apart by structure first (``structure.structural_verdict``: when the
   model has the reference's clauses, whatever number diverges first), then, for a
   program of the model's own structure, by values (``divergence.first_divergence``,
   the same-inputs and threshold tests below, an unreached reference value).
6. ``unknown`` otherwise (every reference value reached, yet a different answer).

Derivation, for every program-mode attempt (correct ones too), the first that applies:
``no_proof`` (no answer goal, or its proof failed), ``hard_coded`` (the proof uses no
fact stating something of the case, or, in a binary domain, rests on a failed attempt
that tried a clause whose whole body is ``fail``, or the printed answer is a constant
of a fact it uses), ``ungrounded`` (a fact it uses states a number found in neither the case nor the
statutes), ``grounded``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..data.cases import Case
from ..data.domains import Domain
from ..store.record import Attempt
from . import compare
from .compare import CaseVocabulary, numbers_match
from .divergence import first_divergence, same_inputs
from .proof import GoalRun, answer_goal, goal_runs, summary, walk
from .static import signature_jaccard, static_from_json
from .structure import Side, structural_verdict

Category = Literal["wrong_rule", "entity_fact", "numerical", "impl_bug", "unknown"]
CATEGORIES: tuple[Category, ...] = ("wrong_rule", "entity_fact", "numerical", "impl_bug", "unknown")
Derivation = Literal["grounded", "hard_coded", "ungrounded", "no_proof"]
DERIVATIONS: tuple[Derivation, ...] = ("grounded", "hard_coded", "ungrounded", "no_proof")
THRESHOLD_FACTOR = 2.0


@dataclass
class Diagnosis:
    outcome: str
    category: Category | None
    """None for a correct attempt."""
    reason: str
    derivation: Derivation
    signature_jaccard: float | None
    undefined: list[str] = field(default_factory=list)
    syntax_errors: int = 0
    fact_coverage: float | None = None
    missing_constants: list[Any] = field(default_factory=list)
    value_recall: float | None = None
    first_divergence: dict[str, Any] | None = None
    hallucinated_constants: list[float] = field(default_factory=list)
    proof_summary: str = ""
    opaque: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Proven:
    """One analysed program: its static report and its answer goal's proof."""

    report: dict[str, Any]
    run: GoalRun | None

    @classmethod
    def of(cls, domain: Domain, report: dict[str, Any] | None) -> Proven | None:
        if report is None:
            return None
        found = answer_goal(domain, goal_runs(report))
        return cls(report=report, run=found[0] if found else None)

    @property
    def proof(self) -> tuple[dict[str, Any], ...]:
        return self.run.proof if self.run and self.run.succeeded else ()

    def side(self) -> Side:
        """The program's clauses, for the structural comparison."""
        return Side.of(self.report["static"])


def diagnose(
    domain: Domain,
    case: Case,
    attempt: Attempt,
    model: Proven | None,
    reference: Proven | None,
    schedules: Sequence[float] = (),
) -> Diagnosis:
    """``schedules``: the numbers the domain's reference programs state in their rules
    (``schedules.law_numbers``): a literal changed to one of them is another schedule's."""
    vocab = CaseVocabulary.of(case)
    static = static_from_json(model.report["static"]) if model else None
    ref_static = static_from_json(reference.report["static"]) if reference else None
    jaccard = (
        signature_jaccard(static.signatures, ref_static.signatures)
        if static is not None and ref_static is not None
        else None
    )
    proof = model.proof if model else ()
    ref_proof = reference.proof if reference else ()
    coverage: float | None = None
    missing: list[Any] = []
    recall: float | None = None
    divergence: compare.Step | None = None
    if ref_proof and proof:
        coverage, missing = compare.fact_coverage(ref_proof, proof, vocab)
        recall, divergence = compare.value_recall(ref_proof, proof)
    diag = Diagnosis(
        outcome=attempt.outcome,
        category=None,
        reason="",
        derivation=_derivation(attempt, model, vocab, domain.label_kind == "binary"),
        signature_jaccard=jaccard,
        undefined=[f"{u.name}/{u.arity}" for u in static.undefined] if static else [],
        syntax_errors=len(static.syntax_errors) if static else 0,
        fact_coverage=coverage,
        missing_constants=missing,
        value_recall=recall if domain.label_kind == "numeric" else None,
        first_divergence=(
            {
                "value": divergence.value,
                "goal": divergence.goal,
                "clause": divergence.clause,
                "line": divergence.line,
            }
            if divergence
            else None
        ),
        hallucinated_constants=compare.hallucinated_constants(proof, vocab),
        proof_summary=summary(model.run) if model else "not analysed",
        opaque=sum(1 for n, _ in walk(proof) if n.get("k") == "opaque"),
    )
    if attempt.outcome != "correct":
        diag.category, diag.reason = _category(attempt, model, reference, diag, vocab, schedules)
    return diag


def _category(
    attempt: Attempt,
    model: Proven | None,
    reference: Proven | None,
    diag: Diagnosis,
    vocab: CaseVocabulary,
    schedules: Sequence[float] = (),
) -> tuple[Category, str]:
    execution = attempt.execution or {}
    status = execution.get("status")
    if attempt.program is None:
        return "impl_bug", "no program"
    if diag.syntax_errors:
        return "impl_bug", "syntax error"
    if status not in (None, "ok") or attempt.outcome == "abstain":
        undefined = _undefined_on_path(model)
        if undefined:
            return "impl_bug", f"undefined predicate on the answer's path: {undefined}"
        return "impl_bug", f"no answer ({attempt.abstain_reason or status})"
    if reference is None or not reference.proof:
        return "unknown", "the reference program has no proof"
    if model is None or not model.proof:
        return "unknown", "the model's answer has no proof"
    ref_proof, proof = reference.proof, model.proof
    absent = _absent_from_program(ref_proof, model, reference, vocab)
    if absent:
        shown = ", ".join(str(m) for m in absent[:4])
        return "entity_fact", f"case constants the model's program never states: {shown}"
    # The rule applied to structure first: a model with the reference's clauses is read
    # clause by clause, whatever number diverges first (structure.py).
    verdict = structural_verdict(reference.side(), model.side(), vocab, schedules)
    if verdict is not None:
        return verdict.category, verdict.reason  # type: ignore[return-value]
    steps = compare.computed_steps(ref_proof)
    verdict = first_divergence(
        ref_proof,
        proof,
        reference.report["static"].get("constants") or [],
        model.report["static"].get("constants") or [],
        vocab,
        schedules,
    )
    if verdict is not None:
        return verdict.category, verdict.reason  # type: ignore[return-value]
    _, first = compare.value_recall(ref_proof, proof)
    if first is not None:
        for step in compare.all_steps(proof):
            if same_inputs(first.inputs, step.inputs) and not numbers_match(
                first.value, step.value
            ):
                return "numerical", f"same inputs, {step.value:g} instead of {first.value:g}"
    threshold = _threshold_flip(ref_proof, proof, vocab, steps)
    if threshold:
        return "numerical", threshold
    if first is not None:
        return "wrong_rule", f"reference value {first.value:g} never reached ({first.goal})"
    if not steps:
        return "wrong_rule", "same facts, another conclusion"
    return "unknown", "every reference value reached, yet another answer"


def _absent_from_program(
    ref_proof: tuple[dict[str, Any], ...], model: Proven, reference: Proven, vocab: CaseVocabulary
) -> list[Any]:
    """Case constants the reference proof's facts use that the model's program states
    nowhere (in no fact and no rule: a program may write a case number into a rule).
    A constant the reference's clauses do not state either came from the query the
    directive asks (``tax("Alice", 2015, T)``), which is no fact of either program."""
    stated = compare.Holdings.of(model.report["static"].get("constants") or [])
    own = compare.Holdings.of(reference.report["static"].get("constants") or [])
    return [c for c in compare.case_constants(ref_proof, vocab) if not stated.has(c) and own.has(c)]


def _threshold_flip(
    ref_proof: tuple[dict[str, Any], ...],
    proof: tuple[dict[str, Any], ...],
    vocab: CaseVocabulary,
    steps: list[compare.Step],
) -> str | None:
    data = [s.value for s in steps] + [
        float(v) for v in compare.case_constants(ref_proof, vocab) if compare.is_number(v)
    ]
    model_cmps = compare.comparisons(proof, tried=True)
    for a, b, goal in compare.comparisons(ref_proof):
        for x, t in ((a, b), (b, a)):
            if not any(numbers_match(x, d) for d in data) or any(numbers_match(t, d) for d in data):
                continue
            if any(
                (numbers_match(x, ma) and numbers_match(t, mb))
                or (numbers_match(x, mb) and numbers_match(t, ma))
                for ma, mb, _ in model_cmps
            ):
                continue  # the model tests the reference's own threshold too
            for ma, mb, mgoal in model_cmps:
                for mx, mt in ((ma, mb), (mb, ma)):
                    if not numbers_match(x, mx) or numbers_match(t, mt):
                        continue
                    if t == 0 or not (1 / THRESHOLD_FACTOR <= mt / t <= THRESHOLD_FACTOR):
                        continue
                    if _side(x, t) != _side(x, mt):
                        return f"threshold {mt:g} instead of {t:g} for {x:g} ({mgoal} vs {goal})"
    return None


def _side(x: float, t: float) -> int:
    return (x > t) - (x < t)


def _undefined_on_path(model: Proven | None) -> str | None:
    if model is None:
        return None
    for run in goal_runs(model.report):
        if run.undefined:
            return run.undefined
    return None


def _derivation(
    attempt: Attempt, model: Proven | None, vocab: CaseVocabulary, binary: bool
) -> Derivation:
    return derivation(attempt.answer, model, vocab, binary)[0]


def derivation(
    answer: float | str | None, model: Proven | None, vocab: CaseVocabulary, binary: bool
) -> tuple[Derivation, str]:
    """How the printed ``answer`` was derived (section 5 of docs/analysis.md), and why."""
    if model is None or model.run is None or not model.run.succeeded or not model.proof:
        return "no_proof", "no goal printed the answer, or its re-run failed"
    if answer is None:
        return "no_proof", "no answer"
    proof = model.proof
    if not compare.case_facts(proof, vocab):
        return "hard_coded", "the proof uses no fact that states something of the case"
    if binary and any(n.get("k") == "fail_rule" for n, _ in walk(proof)):
        # A decision that rests on a tried clause `p :- fail.`: written in, not derived.
        # (In numeric programs such clauses prune alternatives; they decide nothing.)
        return "hard_coded", "the decision rests on a clause whose whole body is fail"
    for node in compare._facts(proof):
        for value in node.get("v") or []:
            if isinstance(answer, float) and compare.is_number(value):
                if abs(float(value) - answer) <= 0.5 and abs(answer) >= 13:
                    return "hard_coded", f"the answer is a constant of the fact {node.get('g')}"
            elif (
                isinstance(answer, str)
                and isinstance(value, str)
                and value.strip().lower() == answer.lower()
            ):
                return "hard_coded", f"the answer is a constant of the fact {node.get('g')}"
    hallucinated = compare.hallucinated_constants(proof, vocab)
    if hallucinated:
        shown = ", ".join(f"{v:g}" for v in hallucinated[:4])
        return (
            "ungrounded",
            f"case facts state numbers neither the case nor the statutes do: {shown}",
        )
    return "grounded", "the answer follows through rules from facts of the case"
