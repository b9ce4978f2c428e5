"""The rule/fact split of a reference program, verified in the sandbox (docs/settings.md).

``prolog/split.pl`` reads each program with SWI-Prolog's own reader and
``library(prolog_xref)`` and says, clause by clause, what it is; this module decides the
three parts from that:

* **query**: the goal directives, ``main/0`` and the printing predicates only the query
  calls (upstream's uscis ``run/0``);
* **case facts**: the clauses of predicates defined only by ground facts, each of which
  carries a constant the case states (a name, an amount, a date; for a fact of arity 0,
  its name);
* **rules**: everything else (rules, rule tables, helper facts, declarations).

A split is kept when the three parts, recombined (rules, facts, query), print the same
answer as the whole program in the sandbox, and that answer is the gold label.  Each
setting then has its own leak check (``CaseSplit.rules_given`` / ``facts_given``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._paths import PROLOG
from ..data.cases import Case
from ..data.domains import Domain, get_domain
from ..errors import DeonticBenchError
from ..prompting.render import demonstration
from ..reading.answers import Answer, answer_from_execution, parse_number
from ..reading.outcomes import judge_answer, within_tolerance
from ..solver import Solver

SPLITTER = PROLOG / "split.pl"
_SPLIT_TIMEOUT_S = 120.0


class SplitError(DeonticBenchError):
    """SWI-Prolog could not be run to split the reference programs."""


@dataclass(frozen=True)
class ProgramSplit:
    """A program in its three parts, each the program's own text of those clauses."""

    rules: str
    facts: str
    query: str
    fact_constants: tuple[tuple[str, tuple[str, ...]], ...]
    """(predicate, constants) of each case fact, in order."""
    answer_predicates: tuple[str, ...]
    """What the query calls to print the answer (the conclusion), as ``name/arity``."""

    def recombined(self) -> str:
        return join_parts(self.rules, self.facts, self.query)

    @property
    def fact_predicates(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(p for p, _ in self.fact_constants))


def join_parts(*parts: str) -> str:
    """Program parts joined in order, one blank line between them (the harness's one way
    of putting a given part and a model's part together)."""
    return "\n\n".join(p.strip("\n") for p in parts if p.strip()) + "\n"


# --- reading the program -------------------------------------------------------------


def read_clauses(programs: Sequence[str]) -> list[dict[str, Any]]:
    """split.pl's report of each program (``error`` when the reader stopped)."""
    swipl = shutil.which("swipl")
    if swipl is None:
        raise SplitError("swipl is not on PATH, so the reference programs cannot be split.")
    try:
        done = subprocess.run(
            [swipl, "--no-tty", "-q", "-f", "none", str(SPLITTER)],
            input=json.dumps(list(programs)).encode("utf-8", errors="replace"),
            capture_output=True,
            timeout=_SPLIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SplitError(f"prolog/split.pl did not finish ({exc}).") from None
    reports: dict[int, dict[str, Any]] = {}
    for line in done.stdout.decode("utf-8", errors="replace").splitlines():
        if line.startswith("{"):
            report = json.loads(line)
            reports[int(report["index"])] = report
    return [reports.get(i, {"error": "no report from split.pl"}) for i in range(len(programs))]


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class StatedConstants:
    """What a case states and its statutes do not: the numbers and words that tell a case
    fact (``alice``, ``236422``) from a helper fact or a statute's own encoding."""

    numbers: frozenset[float]
    words: frozenset[str]

    @classmethod
    def of(cls, case: Case) -> StatedConstants:
        text = " ".join((case.text, case.question, str(case.extra.get("state", ""))))
        numbers, words = _numbers(text), _words(text)
        return cls(numbers - _numbers(case.statutes), words - _words(case.statutes))

    def states(self, constant: str) -> bool:
        """A number the case states, or a name with a word only the case states."""
        try:
            return float(constant) in self.numbers
        except ValueError:
            pass
        return any(w in self.words for w in _WORD.findall(constant.lower()) if len(w) > 1)


def _numbers(text: str) -> frozenset[float]:
    found = (parse_number(m.group(0).rstrip(",")) for m in _NUMBER.finditer(text))
    return frozenset(v for v in found if v is not None)


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.lower()))


def split_program(program: str, report: dict[str, Any], stated: StatedConstants) -> ProgramSplit:
    """The three parts of ``program`` from split.pl's ``report`` (no ``error``)."""
    clauses: list[dict[str, Any]] = report["clauses"]
    query_preds = set(report["query"])
    by_pred: dict[str, list[dict[str, Any]]] = {}
    for clause in clauses:
        if clause["kind"] == "clause":
            by_pred.setdefault(clause["pred"], []).append(clause)
    fact_preds = {
        pred
        for pred, group in by_pred.items()
        if pred not in query_preds
        and all(c["ground_fact"] for c in group)
        and all(any(stated.states(k) for k in c["constants"]) for c in group)
    }
    rules: list[str] = []
    facts: list[str] = []
    query: list[str] = []
    constants: list[tuple[str, tuple[str, ...]]] = []
    for clause in clauses:
        text = program[clause["start"] : clause["end"]].strip()
        if clause["kind"] == "goal" or clause["pred"] in query_preds:
            query.append(text)
        elif clause["kind"] == "clause" and clause["pred"] in fact_preds:
            facts.append(text)
            constants.append((clause["pred"], tuple(clause["constants"])))
        else:
            rules.append(text)
    return ProgramSplit(
        rules="\n".join(rules),
        facts="\n".join(facts),
        query="\n".join(query),
        fact_constants=tuple(constants),
        answer_predicates=tuple(report["answer"]),
    )


# --- verifying it --------------------------------------------------------------------


@dataclass(frozen=True)
class CaseSplit:
    """One case's split and what became of it."""

    domain: str
    case_id: str
    split: ProgramSplit | None
    dropped: str | None = None
    """Why the case has no usable split (None when it is kept)."""
    rules_given_out: str | None = None
    """Why the case is left out of ``rules-given`` (the rules alone print an answer)."""
    facts_given_out: str | None = None
    """Why the case is left out of ``facts-given``: a given fact states the answer, or
    the parts in the order facts-given runs them (facts first) print another answer."""

    @property
    def kept(self) -> bool:
        return self.split is not None and self.dropped is None

    def usable_for(self, setting: str) -> bool:
        if not self.kept:
            return False
        leak = self.rules_given_out if setting == "rules-given" else self.facts_given_out
        return leak is None


def split_cases(cases: Sequence[Case], solver: Solver) -> list[CaseSplit]:
    """Split, recombine and check every case's reference program (in the sandbox)."""
    programs = [demonstration(get_domain(c.domain), c) for c in cases]
    reports = read_clauses(programs)
    splits: list[ProgramSplit | str] = []
    for case, program, report in zip(cases, programs, reports, strict=True):
        if "error" in report:
            splits.append(f"SWI-Prolog's reader stopped: {report['error']}")
            continue
        parts = split_program(program, report, StatedConstants.of(case))
        missing = [n for n, part in _parts(parts) if not part.strip()]
        splits.append(f"no {' and no '.join(missing)}" if missing else parts)
    # Four runs per split case: the whole program; the parts as rules-given runs them
    # (rules, then facts and query); the rules and query without facts; the parts as
    # facts-given runs them (facts, then rules and query).
    jobs: list[str] = []
    for program, made in zip(programs, splits, strict=True):
        if isinstance(made, ProgramSplit):
            jobs += [
                program,
                made.recombined(),
                join_parts(made.rules, made.query),
                join_parts(made.facts, made.rules, made.query),
            ]
    executions = iter(solver.map(jobs))
    out: list[CaseSplit] = []
    for case, outcome in zip(cases, splits, strict=True):
        if isinstance(outcome, str):
            out.append(CaseSplit(case.domain, case.id, None, dropped=outcome))
            continue
        domain = get_domain(case.domain)
        answers = [answer_from_execution(domain, next(executions)) for _ in range(4)]
        out.append(_checked_split(case, outcome, answers))
    return out


def _checked_split(case: Case, split: ProgramSplit, answers: Sequence[Answer]) -> CaseSplit:
    """A split case judged by its four runs (``split_cases``): kept or dropped, and what
    each setting must leave out."""
    domain = get_domain(case.domain)
    whole, joined, bare, facts_first = answers
    facts_out = answer_in_facts(domain, case, split)
    if facts_out is None and facts_first.value != whole.value:
        facts_out = (
            "the facts put before the rules print another answer "
            f"({facts_first.value or facts_first.reason})"
        )
    return CaseSplit(
        case.domain,
        case.id,
        split,
        dropped=_verdict(domain, case, whole, joined),
        rules_given_out=(
            f"the rules alone print an answer ({bare.value})" if bare.value is not None else None
        ),
        facts_given_out=facts_out,
    )


def _parts(split: ProgramSplit) -> list[tuple[str, str]]:
    return [("rules", split.rules), ("case facts", split.facts), ("query", split.query)]


def _verdict(domain: Domain, case: Case, whole: Answer, joined: Answer) -> str | None:
    if judge_answer(domain, whole, case.gold) != "correct":
        return f"the reference does not reproduce gold ({whole.value or whole.reason})"
    if joined.value != whole.value:
        return (
            "the recombined parts print another answer "
            f"({joined.value or joined.reason}, not {whole.value})"
        )
    return None


def answer_in_facts(domain: Domain, case: Case, split: ProgramSplit) -> str | None:
    """Why the case facts state the answer (None when they do not): a fact of the
    predicate the query prints, or a constant that is the gold label."""
    for pred, constants in split.fact_constants:
        if pred in split.answer_predicates:
            return f"a case fact defines the conclusion ({pred})"
        for constant in constants:
            if _is_gold(domain, constant, case.gold):
                return f"a case fact carries the gold label ({pred}: {constant})"
    return None


def _is_gold(domain: Domain, constant: str, gold: int | str) -> bool:
    if domain.label_kind == "numeric":
        value = parse_number(constant)
        return value is not None and within_tolerance(value, int(gold))
    return domain.canonical_label(constant) == gold
