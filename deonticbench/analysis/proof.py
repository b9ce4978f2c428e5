"""The proof of a program's answer, as recorded by the meta-interpreter in
``prolog/analyse.pl``, and the rule that finds which goal printed the answer.

The analyser re-runs, in SWI-Prolog's order, every goal the program would run: plain
directives in file order, then ``initialization/1`` goals, then the
``initialization(G, main)`` goal (which for housing and uscis programs is ``main/0``).
Each re-run records its output and its proof.  **The answer goal** is the last re-run
goal whose own output contains the answer line that the domain's reader accepts (the
same reader that scored the attempt).  When no goal prints one, there is no answer goal
and the attempt has no proof.

A proof is a list of nodes in execution order; every node is a JSON object with ``k``
(its kind) and, depending on the kind:

* ``rule``: a user clause with a body; ``l`` its line, ``g`` the instantiated head,
  ``c`` the proof of its body.
* ``fact``: a user clause without a body; ``l``, ``g``, ``v`` its constants.
* ``arith``: ``is/2``, ``succ/2`` or ``plus/3``; ``in`` the numbers of the evaluated
  expression, ``out`` the result.
* ``cmp``: an arithmetic comparison; ``op``, ``args`` (evaluated), ``ok`` its truth.
* ``ite``: an if-then-else; ``branch`` then/else, ``g`` the condition, ``c`` its proof
  (then) or what can be seen of its failure (else: a failed comparison's values).
* ``or``: which side of a disjunction was taken; ``naf``: a negation that held.  Under
  a failed condition (``ite`` else) or a negation, ``c`` holds the failed comparison
  when the goal was one, and the facts, arithmetic and comparisons of the failed
  attempt, as nodes marked ``tried`` (a failed search is no proof; a conclusion drawn
  from a failure rests on those facts being as they are, and on those steps).
* ``findall``, ``aggregate_all``, ``forall``, ``bagof``, ``setof``: ``n`` solutions,
  ``out`` the aggregate's value, ``c`` up to 12 sub-proofs.
* ``builtin``: any other built-in or library call, with its arguments after the call.
* ``opaque``: a goal the interpreter did not look into (``reason``: a library
  meta-predicate calling back into the program, or the depth/size bound).
* ``cut``: a cut inside a control construct, approximated; ``halt``: the program halted.
* ``fail_rule`` (under a failed condition or a negation): a clause whose whole body is
  ``fail``/``false`` that the failed attempt tried: the decision was hard-coded.
* ``attempts`` (last, when any): the arithmetic steps and comparisons of every attempt
  that failed during the goal (marked ``tried``): computation, though not proof.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ..data.domains import Domain
from ..reading.answers import Answer, read_program_answer

Node = dict[str, Any]


@dataclass(frozen=True)
class GoalRun:
    """One goal the analyser re-ran, with what it printed and its proof."""

    line: int | None
    kind: str
    """directive, initialization or main (the ``initialization(G, main)`` goal)."""
    goal: str
    output: str
    status: str
    """true, false, error, halt (the goal called halt) or limit (the proof's bound)."""
    error: str | None
    undefined: str | None
    """name/arity of an undefined predicate the goal called (its error)."""
    proof: tuple[Node, ...]
    nodes: int
    truncated: bool

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> GoalRun:
        line = obj.get("line")
        return cls(
            line=line if isinstance(line, int) else None,
            kind=str(obj.get("kind", "")),
            goal=str(obj.get("goal", "")),
            output=str(obj.get("output", "")),
            status=_status(obj.get("status")),
            error=obj.get("error") if isinstance(obj.get("error"), str) else None,
            undefined=obj.get("undefined") if isinstance(obj.get("undefined"), str) else None,
            proof=tuple(obj.get("proof") or ()),
            nodes=int(obj.get("nodes", 0)),
            truncated=bool(obj.get("truncated", False)),
        )

    @property
    def succeeded(self) -> bool:
        return self.status in ("true", "halt")


def _status(value: Any) -> str:
    # JSON true/false for the goal's truth; strings for the other statuses.
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value or "")


def goal_runs(report: dict[str, Any]) -> tuple[GoalRun, ...]:
    return tuple(GoalRun.from_json(r) for r in report.get("runs", []))


def answer_goal(domain: Domain, runs: tuple[GoalRun, ...]) -> tuple[GoalRun, Answer] | None:
    """The last re-run goal whose own output holds an answer line (see module doc)."""
    for run in reversed(runs):
        if not run.output:
            continue
        answer = read_program_answer(domain, run.output)
        if not answer.abstained:
            return run, answer
    return None


Derived = TypeVar("Derived")


class ProofMemo(Generic[Derived]):
    """What was derived from a proof, kept by the proof's identity (a proof is a tuple
    of dicts: not hashable, and the comparison asks the same questions of the same
    proof many times).  Each entry holds its proof, so that the id is not reused while
    the entry lives; the oldest entries go beyond ``size`` proofs, so that a long-lived
    process (the reward server) does not keep every proof it ever read."""

    def __init__(self, derive: Callable[[Any], Derived], size: int = 64) -> None:
        self._derive = derive
        self._size = size
        self._kept: dict[int, tuple[Any, Derived]] = {}

    def __call__(self, proof: Any) -> Derived:
        hit = self._kept.get(id(proof))
        if hit is not None and hit[0] is proof:
            return hit[1]
        value = self._derive(proof)
        self._kept[id(proof)] = (proof, value)
        if len(self._kept) > self._size:
            del self._kept[next(iter(self._kept))]
        return value

    def __len__(self) -> int:
        return len(self._kept)


def walk(nodes: tuple[Node, ...] | list[Node]) -> list[tuple[Node, Node | None]]:
    """Every node in execution order (pre-order), with the user rule it occurs in.
    Flattened once per proof (the comparison walks the same proofs many times)."""
    return _flat(nodes)


def _flatten(nodes: tuple[Node, ...] | list[Node]) -> list[tuple[Node, Node | None]]:
    # Depth first over one iterator per open level, resumed where it stopped: no pair
    # is made for a node before it is visited (a stack of every pending child made a
    # tuple for each node twice; a run of hard's proofs holds a quarter million nodes).
    flat: list[tuple[Node, Node | None]] = []
    append = flat.append
    pending: list[tuple[Iterator[Any], Node | None]] = []
    level: Iterator[Any] = iter(nodes or ())
    rule: Node | None = None
    while True:
        for node in level:
            if not isinstance(node, dict):
                continue
            append((node, rule))
            children = node.get("c")
            if children:
                pending.append((level, rule))
                if node.get("k") == "rule":
                    rule = node
                level = iter(children)
                break
        else:
            if not pending:
                return flat
            level, rule = pending.pop()


_flat = ProofMemo(_flatten)


def facts(nodes: tuple[Node, ...]) -> list[Node]:
    return [n for n, _ in walk(nodes) if n.get("k") == "fact"]


def opaque_goals(nodes: tuple[Node, ...]) -> list[str]:
    return [f"{n.get('g')} ({n.get('reason')})" for n, _ in walk(nodes) if n.get("k") == "opaque"]


def summary(run: GoalRun | None) -> str:
    """One line a person can read: what the proof of the answer rests on."""
    if run is None:
        return "no goal printed an answer line"
    kinds: dict[str, int] = {}
    for node, _ in walk(run.proof):
        kinds[str(node.get("k"))] = kinds.get(str(node.get("k")), 0) + 1
    parts = [
        f"{kinds.get('rule', 0)} rules",
        f"{kinds.get('fact', 0)} facts",
        f"{kinds.get('arith', 0)} arithmetic",
        f"{kinds.get('cmp', 0)} comparisons",
    ]
    if kinds.get("naf"):
        parts.append(f"{kinds['naf']} negations")
    if kinds.get("opaque"):
        parts.append(f"{kinds['opaque']} opaque")
    where = f"line {run.line}" if run.line else "?"
    bound = ", truncated" if run.truncated else ""
    return f"{run.kind} goal at {where}: " + ", ".join(parts) + bound


def render(nodes: tuple[Node, ...] | list[Node], indent: int = 0) -> list[str]:
    """The proof tree, indented, one node a line, with clause lines and values."""
    lines: list[str] = []
    pad = "  " * indent
    for node in nodes:
        kind = node.get("k")
        goal = node.get("g", "")
        if kind == "rule":
            lines.append(f"{pad}{goal}    [rule, line {node.get('l')}]")
        elif kind == "fail_rule":
            lines.append(f"{pad}{goal} :- fail.    [hard-coded failure, line {node.get('l')}]")
        elif kind == "fact" and node.get("tried"):
            lines.append(f"{pad}{goal}    [fact read by the failed attempt, line {node.get('l')}]")
        elif kind == "fact":
            lines.append(f"{pad}{goal}    [fact, line {node.get('l')}]")
        elif kind == "arith":
            tried = ", in the failed attempt" if node.get("tried") else ""
            lines.append(f"{pad}{goal}    [= {node.get('out')}{tried}]")
        elif kind == "cmp":
            tried = ", in the failed attempt" if node.get("tried") else ""
            lines.append(f"{pad}{goal}    [{'true' if node.get('ok') else 'false'}{tried}]")
        elif kind == "ite":
            lines.append(f"{pad}if {goal} -> {node.get('branch')}")
        elif kind == "or":
            lines.append(f"{pad}; {node.get('branch')} branch")
        elif kind == "naf":
            lines.append(f"{pad}\\+ {goal}    [not provable]")
        elif kind in ("findall", "aggregate_all", "forall", "bagof", "setof"):
            out = node.get("out")
            shown = f", = {out}" if out is not None else ""
            lines.append(f"{pad}{goal}    [{node.get('n')} solutions{shown}]")
        elif kind == "solution":
            lines.append(f"{pad}solution:")
        elif kind == "attempts":
            lines.append(f"{pad}({node.get('n')} steps of failed attempts, not shown)")
            continue
        elif kind == "opaque":
            lines.append(f"{pad}{goal}    [opaque: {node.get('reason')}]")
        elif kind == "builtin":
            lines.append(f"{pad}{goal}")
        else:
            lines.append(f"{pad}{kind}")
        lines.extend(render(node.get("c") or [], indent + 1))
    return lines
