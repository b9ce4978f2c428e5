"""One program's proof, readable by a person (``deonticbench exec FILE --explain``),
and with a case, its comparison with that case's reference program."""

from __future__ import annotations

from ..data.cases import Case
from ..data.domains import Domain
from ..reading.answers import answer_from_execution
from ..reading.outcomes import judge_answer
from ..solver import Execution, Limits, Solver
from ..store.record import Attempt
from .diagnose import Proven, diagnose
from .engine import run_analyser
from .proof import goal_runs, render, summary
from .run import reference_program
from .static import static_from_json


def explain_program(
    program: str,
    domain: Domain | None,
    execution: Execution,
    case: Case | None = None,
    solver: Solver | None = None,
    limits: Limits | None = None,
) -> str:
    """What ``deonticbench exec --explain`` prints: the program's static problems, the
    goal it ran with its proof, and (given the case) where it departs from the reference."""
    report = run_analyser(program, "full", solver, limits)
    static = static_from_json(report["static"])
    lines = ["--- analysis ---"]
    for err in static.syntax_errors:
        lines.append(f"syntax error at line {err.line}, column {err.column}: {err.message}")
    for und in static.undefined:
        lines.append(f"undefined: {und.name}/{und.arity} (called by {und.called_by})")
    for warn in static.warnings:
        lines.append(f"warning ({warn.kind}) at line {warn.line}: {warn.message}")
    runs = goal_runs(report)
    model = Proven.of(domain, report) if domain else None
    chosen = model.run if model else (runs[-1] if runs else None)
    if domain is None:
        lines.append("(no --domain: showing the last goal the program runs)")
    lines.append(f"answer goal: {summary(chosen)}")
    if chosen is not None:
        lines.append(f"goal: {chosen.goal}    [{chosen.kind}, line {chosen.line}, {chosen.status}]")
        if chosen.error:
            lines.append(f"error: {chosen.error.strip()}")
        lines.extend(render(chosen.proof, indent=1))
    if case is not None and domain is not None:
        answer = answer_from_execution(domain, execution)
        attempt = Attempt(
            index=0,
            prompt_hash="",
            response=None,
            program=program,
            execution=execution.to_dict(),
            answer=answer.value,
            abstain_reason=answer.reason,
            outcome=judge_answer(domain, answer, case.gold),
        )
        reference = Proven.of(
            domain, run_analyser(reference_program(domain, case), "full", solver, limits)
        )
        diag = diagnose(domain, case, attempt, model, reference)
        lines.append(f"--- against the reference of {case.id} ---")
        lines.append(f"outcome:             {diag.outcome}")
        if diag.category:
            lines.append(f"failure category:    {diag.category} ({diag.reason})")
        lines.append(f"derivation:          {diag.derivation}")
        lines.append(f"signature Jaccard:   {_num(diag.signature_jaccard)}")
        lines.append(f"fact coverage:       {_num(diag.fact_coverage)}")
        if diag.missing_constants:
            lines.append(f"  missing constants: {', '.join(map(str, diag.missing_constants))}")
        lines.append(f"value recall:        {_num(diag.value_recall)}")
        if diag.first_divergence:
            d = diag.first_divergence
            lines.append(
                f"first divergence:    {d['value']} ({d['goal']}) in {d['clause']}, "
                f"reference line {d['line']}"
            )
        if diag.hallucinated_constants:
            lines.append(f"hallucinated:        {', '.join(map(str, diag.hallucinated_constants))}")
    return "\n".join(lines)


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
