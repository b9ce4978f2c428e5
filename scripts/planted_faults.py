"""Validate the failure taxonomy and ``hard_coded`` with planted faults.

From reference programs (default: every hard case of sara_numeric and airline), this
makes mutants with ONE known fault each, planted by ``prolog/mutate.pl`` at the level of
terms (``KINDS`` lists every kind; docs/analysis.md, section 7, describes each):

* ``entity_fact``: a number of a fact the reference proof uses, that the case text states,
  is changed (x -> 2x + 7);
* ``wrong_rule``: another rule applies: a number of the law becomes another schedule's
  (one, or several changed together); a whole rule table of another case of the domain
  is swapped in; a call of a derived condition is negated or dropped; a clause is given
  a sibling clause's body; a rule clause is dropped;
* ``numerical``: an arithmetic or comparison operator is swapped, a threshold is moved
  past the value compared with it (from above and from below), or a constant becomes a
  number no schedule states;
* ``impl_bug``: a call of a predicate the program defines is replaced by a call of one
  it does not (an undefined call);
* ``hard_coded``: the first predicate on the answer's proof is replaced by one fact, its
  solved head (the answer stays right; the derivation is gone);
* ``none``: no fault (a control: must stay correct and not be hard_coded).

Every mutant also has every predicate renamed consistently, its predicates reordered and
the clauses of a predicate shuffled where their order cannot matter, as a model's
program would differ.  A candidate is kept only if the fault shows: wrong answer
(entity_fact, wrong_rule, numerical), no answer (impl_bug), right answer (hard_coded,
none).  The mutants go through ``deonticbench eval --model replay:...`` and ``deonticbench
analyze``; per class precision and recall, per kind recall and the confusion matrix are
printed (for all domains and each domain) and written.

    python scripts/planted_faults.py --out /tmp/planted              # all hard cases
    python scripts/planted_faults.py --cases 10 --domains sara_binary --out /tmp/b
    python scripts/planted_faults.py --evaluate RUN --labels labels.jsonl   # another set

A labels file has one JSON object per line: domain, case_id, mode, sample, expected
(one of the classes above).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deonticbench._paths import PROLOG
from deonticbench.analysis.compare import CaseVocabulary, is_number, telling
from deonticbench.analysis.diagnose import Proven, derivation
from deonticbench.analysis.engine import analyse_many, prolog_string
from deonticbench.analysis.proof import answer_goal, goal_runs, walk
from deonticbench.analysis.run import domain_schedules, read_analysis, reference_program
from deonticbench.analysis.structure import proof_lines
from deonticbench.data.cases import Case, load_cases
from deonticbench.data.domains import Domain, get_domain
from deonticbench.reading.answers import answer_from_execution
from deonticbench.reading.outcomes import judge_answer
from deonticbench.solver import Limits, Solver
from deonticbench.solver.pool import SANDBOX_PROLOG

TAXONOMY = ("wrong_rule", "entity_fact", "numerical", "impl_bug")
CLASSES = (*TAXONOMY, "hard_coded", "none")
EXPECTED_OUTCOME = {
    "entity_fact": "wrong",
    "wrong_rule": "wrong",
    "numerical": "wrong",
    "impl_bug": "abstain",
    "hard_coded": "correct",
    "none": "correct",
}
TRIES = 4
RULE_TRIES = 6
"""Candidates tried per kind (a rule fault more often leaves the answer as it was)."""
MODE = "zero-shot"


def _prolog_job(solver: Solver, goal: str) -> str:
    mutate = PROLOG / "mutate.pl"
    call = f":- initialization({goal}, main).\n"
    if solver.sandbox == "bwrap":
        return f":- encoding(utf8).\n:- use_module('{SANDBOX_PROLOG}/mutate.pl').\n{call}"
    return mutate.read_text(encoding="utf-8") + "\n" + call


def places(solver: Solver, program: str) -> dict[str, Any]:
    execution = solver.run(_prolog_job(solver, f"mutate_list({prolog_string(program)})"))
    line = next((ln for ln in execution.stdout.splitlines() if ln.startswith("{")), None)
    if line is None:
        return {"numbers": [], "operators": [], "calls": [], "clauses": [], "tables": []}
    found: dict[str, Any] = json.loads(line)
    return found


def mutants(solver: Solver, program: str, faults: Sequence[str], seed: int) -> list[str | None]:
    if not faults:
        return []
    goal = f"mutate_batch({prolog_string(program)}, [{', '.join(faults)}], {seed})"
    limits = Limits(output_bytes=8 * 1024 * 1024)
    execution = solver.run(_prolog_job(solver, goal), limits)
    out: list[str | None] = [None] * len(faults)
    for line in execution.stdout.splitlines():
        if line.startswith("{"):
            obj = json.loads(line)
            if "program" in obj:
                out[obj["i"]] = obj["program"]
    return out


def _number_literal(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


KINDS: dict[str, tuple[str, ...]] = {
    "entity_fact": ("case_constant",),
    "wrong_rule": (
        "other_schedule",
        "several_constants",
        "table_swap",
        "negated_condition",
        "dropped_condition",
        "sibling_body",
        "dropped_clause",
    ),
    "numerical": (
        "arith_operator",
        "comparison_operator",
        "threshold_above",
        "threshold_below",
        "constant",
    ),
    "impl_bug": ("undefined_call",),
    "hard_coded": ("solved_head",),
    "none": ("none",),
}
"""The kinds of fault planted per class.  numerical: an arithmetic operator swapped; a
comparison's operator changed, its two sides kept; a threshold moved past the case value
compared with it, when that value was above the threshold and when it was below; a rate
or constant literal of an arithmetic rule (or of a rule-table fact it reads) changed to a
value the statutes do not state.  wrong_rule: one literal replaced by a constant the
statutes state elsewhere (another subsection's or schedule's number); several literals
of the law changed together; and the faults that replace which rule applies: a whole rule
table of another case of the domain swapped in (the same predicate, other numbers), a
call of a derived condition negated or dropped, a clause given a sibling clause's body,
a rule clause dropped."""
RULE_KINDS = (
    "table_swap",
    "negated_condition",
    "dropped_condition",
    "sibling_body",
    "dropped_clause",
)
OTHER_OPERATORS = {
    ">": (">=", "<"),
    ">=": (">", "=<"),
    "<": ("=<", ">"),
    "=<": ("<", ">="),
    "=:=": ("=\\=",),
    "=\\=": ("=:=",),
}


def candidate_faults(
    domain: Domain,
    case: Case,
    program: str,
    proven: Proven | None,
    where: dict[str, Any],
    donors: Sequence[dict[str, Any]] = (),
    schedules: Sequence[float] = (),
) -> dict[tuple[str, str], list[str]]:
    """Faults to try, by (class, kind), most promising first.  ``donors``: the rule
    tables of the domain's other cases (``places``' tables); ``schedules``: the numbers
    the domain's reference programs state in their rules (a slip never lands on one)."""
    vocab = CaseVocabulary.of(case)
    proof = proven.proof if proven else ()
    fact_numbers = {
        round(float(v), 6)
        for node, _ in walk(proof)
        if node.get("k") == "fact" and not node.get("tried")
        for v in node.get("v") or []
        if is_number(v)
    }
    faults: dict[tuple[str, str], list[str]] = {
        (cls, kind): [] for cls, kinds in KINDS.items() for kind in kinds
    }
    if proven is not None and _grounded(domain, case, proven, vocab):
        # A control is a clean program: a reference that is itself hard-coded or
        # ungrounded (see docs/data-audit.md) is no control.
        faults[("none", "none")].append("none")
    on_path = {
        round(float(x), 6)
        for node, _ in walk(proof)
        for x in (node.get("in") or []) + (node.get("args") or []) + (node.get("v") or [])
        if is_number(x)
    }
    law: list[tuple[int, float]] = []
    for place in where["numbers"]:
        value, k, context = place["value"], place["k"], place["where"]
        if not is_number(value):
            continue
        used = round(float(value), 6) in fact_numbers
        stated = vocab.in_case(value)
        if context == "fact" and used and stated and telling(value):
            new = value * 2 + 7
            faults[("entity_fact", "case_constant")].append(f"number({k}, {_number_literal(new)})")
        elif (context == "fact" and used and not stated and telling(value)) or (
            context == "arith" and not stated and telling(value) and value != 0
        ):
            if round(float(value), 6) in on_path and value not in [v for _, v in law]:
                law.append((k, value))  # several constants: distinct, each on the path
            changed = _off_statute(value, vocab, schedules)
            faults[("numerical", "constant")].append(f"number({k}, {_number_literal(changed)})")
            for other in _statute_neighbours(value, vocab)[:2]:
                faults[("wrong_rule", "other_schedule")].append(
                    f"number({k}, {_number_literal(other)})"
                )
    for (k1, v1), (k2, v2) in itertools.pairwise(law):
        pair = f"{k1}-{_number_literal(_scaled(v1))}, {k2}-{_number_literal(_scaled(v2))}"
        faults[("wrong_rule", "several_constants")].append(f"numbers([{pair}])")
    for op in where["operators"]:
        faults[("numerical", "arith_operator")].append(f"operator({op['k']})")
    for cmp in where.get("comparisons", []):
        for new_op in OTHER_OPERATORS.get(cmp["op"], ()):
            faults[("numerical", "comparison_operator")].append(
                f"comparison({cmp['k']}, {_quoted_op(new_op)})"
            )
    for kind, fault in _threshold_faults(proof, where, vocab, schedules):
        faults[("numerical", kind)].append(fault)
    for kind, fault in _rule_faults(proof, where, vocab, donors):
        faults[("wrong_rule", kind)].append(fault)
    for call in where["calls"]:
        faults[("impl_bug", "undefined_call")].append(f"undefined({call['k']})")
    for node, _ in walk(proof):
        if node.get("k") == "rule":
            faults[("hard_coded", "solved_head")].append(
                f"constant({prolog_string(str(node.get('g')))})"
            )
            break
    return faults


def _grounded(domain: Domain, case: Case, proven: Proven, vocab: CaseVocabulary) -> bool:
    found = answer_goal(domain, goal_runs(proven.report))
    answer = found[1].value if found else None
    return derivation(answer, proven, vocab, domain.label_kind == "binary")[0] == "grounded"


def _quoted_op(op: str) -> str:
    return "'" + op.replace("\\", "\\\\") + "'"


def _scaled(value: float) -> float:
    return value * 1.5 if isinstance(value, float) else round(value * 1.5) + 1


def _off_statute(value: float, vocab: CaseVocabulary, schedules: Sequence[float] = ()) -> float:
    """A changed literal neither the statutes nor another schedule of the domain state
    (a slip, not another schedule's number)."""
    for factor in (1.2, 0.8, 1.3, 0.7, 1.1, 1.4, 0.6):
        new = value * factor if isinstance(value, float) else round(value * factor) + 1
        if not _stated_law(new, vocab, schedules) and new != value:
            return new
    return value * 1.2 + 1


def _stated_law(value: float, vocab: CaseVocabulary, schedules: Sequence[float]) -> bool:
    return vocab.in_case_or_statutes(value) or any(abs(value - s) < 0.005 for s in schedules)


def _rule_faults(
    proof: tuple[dict[str, Any], ...],
    where: dict[str, Any],
    vocab: CaseVocabulary,
    donors: Sequence[dict[str, Any]],
) -> list[tuple[str, str]]:
    """The faults that replace which rule applies, those on the answer's path first:
    another case's table for a predicate of the same name and arity; a call of a derived
    condition (a predicate with a rule) negated or dropped; a rule clause given a
    sibling's body; a rule clause of a predicate of several clauses dropped."""
    path = proof_lines(proof)
    clauses = where.get("clauses", [])
    line_of = {c["clause"]: c.get("line") for c in clauses}
    by_pred: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for c in clauses:
        by_pred.setdefault((c["name"], c["arity"]), []).append(c)
    derived = {key for key, cs in by_pred.items() if any(c["kind"] == "rule" for c in cs)}
    used = {key for key, cs in by_pred.items() if any(c.get("line") in path for c in cs)}

    def first_on_path(items: list[Any], line: Any) -> list[Any]:
        return sorted(items, key=lambda item: line(item) not in path)

    found: list[tuple[str, str]] = []
    own = {(t["name"], t["arity"]): t for t in where.get("tables", [])}
    swaps: list[tuple[bool, str]] = []
    for donor in donors:
        key = (donor["name"], donor["arity"])
        mine = own.get(key)
        if mine is None or donor["text"] == mine["text"] or not _law_table(mine, vocab):
            continue
        theirs = {float(v) for v in donor["numbers"] if telling(v)}
        ours = {float(v) for v in mine["numbers"] if telling(v)}
        if not theirs or theirs <= ours:
            continue  # no number of another schedule: not a swap this kind stands for
        fault = (
            f"table({_quoted_atom(donor['name'])}/{donor['arity']}, {prolog_string(donor['text'])})"
        )
        swaps.append((key not in used, fault))
    for _, fault in sorted(swaps, key=lambda s: s[0]):
        found.append(("table_swap", fault))
    calls = [c for c in where.get("calls", []) if (c["name"], c["arity"]) in derived]
    for call in first_on_path(calls, lambda c: line_of.get(c["clause"])):
        found.append(("negated_condition", f"negate({call['k']})"))
        found.append(("dropped_condition", f"drop({call['k']})"))
    for cs in by_pred.values():
        rules = [c for c in cs if c["kind"] == "rule"]
        for c in first_on_path(rules, lambda c: c.get("line")):
            for other in rules:
                if other is not c:
                    found.append(("sibling_body", f"sibling({c['clause']}, {other['clause']})"))
            if len(cs) >= 2:
                found.append(("dropped_clause", f"drop_clause({c['clause']})"))
    order = {"table_swap": 0}
    return sorted(
        found,
        key=lambda kf: (order.get(kf[0], 1), _fault_line(kf[1], line_of, where) not in path),
    )


def _law_table(table: dict[str, Any], vocab: CaseVocabulary) -> bool:
    """A table of the law: at most half of its telling numbers are numbers its own case
    states (exactly: a fee of 200 is no case's 2)."""
    told = [v for v in table["numbers"] if telling(v)]
    stated = [v for v in told if float(v) in vocab.case_numbers]
    return bool(told) and 2 * len(stated) <= len(told)


def _fault_line(fault: str, line_of: dict[int, Any], where: dict[str, Any]) -> Any:
    """The line of the clause a fault is planted in (None for a table)."""
    name, _, rest = fault.partition("(")
    first = rest.split(",")[0].rstrip(")")
    if not first.isdigit():
        return None
    if name in ("negate", "drop"):
        call = next((c for c in where.get("calls", []) if c["k"] == int(first)), None)
        return line_of.get(call["clause"]) if call else None
    return line_of.get(int(first))


def _quoted_atom(name: str) -> str:
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _statute_neighbours(value: float, vocab: CaseVocabulary) -> list[float]:
    """Constants the statutes state, of the same kind as ``value`` (a rate for a rate,
    an amount of similar size for an amount), closest first: another schedule's number."""
    found = []
    for number in vocab.statute_numbers:
        if number == value or vocab.in_case(number) or number <= 0:
            continue
        if (value < 1) != (number < 1) or not 0.25 <= number / value <= 4:
            continue
        if value >= 1 and number.is_integer() and number in range(1900, 2101):
            continue  # a year, not an amount
        found.append(number)
    found.sort(key=lambda n: abs(math.log(n / value)))
    return [int(n) if n.is_integer() and isinstance(value, int) else n for n in found]


def _threshold_faults(
    proof: tuple[dict[str, Any], ...],
    where: dict[str, Any],
    vocab: CaseVocabulary,
    schedules: Sequence[float] = (),
) -> list[tuple[str, str]]:
    """Thresholds moved past the case or computed value compared with them: just past it
    and by a fifth, from above (the value was above the threshold) and from below."""
    computed = {
        round(float(n["out"]), 6)
        for n, _ in walk(proof)
        if n.get("k") == "arith" and is_number(n.get("out"))
    }
    found: list[tuple[str, str]] = []
    for node, _ in walk(proof):
        args = node.get("args") or []
        if node.get("k") != "cmp" or len(args) != 2 or not all(is_number(a) for a in args):
            continue
        for x, t in ((args[0], args[1]), (args[1], args[0])):
            data = vocab.in_case(x) or round(float(x), 6) in computed
            if not data or t == 0 or x == t:
                continue
            kind = "threshold_above" if x > t else "threshold_below"
            step = max(1.0, abs(x) * 0.01)
            candidates = [x + step if x > t else x - step, t * 1.2 if x > t else t * 0.8]
            for moved in candidates:
                if isinstance(x, int) and isinstance(t, int):
                    moved = round(moved)
                if not 0.5 <= moved / t <= 2 or moved == t or _side(x, moved) == _side(x, t):
                    continue
                if _stated_law(moved, vocab, schedules):
                    continue  # another part of the law's number: not a slip
                for place in where["numbers"]:
                    if place["where"] == "cmp" and place["value"] == t:
                        found.append((kind, f"number({place['k']}, {_number_literal(moved)})"))
                        break
    return list(dict.fromkeys(found))


def _side(x: float, t: float) -> int:
    return (x > t) - (x < t)


def build(
    domains: Sequence[str],
    cases_per_domain: int | None,
    out: Path,
    solver: Solver,
    seed: int = 7,
) -> tuple[Path, Path]:
    """Write replay.jsonl and labels.jsonl under ``out``; their paths.  ``None`` cases:
    every hard case of each domain."""
    out.mkdir(parents=True, exist_ok=True)
    replay, labels = out / "replay.jsonl", out / "labels.jsonl"
    with replay.open("w") as rf, labels.open("w") as lf:
        for name in domains:
            domain = get_domain(name)
            cases = load_cases(domain, "hard")[:cases_per_domain]
            programs = [reference_program(domain, c) for c in cases]
            reports = analyse_many(programs, "full", solver)
            where = [places(solver, p) for p in programs]
            schedules = domain_schedules(domain, None, solver)
            for index, (case, program, report) in enumerate(
                zip(cases, programs, reports, strict=True)
            ):
                proven = Proven.of(domain, None if "analyser_error" in report else report)
                # Another case's rule tables (never its case facts), the next cases
                # first (deterministic, varied).
                order = [*range(index + 1, len(cases)), *range(index)]
                donors = [
                    t
                    for other in order
                    for t in where[other].get("tables", [])
                    if _law_table(t, CaseVocabulary.of(cases[other]))
                ]
                chosen = _choose(
                    domain, case, program, proven, solver, seed, where[index], donors, schedules
                )
                for sample, (expected, kind, fault, text) in enumerate(chosen):
                    entry = {"domain": domain.name, "case_id": case.id, "mode": MODE}
                    response = f"```prolog\n{text}```\n"
                    rf.write(json.dumps({**entry, "sample": sample, "response": response}) + "\n")
                    label = {
                        **entry,
                        "sample": sample,
                        "expected": expected,
                        "kind": kind,
                        "fault": fault,
                    }
                    lf.write(json.dumps(label) + "\n")
    return replay, labels


def _choose(
    domain: Domain,
    case: Case,
    program: str,
    proven: Proven | None,
    solver: Solver,
    seed: int,
    where: dict[str, Any],
    donors: Sequence[dict[str, Any]] = (),
    schedules: Sequence[float] = (),
) -> list[tuple[str, str, str, str]]:
    """At most one mutant per (class, kind) whose fault shows: (class, kind, fault, text)."""
    faults = candidate_faults(domain, case, program, proven, where, donors, schedules)
    tries = [
        (key, f)
        for key, found in faults.items()
        for f in found[: RULE_TRIES if key[1] in RULE_KINDS else TRIES]
    ]
    texts = mutants(solver, program, [f for _, f in tries], seed)
    ok = [(key, f, t) for (key, f), t in zip(tries, texts, strict=True) if t]
    executions = solver.map([t for _, _, t in ok])
    chosen: dict[tuple[str, str], tuple[str, str, str, str]] = {}
    for ((cls, kind), fault, text), execution in zip(ok, executions, strict=True):
        if (cls, kind) in chosen:
            continue
        outcome = judge_answer(domain, answer_from_execution(domain, execution), case.gold)
        if outcome == EXPECTED_OUTCOME[cls]:
            chosen[(cls, kind)] = (cls, kind, fault, text)
    return [chosen[key] for key in faults if key in chosen]


def run_pipeline(replay: Path, labels: Path, out: Path, domains: Sequence[str]) -> Path:
    """``eval --model replay:...`` then ``analyze``; the run folder."""
    rows = [json.loads(x) for x in labels.read_text().splitlines() if x.strip()]
    k = 1 + max((r["sample"] for r in rows), default=0)
    run = out / "run"
    shutil.rmtree(run, ignore_errors=True)
    env = dict(os.environ)
    cli = [sys.executable, "-m", "deonticbench"]
    subprocess.run(
        [
            *cli,
            "eval",
            "--model",
            f"replay:{replay}",
            "--split",
            "hard",
            "--domains",
            ",".join(domains),
            "--modes",
            MODE,
            "-k",
            str(k),
            "--attempts",
            "1",
            "--limit",
            str(1 + max(_case_index(r) for r in rows)),
            "--out",
            str(run),
            "--no-cache",
            "--fresh",
        ],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    subprocess.run([*cli, "analyze", str(run)], check=True, env=env, stdout=subprocess.DEVNULL)
    return run


_CASE_INDEX: dict[tuple[str, str], int] = {}


def _case_index(row: dict[str, Any]) -> int:
    key = (row["domain"], row["case_id"])
    if key not in _CASE_INDEX:
        for i, case in enumerate(load_cases(row["domain"], "hard")):
            _CASE_INDEX[(row["domain"], case.id)] = i
    return _CASE_INDEX[key]


def evaluate(run: Path, labels: Path) -> dict[str, Any]:
    """Per class precision and recall of the taxonomy and of hard_coded, for numeric
    domains, binary domains and all."""
    predicted = {
        (r["domain"], r["case_id"], r["mode"], r["sample"]): r
        for r in read_analysis(run)
        if r["stage"] == "first"
    }
    truth = [json.loads(x) for x in labels.read_text().splitlines() if x.strip()]
    groups: dict[str, Any] = {
        "numeric": lambda d: get_domain(d).label_kind == "numeric",
        "binary": lambda d: get_domain(d).label_kind == "binary",
        "all": lambda d: True,
    }
    for name in sorted({json.loads(x)["domain"] for x in labels.read_text().splitlines() if x}):
        groups[name] = lambda d, name=name: d == name
    result: dict[str, Any] = {}
    for group, member in groups.items():
        pairs = []
        for row in truth:
            if not member(row["domain"]):
                continue
            key = (row["domain"], row["case_id"], row["mode"], row["sample"])
            got = predicted.get(key)
            if got is not None:
                pairs.append((row, got))
        per_class: dict[str, Any] = {}
        for cls in (*TAXONOMY, "hard_coded"):
            hits = [p for p in pairs if _found(cls, p[1])]
            expected = [p for p in pairs if p[0]["expected"] == cls]
            true_pos = sum(1 for p in hits if p[0]["expected"] == cls)
            per_class[cls] = {
                "n": len(expected),
                "recall": true_pos / len(expected) if expected else None,
                "precision": true_pos / len(hits) if hits else None,
            }
        kinds: dict[str, dict[str, Any]] = {}
        for exp, got in pairs:
            kind = f"{exp['expected']}/{exp.get('kind', '')}"
            entry = kinds.setdefault(kind, {"n": 0, "found": 0})
            entry["n"] += 1
            entry["found"] += _found(exp["expected"], got)
        for entry in kinds.values():
            entry["recall"] = entry["found"] / entry["n"]
        others = [got for exp, got in pairs if exp["expected"] != "hard_coded"]
        specificity = (
            sum(1 for got in others if got["derivation"] != "hard_coded") / len(others)
            if others
            else None
        )
        confusion: dict[str, dict[str, int]] = {}
        for exp, got in pairs:
            label = got.get("category") or f"correct/{got['derivation']}"
            confusion.setdefault(exp["expected"], {}).setdefault(label, 0)
            confusion[exp["expected"]][label] += 1
        result[group] = {
            "mutants": len(pairs),
            "classes": per_class,
            "kinds": kinds,
            "hard_coded_specificity": specificity,
            "confusion": confusion,
        }
    return result


def _found(cls: str, got: dict[str, Any]) -> bool:
    """Whether the analysis says ``cls``: the category, or for hard_coded the derivation
    axis, or for an unfaulted control a correct answer that is not hard-coded."""
    if cls == "hard_coded":
        return bool(got["derivation"] == "hard_coded")
    if cls == "none":
        return got.get("category") is None and got["derivation"] != "hard_coded"
    return bool(got.get("category") == cls)


def render(result: dict[str, Any]) -> str:
    lines = []
    for group, body in result.items():
        if not body["mutants"]:
            continue
        lines.append(f"{group} domains: {body['mutants']} mutants")
        lines.append("| class | n | precision | recall |")
        lines.append("| --- | --- | --- | --- |")
        for cls, m in body["classes"].items():
            p = "—" if m["precision"] is None else f"{m['precision']:.2f}"
            r = "—" if m["recall"] is None else f"{m['recall']:.2f}"
            lines.append(f"| {cls} | {m['n']} | {p} | {r} |")
        lines.append("| kind | n | recall |")
        lines.append("| --- | --- | --- |")
        for kind, m in sorted(body["kinds"].items()):
            lines.append(f"| {kind} | {m['n']} | {m['recall']:.2f} |")
        if body["hard_coded_specificity"] is not None:
            lines.append(f"hard_coded specificity: {body['hard_coded_specificity']:.2f}")
        lines.append("confusion (expected -> diagnosed):")
        labels = sorted({g for row in body["confusion"].values() for g in row})
        lines.append("| expected | " + " | ".join(labels) + " |")
        lines.append("| --- |" + " --- |" * len(labels))
        for exp, row in body["confusion"].items():
            cells = " | ".join(str(row.get(g, 0)) for g in labels)
            lines.append(f"| {exp} | {cells} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", default="sara_numeric,airline")
    parser.add_argument(
        "--cases", type=int, default=None, help="Cases per domain (hard split; default: all)."
    )
    parser.add_argument("--out", type=Path, default=Path("planted-faults"))
    parser.add_argument("--evaluate", type=Path, help="An analysed run folder to score.")
    parser.add_argument("--labels", type=Path, help="Labels for --evaluate.")
    args = parser.parse_args(argv)
    if args.evaluate:
        if not args.labels:
            parser.error("--evaluate needs --labels")
        result = evaluate(args.evaluate, args.labels)
    else:
        domains = [d.strip() for d in args.domains.split(",") if d.strip()]
        with Solver() as solver:
            replay, labels = build(domains, args.cases, args.out, solver)
        run = run_pipeline(replay, labels, args.out, domains)
        result = evaluate(run, labels)
        (args.out / "validation.json").write_text(json.dumps(result, indent=2))
    print(render(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
