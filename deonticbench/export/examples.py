"""The training pool and what goes into a training file.

The training pool is the whole split minus the hard split (paper 2.5 and 4.2: hard
cases are held out of training), matched by case id and by content, since upstream's
whole split repeats some hard cases under new ids.  Each pool case becomes one example:
the harness's own prompt for the chosen mode, and its reference program cleaned of
upstream's ``Label:`` directives, in the fenced form the prompt asks for, re-run through
the reward path (extraction, sandbox, answer reading, judging); an example whose program
does not reproduce the gold label is dropped and counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from ..data.cases import Case, DataSource, load_cases
from ..data.domains import Domain
from ..data.selection import parse_limit
from ..errors import ConfigError, DataError
from ..prompting import demonstration, hard_complement, problem_key, render
from ..prompting.plan import plan_run
from ..rewards.core import RewardTarget, score_batch
from ..store.run import RunLike, read_run
from ..vocabulary.chat import Message
from ..vocabulary.modes import Mode

PROGRAM_MODES: tuple[Mode, ...] = ("zero-shot", "few-shot")
"""Prompt modes whose completion is a program (direct mode has no program to train on)."""


def first_cases(limit_text: str | None) -> int | None:
    """``--limit`` read as eval reads it; an export takes the first N cases of its pool
    (a range names cases of a split, which an export's pool is not)."""
    limit = parse_limit(limit_text)
    if isinstance(limit, tuple):
        raise ConfigError(
            f"export takes --limit N (the first N cases), not a range ({limit_text})."
        )
    return limit


@dataclass(frozen=True)
class Example:
    domain: str
    case: Case
    messages: tuple[Message, ...]
    prompt_hash: str
    completion: str
    target: RewardTarget

    @property
    def system(self) -> str:
        return "\n\n".join(m.content for m in self.messages if m.role == "system")

    @property
    def user(self) -> str:
        return "\n\n".join(m.content for m in self.messages if m.role == "user")

    def chat(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in self.messages]


@dataclass
class DomainCounts:
    domain: str
    whole: int = 0
    hard: int = 0
    held_out_copies: int = 0
    """Whole-split cases that are hard cases under another id (dropped)."""
    limited_from: int | None = None
    """The cases there were before ``--limit`` kept the first ``pool`` of them."""
    pool: int = 0
    kept: int = 0
    dropped: int = 0
    """Reference programs that did not reproduce the gold label in the sandbox."""
    dropped_ids: list[str] = field(default_factory=list)
    rejected: int = 0
    """DPO: examples that found at least one rejected completion."""
    pairs: int = 0
    skipped: str | None = None

    def line(self, split: str) -> str:
        """What an export read, kept and dropped of this domain."""
        if self.skipped:
            return f"{self.domain}: skipped ({self.skipped})"
        if split == "train":
            copies = f", {self.held_out_copies} hard copies" if self.held_out_copies else ""
            read = f"pool {self.pool} (whole {self.whole} minus hard {self.hard}{copies}"
            # --limit keeps the first cases of the pool: say so, or the sum looks wrong.
            limited = self.limited_from
            read += f"; the first {self.pool} of {limited} (--limit))" if limited else ")"
        else:
            # The test file reads the hard split alone: there is no pool to subtract from.
            read = f"hard {self.pool}" + (
                f" of {self.hard} (--limit)" if self.pool < self.hard else ""
            )
        line = f"{self.domain}: {read}, kept {self.kept}, dropped {self.dropped} not "
        line += "reproducing gold"
        return line + (f", {self.pairs} preference pairs" if self.pairs else "")

    def to_json(self) -> dict[str, object]:
        if self.skipped:
            return {"skipped": self.skipped}
        return {
            "whole": self.whole,
            "hard": self.hard,
            "held_out_copies": self.held_out_copies,
            "pool": self.pool,
            "kept": self.kept,
            "dropped_not_reproducing_gold": self.dropped,
            "dropped_ids": self.dropped_ids,
            "dpo_cases_with_rejected": self.rejected,
            "rows": self.pairs or self.kept,
        }


def training_pool(domain: Domain, source: DataSource, counts: DomainCounts) -> list[Case]:
    """The whole split minus the hard split, by id and by content (``hard_complement``),
    its sizes counted into ``counts`` for the manifest."""
    complement = hard_complement(domain, source)
    counts.whole, counts.hard = len(complement.whole), len(complement.hard)
    counts.held_out_copies = len(complement.unseen) - len(complement.cases)
    counts.pool = len(complement.cases)
    return complement.cases


def assert_no_hard_case(domain: Domain, source: DataSource, cases: Iterable[Case]) -> None:
    """The last guard before a training file is written."""
    hard = load_cases(domain, "hard", source)
    hard_ids = {c.id for c in hard}
    hard_keys = {problem_key(c) for c in hard}
    leaked = [c.id for c in cases if c.id in hard_ids or problem_key(c) in hard_keys]
    if leaked:
        raise DataError(
            f"refusing to write a training file: {domain.name} cases {', '.join(leaked[:5])} "
            "are hard-split cases."
        )


def completion_for(domain: Domain, case: Case) -> str:
    """The reference program, cleaned of Label: directives, as a model should answer."""
    return f"```prolog\n{demonstration(domain, case)}\n```"


def build_examples(
    domain: Domain,
    cases: Sequence[Case],
    source: DataSource,
    mode: Mode,
    *,
    seed: int,
    counts: DomainCounts,
    timeout_s: float | None,
) -> list[Example]:
    """Prompts exactly as the harness renders them, completions verified in the sandbox."""
    if mode not in PROGRAM_MODES:
        raise ConfigError(
            f"the {mode} prompt has no program to train on; choose zero-shot or few-shot."
        )
    loader: Callable[[Domain, str, DataSource], list[Case]] = lambda d, s, src: list(cases)  # noqa: E731
    plan = plan_run(
        [domain], split="train", modes=[mode], source=source, k=1, seed=seed, load=loader
    )
    completions = [completion_for(domain, unit.case) for unit in plan.units]
    targets = [RewardTarget.from_case(unit.case) for unit in plan.units]
    verdicts = score_batch(completions, targets, mode="eval", timeout_s=timeout_s)
    examples: list[Example] = []
    for unit, completion, target, verdict in zip(
        plan.units, completions, targets, verdicts, strict=True
    ):
        if verdict.outcome != "correct":
            counts.dropped += 1
            counts.dropped_ids.append(unit.case.id)
            continue
        prompt = render(unit.case, unit.mode, unit.exemplars)
        examples.append(
            Example(
                domain=domain.name,
                case=unit.case,
                messages=prompt.messages,
                prompt_hash=prompt.prompt_hash,
                completion=completion,
                target=target,
            )
        )
    counts.kept = len(examples)
    return examples


def rejected_completions(
    run: RunLike, examples: Sequence[Example], mode: Mode
) -> dict[tuple[str, str], list[str]]:
    """Wrong or abstained first responses of a run, for the examples' exact prompts.

    Only a record of the same case, in the same prompt mode, whose first attempt was
    asked with the very prompt of the example (same prompt hash) counts, so that chosen
    and rejected answer the same prompt.  Failed requests are not completions.  A run
    folder is read as ``score`` reads it (``read_run``: a damaged line is skipped).
    """
    wanted = {(e.domain, e.case.id): e.prompt_hash for e in examples}
    found: dict[tuple[str, str], list[str]] = {}
    read = read_run(run)
    try:
        records = list(read.records)
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read the run {read.path}: {exc}") from None
    if not records:
        raise DataError(f"{read.path} holds no records (expected a run folder with records.jsonl).")
    for record in records:
        key = (record.domain, record.case_id)
        if record.mode != mode or key not in wanted:
            continue
        first = record.first
        if first.prompt_hash != wanted[key] or first.error or not first.response:
            continue
        if first.outcome not in ("wrong", "abstain"):
            continue
        texts = found.setdefault(key, [])
        if first.response not in texts:
            texts.append(first.response)
    return found
