"""Validate the failure taxonomy and ``hard_coded`` with planted faults.

From reference programs (default: sara_numeric, airline, sara_binary), this makes
mutants with ONE known fault each, planted by ``prolog/mutate.pl`` at the level of terms:

* ``entity_fact``: a number of a fact the reference proof uses, that the case text states,
  is changed (x -> 2x + 7);
* ``wrong_rule``: a number of the law is changed: a rule-table fact's or an arithmetic
  expression's constant that the case text does not state (x -> 1.5x: a fee schedule, a
  rate, a bracket);
* ``numerical``: an arithmetic operator is swapped (+ <-> -, * -> +, / -> *, max <-> min),
  or a comparison's threshold is moved just past the case value it is compared with;
* ``impl_bug``: a call of a predicate the program defines is replaced by a call of one
  it does not (an undefined call);
* ``hard_coded``: the first predicate on the answer's proof is replaced by one fact, its
  solved head (the answer stays right; the derivation is gone);
* ``none``: no fault (a control: must stay correct and not be hard_coded).

Every mutant also has every predicate renamed consistently and its predicates reordered,
as a model's program would differ.  A candidate is kept only if the fault shows:
wrong answer (entity_fact, wrong_rule, numerical), no answer (impl_bug), right answer
(hard_coded, none).  The mutants go through ``deonticbench eval --model replay:...`` and
``deonticbench analyze``; per class precision and recall are printed and written.

    python scripts/planted_faults.py --cases 10 --out /tmp/planted
    python scripts/planted_faults.py --evaluate RUN --labels labels.jsonl   # another set

A labels file has one JSON object per line: domain, case_id, mode, sample, expected
(one of the classes above).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deonticbench._paths import PROLOG
from deonticbench.analysis.compare import CaseVocabulary, is_number, telling
from deonticbench.analysis.diagnose import Proven
from deonticbench.analysis.engine import analyse_many, prolog_string
from deonticbench.analysis.proof import walk
from deonticbench.analysis.run import read_analysis, reference_program
from deonticbench.data.cases import Case, load_cases
from deonticbench.data.domains import Domain, get_domain
from deonticbench.reading.answers import answer_from_execution
from deonticbench.reading.outcomes import judge
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
        return {"numbers": [], "operators": [], "calls": []}
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


def candidate_faults(
    domain: Domain, case: Case, program: str, proven: Proven | None, where: dict[str, Any]
) -> dict[str, list[str]]:
    vocab = CaseVocabulary.of(case)
    proof = proven.proof if proven else ()
    fact_numbers = {
        round(float(v), 6)
        for node, _ in walk(proof)
        if node.get("k") == "fact" and not node.get("tried")
        for v in node.get("v") or []
        if is_number(v)
    }
    faults: dict[str, list[str]] = {c: [] for c in CLASSES}
    faults["none"].append("none")
    for place in where["numbers"]:
        value, k, context = place["value"], place["k"], place["where"]
        if not is_number(value):
            continue
        used = round(float(value), 6) in fact_numbers
        stated = vocab.in_case(value)
        if context == "fact" and used and stated and telling(value):
            new = value * 2 + 7
            faults["entity_fact"].append(f"number({k}, {_number_literal(new)})")
        elif (context == "fact" and used and not stated and telling(value)) or (
            context == "arith" and not stated and telling(value) and value != 0
        ):
            new = value * 1.5 if isinstance(value, float) else round(value * 1.5) + 1
            faults["wrong_rule"].append(f"number({k}, {_number_literal(new)})")
    for op in where["operators"]:
        faults["numerical"].append(f"operator({op['k']})")
    faults["numerical"] = _interleave(faults["numerical"], _threshold_faults(proof, where, vocab))
    for call in where["calls"]:
        faults["impl_bug"].append(f"undefined({call['k']})")
    for node, _ in walk(proof):
        if node.get("k") == "rule":
            faults["hard_coded"].append(f"constant({prolog_string(str(node.get('g')))})")
            break
    return faults


def _threshold_faults(
    proof: tuple[dict[str, Any], ...], where: dict[str, Any], vocab: CaseVocabulary
) -> list[str]:
    computed = {
        round(float(n["out"]), 6)
        for n, _ in walk(proof)
        if n.get("k") == "arith" and is_number(n.get("out"))
    }
    found: list[str] = []
    for node, _ in walk(proof):
        args = node.get("args") or []
        if node.get("k") != "cmp" or len(args) != 2 or not all(is_number(a) for a in args):
            continue
        for x, t in ((args[0], args[1]), (args[1], args[0])):
            data = vocab.in_case(x) or round(float(x), 6) in computed
            if not data or t == 0:
                continue
            step = max(1.0, abs(x) * 0.01)
            moved = x + step if x > t else x - step
            if isinstance(x, int) and isinstance(t, int):
                moved = round(moved)
            if not 0.5 <= moved / t <= 2 or moved == t:
                continue
            for place in where["numbers"]:
                if place["where"] == "cmp" and place["value"] == t:
                    found.append(f"number({place['k']}, {_number_literal(moved)})")
                    break
    return list(dict.fromkeys(found))


def _interleave(a: list[str], b: list[str]) -> list[str]:
    out: list[str] = []
    for i in range(max(len(a), len(b))):
        out.extend(x[i] for x in (a, b) if i < len(x))
    return out


def build(
    domains: Sequence[str], cases_per_domain: int, out: Path, solver: Solver, seed: int = 7
) -> tuple[Path, Path]:
    """Write replay.jsonl and labels.jsonl under ``out``; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    replay, labels = out / "replay.jsonl", out / "labels.jsonl"
    with replay.open("w") as rf, labels.open("w") as lf:
        for name in domains:
            domain = get_domain(name)
            cases = load_cases(domain, "hard")[:cases_per_domain]
            programs = [reference_program(domain, c) for c in cases]
            reports = analyse_many(programs, "full", solver)
            for case, program, report in zip(cases, programs, reports, strict=True):
                proven = Proven.of(domain, None if "analyser_error" in report else report)
                chosen = _choose(domain, case, program, proven, solver, seed)
                for sample, (expected, fault, text) in enumerate(chosen):
                    entry = {"domain": domain.name, "case_id": case.id, "mode": MODE}
                    response = f"```prolog\n{text}```\n"
                    rf.write(json.dumps({**entry, "sample": sample, "response": response}) + "\n")
                    label = {**entry, "sample": sample, "expected": expected, "fault": fault}
                    lf.write(json.dumps(label) + "\n")
    return replay, labels


def _choose(
    domain: Domain, case: Case, program: str, proven: Proven | None, solver: Solver, seed: int
) -> list[tuple[str, str, str]]:
    faults = candidate_faults(domain, case, program, proven, places(solver, program))
    tries = [(cls, f) for cls in CLASSES for f in faults[cls][:TRIES]]
    texts = mutants(solver, program, [f for _, f in tries], seed)
    ok = [(cls, f, t) for (cls, f), t in zip(tries, texts, strict=True) if t]
    executions = solver.map([t for _, _, t in ok])
    chosen: dict[str, tuple[str, str, str]] = {}
    for (cls, fault, text), execution in zip(ok, executions, strict=True):
        if cls in chosen:
            continue
        outcome = judge(domain, answer_from_execution(domain, execution), case.gold)
        if outcome == EXPECTED_OUTCOME[cls]:
            chosen[cls] = (cls, fault, text)
    return [chosen[cls] for cls in CLASSES if cls in chosen]


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
    groups = {
        "numeric": lambda d: get_domain(d).label_kind == "numeric",
        "binary": lambda d: get_domain(d).label_kind == "binary",
        "all": lambda d: True,
    }
    result: dict[str, Any] = {}
    for group, member in groups.items():
        pairs = []
        for row in truth:
            if not member(row["domain"]):
                continue
            key = (row["domain"], row["case_id"], row["mode"], row["sample"])
            got = predicted.get(key)
            if got is not None:
                pairs.append((row["expected"], got))
        per_class: dict[str, Any] = {}
        for cls in (*TAXONOMY, "hard_coded"):
            if cls == "hard_coded":
                hits = [p for p in pairs if p[1]["derivation"] == "hard_coded"]
            else:
                hits = [p for p in pairs if p[1].get("category") == cls]
            expected = [p for p in pairs if p[0] == cls]
            true_pos = sum(1 for p in hits if p[0] == cls)
            per_class[cls] = {
                "n": len(expected),
                "recall": true_pos / len(expected) if expected else None,
                "precision": true_pos / len(hits) if hits else None,
            }
        confusion: dict[str, dict[str, int]] = {}
        for exp, got in pairs:
            label = got.get("category") or f"correct/{got['derivation']}"
            confusion.setdefault(exp, {}).setdefault(label, 0)
            confusion[exp][label] += 1
        result[group] = {"mutants": len(pairs), "classes": per_class, "confusion": confusion}
    return result


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
        lines.append("confusion (expected -> diagnosed): " + json.dumps(body["confusion"]))
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", default="sara_numeric,airline,sara_binary")
    parser.add_argument("--cases", type=int, default=10, help="Cases per domain (hard split).")
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
