"""The reward for one completion against one case: the paper's (B.5.2) or the benchmark's.

    target = RewardTarget.from_case(case)
    result = score_completion(completion_text, target)      # mode="paper", 20 s timeout
    results = score_batch(texts, targets, mode="eval", timeout_s=5)

The path is the harness's own, never a second implementation: reading's one judging path
(``reading.judging``, with the harness's reader) extracts the program and removes
upstream's ``Label:`` directives, the sandbox pool runs it, and the same path reads the
domain's answer line and judges it.

Three modes:

``paper``  B.5.2 to the letter.  1 when the answer the program prints equals the label
           exactly; 0.2 × Jaccard(S(P), S(P*)) when the program does not execute (a
           syntax or runtime error); 0 otherwise (no program, timeout or other limit,
           ran but printed a wrong, conflicting or no answer).
``eval``   The benchmark's own judging (paper B.3): 1 when the answer is correct within
           the $1 tolerance (numeric) or the class matches (binary), 0 for a wrong
           answer or an abstention.  No partial credit.
``grounded`` 1 only when the answer is correct as in ``eval`` **and** its derivation is
           ``grounded`` (docs/analysis.md, 5): the program's proof of the printed answer
           uses facts the case states, not a constant answer, a fact named after nothing
           in the case, a decision written in as ``p :- fail.``, or a number neither the
           case nor the statutes hold.  A constant-printing program earns 0, where it
           earns 0.5 on average under the other modes on a balanced binary domain.  The
           derivation needs the case's stated constants (``RewardTarget.case_constants``).

So ``paper`` and ``eval`` differ on numeric answers off by up to $1 (or needing rounding: ``1166.4``
for 1166 is 0 in ``paper``, 1 in ``eval``) and on failed programs (``paper`` gives up to
0.2 for a program that does not run; ``eval`` gives 0).

What earns a reward is only the domain's answer line in the program's stdout: prose
outside the program, ``Label:`` lines, stderr and any other line earn nothing; two
different answers are a conflict and earn 0; a program stopped by a limit earns 0 even
if it printed the right answer first.  The program runs in the sandbox with an empty
environment and a private directory: it sees neither the label, the reference program,
the data files, the trainer's environment nor any other program's files.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..analysis.compare import CaseVocabulary
from ..analysis.diagnose import Derivation, Proven, derivation
from ..analysis.engine import AnalyserError, analyse_many
from ..data.cases import Case, Gold, normalise_gold
from ..data.domains import Domain, get_domain
from ..errors import DeonticBenchError
from ..reading.judging import (
    NO_PROGRAM,
    JudgedAttempt,
    Program,
    ReadAttempt,
    Reply,
    read_attempt,
)
from ..solver import Limits, Solver
from .process_pool import call_in_pool, process_solver, run_in_pool
from .signatures import (
    Signatures,
    jaccard,
    prefetch_signatures,
    program_signatures,
    signatures_from_rows,
    signatures_to_rows,
)

RewardMode = Literal["paper", "eval", "grounded"]
REWARD_MODES: tuple[RewardMode, ...] = ("paper", "eval", "grounded")
PAPER_TIMEOUT_S = 20.0
"""The paper runs each generated program with a 20-second timeout (B.5.2)."""
PARTIAL_CREDIT = 0.2
"""The weight of the signature Jaccard for a program that does not execute (B.5.2)."""
NOT_EXECUTABLE = frozenset({"syntax_error", "runtime_error"})
"""Statuses the paper calls non-executable code, the only ones with partial credit."""


@dataclass(frozen=True)
class RewardTarget:
    """What a completion is scored against: never shown to the program."""

    domain: str
    gold: Gold
    case_id: str = ""
    reference_signatures: Signatures | None = None
    """S(P*) of the reference program; computed from ``reference_program`` when None."""
    reference_program: str | None = field(default=None, repr=False)
    case_constants: CaseVocabulary | None = field(default=None, repr=False)
    """What the case and its statutes state (numbers, words): the ``grounded`` mode's
    derivation needs it to tell a case fact from one named after nothing in the case."""

    @classmethod
    def from_case(cls, case: Case) -> RewardTarget:
        return cls(
            domain=case.domain,
            gold=case.gold,
            case_id=case.id,
            reference_program=case.reference_prolog,
            case_constants=CaseVocabulary.of(case),
        )

    @classmethod
    def from_fields(
        cls,
        domain: str,
        gold: object,
        case_id: object = "",
        reference_signatures: Any = None,
        case_constants: Any = None,
    ) -> RewardTarget:
        """Build a target from the columns of a training file (gold may be a string)."""
        try:
            dom = get_domain(str(domain).removeprefix("deonticbench/"))
        except DeonticBenchError as exc:
            raise RewardInputError(str(exc)) from None
        try:
            gold_value = normalise_gold(dom, gold, where=f"the label of case {case_id or '?'}")
        except DeonticBenchError as exc:
            raise RewardInputError(str(exc)) from None
        signatures = (
            signatures_from_rows(reference_signatures) if reference_signatures is not None else None
        )
        constants: CaseVocabulary | None = None
        if case_constants is not None:
            try:
                constants = CaseVocabulary.from_json(case_constants)
            except (ValueError, TypeError) as exc:
                raise RewardInputError(f"case {case_id or '?'}: {exc}") from None
        return cls(dom.name, gold_value, str(case_id or ""), signatures, case_constants=constants)

    @classmethod
    def from_label(cls, label: str | Mapping[str, Any]) -> RewardTarget:
        """Read the JSON label of a training file (``to_label``), as OpenRLHF passes it."""
        obj: Any = label
        if isinstance(label, str):
            try:
                obj = json.loads(label)
            except json.JSONDecodeError:
                raise RewardInputError(f"the label {label[:60]!r} is not a JSON object") from None
        if not isinstance(obj, Mapping) or "domain" not in obj or "gold" not in obj:
            raise RewardInputError("a label must be a JSON object with 'domain' and 'gold'")
        return cls.from_fields(
            obj["domain"],
            obj["gold"],
            obj.get("case_id", ""),
            obj.get("reference_signatures"),
            obj.get("case_constants"),
        )

    def to_label(self) -> str:
        return json.dumps(
            {
                "domain": self.domain,
                "case_id": self.case_id,
                "gold": str(self.gold),
                "reference_signatures": signatures_to_rows(self.signatures()),
                "case_constants": self.case_constants.to_json() if self.case_constants else None,
            },
            sort_keys=True,
        )

    def signatures(self, solver: Solver | None = None) -> Signatures:
        """S(P*): given, or read from the reference program the harness would run."""
        if self.reference_signatures is not None:
            return self.reference_signatures
        reference = self.reference_text()
        return frozenset() if reference is None else program_signatures(reference, solver)

    def reference_text(self) -> str | None:
        """The reference program as the harness runs it, when S(P*) must be read from it."""
        if self.reference_signatures is not None or self.reference_program is None:
            return None
        domain = get_domain(self.domain)
        return read_attempt(Program(self.reference_program, published=True), domain).text

    def key(self) -> str:
        signatures = sorted(self.reference_signatures or ())
        reference = hashlib.sha256((self.reference_program or "").encode()).hexdigest()
        constants = self.case_constants.to_json() if self.case_constants else None
        return json.dumps(
            [self.domain, self.case_id, str(self.gold), signatures, reference, constants]
        )


class RewardInputError(DeonticBenchError, ValueError):
    """A trainer passed something the reward cannot read (unknown domain, bad label)."""


@dataclass(frozen=True)
class RewardResult:
    reward: float
    mode: RewardMode
    correct: bool
    """Paper mode: the printed answer equals the label exactly; eval: judged correct."""
    executable: bool
    """A program was found and ran without a syntax or runtime error and within limits."""
    jaccard: float | None
    """Signature Jaccard with the reference (computed only where it earns credit)."""
    answer_read: bool
    answer: float | str | None
    outcome: str
    """The benchmark's verdict (correct / wrong / abstain), whatever the mode."""
    status: str
    """The execution status, or ``no_program``."""
    abstain_reason: str | None = None
    cached: bool = False
    derivation: Derivation | None = None
    """``grounded`` mode, correct answers: how the answer was derived (else None)."""
    derivation_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def parts(self) -> dict[str, float]:
        """Numeric parts for a trainer's logs (same keys for every result)."""
        return {
            "correct": float(self.correct),
            "executable": float(self.executable),
            "jaccard": float(self.jaccard or 0.0),
            "answer_read": float(self.answer_read),
            "within_tolerance": float(self.outcome == "correct"),
            "grounded": float(self.derivation == "grounded"),
        }


def _no_program(mode: RewardMode) -> RewardResult:
    return RewardResult(
        reward=0.0,
        mode=mode,
        correct=False,
        executable=False,
        jaccard=None,
        answer_read=False,
        answer=None,
        outcome="abstain",
        status="no_program",
        abstain_reason=NO_PROGRAM,
    )


def _similarity(program: str, target: RewardTarget, solver: Solver | None) -> float:
    """Jaccard(S(P), S(P*)); 0 when the analyser itself could not read the program (a
    limit hit while reading it): no structure seen, no credit."""
    try:
        return jaccard(program_signatures(program, solver), target.signatures(solver))
    except AnalyserError:
        return 0.0


def _judge(
    domain: Domain,
    target: RewardTarget,
    judged: JudgedAttempt,
    mode: RewardMode,
    solver: Solver | None = None,
    proven: Proven | None = None,
) -> RewardResult:
    """The reward of a program judged on reading's one path (a job's: it ran)."""
    assert judged.program is not None and judged.execution is not None
    program, execution = judged.program, judged.execution
    answer = judged.answer
    outcome = judged.outcome or "abstain"
    exact = answer.value is not None and _exact(domain, answer.value, target.gold)
    executable = execution.status not in NOT_EXECUTABLE and not execution.killed
    similarity: float | None = None
    how: tuple[Derivation, str] | None = None
    if mode == "eval":
        correct = outcome == "correct"
        reward = 1.0 if correct else 0.0
    elif mode == "grounded":
        correct = outcome == "correct"
        if correct:
            how = _derivation(domain, target, answer.value, proven)
        reward = 1.0 if how is not None and how[0] == "grounded" else 0.0
    else:
        correct = exact
        if correct:
            reward = 1.0
        elif execution.status in NOT_EXECUTABLE:
            similarity = _similarity(program, target, solver)
            reward = PARTIAL_CREDIT * similarity
        else:
            reward = 0.0
    return RewardResult(
        reward=reward,
        mode=mode,
        correct=correct,
        executable=executable,
        jaccard=similarity,
        answer_read=answer.value is not None,
        answer=answer.value,
        outcome=outcome,
        status=execution.status,
        abstain_reason=answer.reason,
        derivation=how[0] if how else None,
        derivation_reason=how[1] if how else None,
    )


def _derivation(
    domain: Domain, target: RewardTarget, value: float | str | None, proven: Proven | None
) -> tuple[Derivation, str]:
    if target.case_constants is None:
        raise RewardInputError(
            f"the grounded reward needs the case's constants (case {target.case_id or '?'}): "
            "build the target with RewardTarget.from_case or pass the export's case_constants"
        )
    binary = domain.label_kind == "binary"
    return derivation(value, proven, target.case_constants, binary)


def _exact(domain: Domain, value: float | str, gold: Gold) -> bool:
    """The paper's exact match: the printed value is the label, no tolerance."""
    if domain.label_kind == "numeric":
        return not isinstance(value, str) and float(value) == float(gold)
    return value == gold


# --- the cache ------------------------------------------------------------------------


class RewardCache:
    """Results by (mode, limits, case, program content), least recently used dropped.

    A GRPO group often holds the same program several times: the first asks the
    sandbox, the others wait for its answer (an in-flight entry) instead of running it
    again.
    """

    def __init__(self, size: int = 65536) -> None:
        self.size = size
        self._entries: OrderedDict[str, Future[RewardResult]] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def claim(self, key: str) -> tuple[Future[RewardResult], bool]:
        """The entry for ``key`` and whether the caller must compute it."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry, False
            entry = Future()
            self._entries[key] = entry
            self.misses += 1
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
            return entry, True

    def forget(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def _reset_after_fork(self) -> None:
        # A fork child inherits entries that the parent's threads were still computing
        # (they would never finish here) and perhaps a held lock: start empty.
        self._lock = threading.Lock()
        self._entries = OrderedDict()
        self.hits = self.misses = 0


_CACHE = RewardCache()
os.register_at_fork(after_in_child=_CACHE._reset_after_fork)


def reward_cache() -> RewardCache:
    """This process's reward cache."""
    return _CACHE


def _cache_key(mode: RewardMode, limits: Limits, target: RewardTarget, program: str) -> str:
    digest = hashlib.sha256()
    for part in (mode, json.dumps(asdict(limits), sort_keys=True), target.key(), program):
        digest.update(part.encode("utf-8") + b"\0")
    return digest.hexdigest()


# --- scoring ---------------------------------------------------------------------------


def _limits(timeout_s: float | None) -> Limits:
    timeout = PAPER_TIMEOUT_S if timeout_s is None else float(timeout_s)
    if not timeout > 0:
        raise RewardInputError(f"the reward timeout must be positive, not {timeout_s!r}")
    # CPU time is kept above the wall clock, so the wall clock is what stops a program.
    return Limits(timeout_s=timeout, cpu_s=max(1, int(timeout) + 10))


def check_mode(mode: str) -> RewardMode:
    if mode not in REWARD_MODES:
        raise RewardInputError(
            f"unknown reward mode {mode!r}; choose from {', '.join(REWARD_MODES)}"
        )
    return mode


def score_completion(
    completion: str | None,
    target: RewardTarget,
    *,
    mode: RewardMode = "paper",
    timeout_s: float | None = None,
    solver: Solver | None = None,
    cache: RewardCache | None = None,
) -> RewardResult:
    """Score one completion (a model response) against its case."""
    return score_batch(
        [completion], [target], mode=mode, timeout_s=timeout_s, solver=solver, cache=cache
    )[0]


@dataclass
class _Job:
    """One distinct (program, case) of a batch that this call computes."""

    domain: Domain
    target: RewardTarget
    read: ReadAttempt
    """The completion read up to its run (its ``program`` is what runs)."""
    key: str
    entry: Future[RewardResult]

    @property
    def program(self) -> str:
        return self.read.text


def score_batch(
    completions: Sequence[str | None],
    targets: Sequence[RewardTarget],
    *,
    mode: RewardMode = "paper",
    timeout_s: float | None = None,
    solver: Solver | None = None,
    cache: RewardCache | None = None,
) -> list[RewardResult]:
    """Score many completions at once, spread over every worker of the pool.

    Each distinct (program, case) runs once, whatever the number of its copies in the
    batch or in calls made at the same time (those wait for it); the failed programs
    that earn partial credit are then read by the static analysis in batches.
    """
    if len(completions) != len(targets):
        raise RewardInputError(
            f"{len(completions)} completions but {len(targets)} targets: they must pair up"
        )
    checked = check_mode(mode)
    limits = _limits(timeout_s)
    store = _CACHE if cache is None else cache
    results: list[RewardResult | None] = [None] * len(completions)
    jobs, waiting = _claim_jobs(completions, targets, checked, limits, store, results)
    try:
        _compute(jobs, checked, limits, solver)
    except BaseException as exc:
        for job in jobs:
            store.forget(job.key)
            if not job.entry.done():
                job.entry.set_exception(exc)
        raise
    computed = {id(job.entry) for job in jobs}
    first_use: set[int] = set()
    for index, entry in waiting:
        result = entry.result()
        if id(entry) in computed and id(entry) not in first_use:
            first_use.add(id(entry))  # the copy that actually ran
            results[index] = result
        else:
            results[index] = RewardResult(**{**asdict(result), "cached": True})
    return [r for r in results if r is not None]


def _claim_jobs(
    completions: Sequence[str | None],
    targets: Sequence[RewardTarget],
    mode: RewardMode,
    limits: Limits,
    store: RewardCache,
    results: list[RewardResult | None],
) -> tuple[list[_Job], list[tuple[int, Future[RewardResult]]]]:
    """Read each completion: one without a program gets its result in ``results`` at
    once; the others wait, by index, on the cache entry of their (program, case).  The
    jobs are the distinct entries this call claimed, so must compute."""
    own: dict[str, _Job] = {}
    waiting: list[tuple[int, Future[RewardResult]]] = []
    for index, (completion, target) in enumerate(zip(completions, targets, strict=True)):
        domain = get_domain(target.domain)
        read = read_attempt(Reply(completion or ""), domain)
        if read.program is None:
            results[index] = _no_program(mode)
            continue
        key = _cache_key(mode, limits, target, read.program)
        if key in own:
            waiting.append((index, own[key].entry))
            continue
        entry, mine = store.claim(key)
        if mine:
            own[key] = _Job(domain, target, read, key, entry)
        waiting.append((index, entry))
    return list(own.values()), waiting


def _compute(jobs: Sequence[_Job], mode: RewardMode, limits: Limits, solver: Solver | None) -> None:
    if not jobs:
        return
    size = solver.size if solver is not None else process_solver().size
    # These threads only hand programs over and wait: the programs run on the pool's own
    # long-lived threads (see ``process_pool``).
    with ThreadPoolExecutor(max(1, min(len(jobs), size))) as executor:
        executions = list(executor.map(lambda job: run_in_pool(job.program, limits, solver), jobs))
    judged = [
        job.read.judged(execution, job.target.gold)
        for job, execution in zip(jobs, executions, strict=True)
    ]
    if mode == "paper":
        failed = [
            job
            for job, attempt in zip(jobs, judged, strict=True)
            if _earns_partial_credit(job.domain, job.target, attempt)
        ]
        texts = [job.program for job in failed]
        texts += [t for t in {job.target.reference_text() for job in failed} if t is not None]
        prefetch_signatures(texts, solver)
    proofs: dict[int, Proven | None] = {}
    if mode == "grounded":
        proofs = _proofs(jobs, judged, solver)
    for i, (job, attempt) in enumerate(zip(jobs, judged, strict=True)):
        job.entry.set_result(_judge(job.domain, job.target, attempt, mode, solver, proofs.get(i)))


def _proofs(
    jobs: Sequence[_Job], judged: Sequence[JudgedAttempt], solver: Solver | None
) -> dict[int, Proven | None]:
    """The proof of the answer of every job answered correctly (the only ones the
    ``grounded`` mode can pay), read by the analyser in batches, like ``analyze``."""
    wanted = [i for i, attempt in enumerate(judged) if attempt.outcome == "correct"]
    if not wanted:
        return {}
    texts = [jobs[i].program for i in wanted]
    reports = call_in_pool(lambda pool: analyse_many(texts, "full", pool), solver)
    return {
        i: Proven.of(jobs[i].domain, None if "analyser_error" in report else report)
        for i, report in zip(wanted, reports, strict=True)
    }


def _earns_partial_credit(domain: Domain, target: RewardTarget, judged: JudgedAttempt) -> bool:
    if judged.execution is None or judged.execution.status not in NOT_EXECUTABLE:
        return False
    answer = judged.answer
    return answer.value is None or not _exact(domain, answer.value, target.gold)


__all__ = [
    "PAPER_TIMEOUT_S",
    "PARTIAL_CREDIT",
    "REWARD_MODES",
    "RewardCache",
    "RewardInputError",
    "RewardMode",
    "RewardResult",
    "RewardTarget",
    "check_mode",
    "reward_cache",
    "score_batch",
    "score_completion",
]
