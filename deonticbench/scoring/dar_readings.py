"""DAR's readings of a run, per domain x mode, beside the harness reader's figure: the
same final states scored by DAR's scorer in both of its behaviours (``dar_scorer``),
and how DAR's verifier rewarded them.

Two kinds of run hold DAR's view of each trial:

* a run made with ``eval --protocol dar``: DAR's verifier ran on each trial's final
  /app (``reading.dar_verifier``), and its verdict is the record's ``agent.dar`` (reward, stdout,
  exception);
* a run imported from Harbor (``import-harbor``): what DAR's scorer reads of each trial
  is kept in ``harbor.jsonl`` beside the records (the verifier's lines, the exception,
  Harbor's reward).

These rows are the one source of every output of DAR's figures: ``score`` prints them
as text (``integrations.harbor.comparisons``) and in ``--json``, results.json and the
report carry them (``readings_json``; docs/schemas.md names each key).
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data.domains import DISPLAY_ORDER, DOMAINS
from ..store.run import Run
from ..vocabulary.modes import mode_rank
from ..vocabulary.protocols import DAR_PROTOCOL
from .dar_scorer import DarScore, DarTrial, dar_score, read_verifier_output
from .scores import RunScores

DAR_VIEW_FILE = "harbor.jsonl"
"""In a run folder written by ``import-harbor``: what DAR's scorer reads of each trial."""
NO_EXCEPTION = "none"
"""The ``no_reward`` key of a trial that has no reward and no Harbor exception."""


@dataclass(frozen=True)
class ViewedTrial:
    """One trial as DAR's verifier left it and DAR's scorer reads it."""

    key: tuple[str, str, str, int]
    """The record's (domain, case id, mode, sample)."""
    trial: DarTrial
    reward: float | None
    """The reward DAR's verifier wrote (Harbor's, for an import), None when none."""


def read_view_file(run_dir: str | Path) -> list[dict[str, Any]] | None:
    """The rows of a run's ``harbor.jsonl``; None when the run has none (it was not
    imported from Harbor)."""
    path = Path(run_dir) / DAR_VIEW_FILE
    if not path.is_file():
        return None
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def viewed_trials(run: Run) -> list[ViewedTrial] | None:
    """DAR's view of each trial of a run: a dar-protocol run's records' verdicts (where
    test.sh always ran; it may have printed nothing: ``("", "")``), else the import's
    file; None for a run that holds no such view."""
    if run.protocol == DAR_PROTOCOL:
        viewed = []
        for record in run.records:
            verdict = record.agent.dar if record.agent is not None else None
            if verdict is None:
                continue
            expected, got = read_verifier_output(str(verdict.get("stdout") or ""))
            trial = DarTrial(expected, got, exception=verdict.get("exception"))
            viewed.append(ViewedTrial(record.key, trial, _reward(verdict.get("reward"))))
        return viewed
    rows = read_view_file(run.path)
    if rows is None:
        return None
    return [
        ViewedTrial(
            (str(row["key"][0]), str(row["key"][1]), str(row["key"][2]), int(row["key"][3])),
            DarTrial(
                expected=row["expected"],
                got=row["got"],
                exception=row["exception"],
                missing_stdout=bool(row["missing_stdout"]),
            ),
            _reward(row.get("harbor_reward")),
        )
        for row in rows
    ]


def _reward(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class RewardCounts:
    """DAR's verifier's verdicts on a cell's trials: reward 1, another reward (0), and no
    reward, by Harbor's exception for it (``VerifierTimeoutError``,
    ``RewardFileNotFoundError``, ...)."""

    reward_1: int
    reward_0: int
    no_reward: dict[str, int]

    @classmethod
    def of(cls, viewed: Sequence[ViewedTrial]) -> RewardCounts:
        missing = Counter(v.trial.exception or NO_EXCEPTION for v in viewed if v.reward is None)
        return cls(
            reward_1=sum(1 for v in viewed if v.reward == 1),
            reward_0=sum(1 for v in viewed if v.reward is not None and v.reward != 1),
            no_reward=dict(sorted(missing.items())),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"reward_1": self.reward_1, "reward_0": self.reward_0, "no_reward": self.no_reward}


@dataclass(frozen=True)
class ScorerRow:
    """One domain x mode of a run read three ways: the harness's judging with the
    paper's metric, and DAR's scorer by default and strict; with DAR's verifier's
    rewards."""

    domain: str
    mode: str
    metric: str
    """accuracy or macro_f1: the domain's metric (DAR's too, for its four datasets)."""
    n: int
    paper: float | None
    """The harness reader's point estimate of the cell, first attempts, by the paper's
    metric (None: not scored).  ``harness_reader`` in the JSON."""
    dar_default: DarScore
    dar_strict: DarScore
    """``--errors-as-incorrect``."""
    rewards: RewardCounts | None = None
    """DAR's verifier's rewards (None where the rows were built without them)."""

    def value(self, score: DarScore) -> float:
        return score.accuracy if self.metric == "accuracy" else score.macro_f1

    @property
    def dar_classes(self) -> tuple[str, ...] | None:
        """The classes DAR's default macro-F1 averages over (the expected values seen,
        ``""`` included); None for an accuracy cell, which has none."""
        return None if self.metric == "accuracy" else self.dar_default.classes

    def to_dict(self) -> dict[str, Any]:
        """The row under keys that name the reader of each figure (docs/schemas.md)."""
        return {
            "domain": self.domain,
            "mode": self.mode,
            "metric": self.metric,
            "trials": self.n,
            "harness_reader": self.paper,
            "dar_default": self.value(self.dar_default),
            "dar_strict": self.value(self.dar_strict),
            "dar_classes": list(self.dar_classes) if self.dar_classes is not None else None,
            "dar_scorer": {
                "default": _scorer_dict(self.dar_default),
                "strict": _scorer_dict(self.dar_strict),
            },
            "dar_rewards": self.rewards.to_dict() if self.rewards is not None else None,
        }


def _scorer_dict(score: DarScore) -> dict[str, Any]:
    return {
        "correct": score.correct,
        "accuracy": score.accuracy,
        "macro_f1": score.macro_f1,
        "errors": score.errors,
        "f1_classes": list(score.classes),
    }


def rows_of(viewed: Sequence[ViewedTrial], scores: RunScores) -> list[ScorerRow]:
    """DAR's view of a run's trials scored per domain x mode, in the tables' order, each
    beside the harness reader's figure of the same cell."""
    groups: dict[tuple[str, str], list[ViewedTrial]] = defaultdict(list)
    for v in viewed:
        domain, _, mode, _ = v.key
        groups[(domain, mode)].append(v)
    order = {name: i for i, name in enumerate(DISPLAY_ORDER)}
    rows = []
    for (domain, mode), cell in sorted(
        groups.items(), key=lambda kv: (order.get(kv[0][0], 99), mode_rank(kv[0][1]))
    ):
        trials = [v.trial for v in cell]
        group = scores.group(domain, mode, "first")
        rows.append(
            ScorerRow(
                domain=domain,
                mode=mode,
                metric=DOMAINS[domain].metric,
                n=len(trials),
                paper=group.estimate.point if group is not None else None,
                dar_default=dar_score(trials),
                dar_strict=dar_score(trials, errors_as_incorrect=True),
                rewards=RewardCounts.of(cell),
            )
        )
    return rows


def scorer_rows(scores: RunScores) -> list[ScorerRow] | None:
    """A run's DAR readings per domain x mode; None for a run that holds no DAR view
    (neither made under ``--protocol dar`` nor imported from Harbor)."""
    viewed = viewed_trials(scores.run)
    return None if viewed is None else rows_of(viewed, scores)


def overall(rows: Sequence[ScorerRow], strict: bool) -> float:
    """DAR's "Overall Accuracy": exact matches over all trials of all domains."""
    n = sum(r.n for r in rows)
    correct = sum((r.dar_strict if strict else r.dar_default).correct for r in rows)
    return correct / n if n else 0.0


def readings_json(scores: RunScores) -> dict[str, Any] | None:
    """The run's DAR readings as results.json, ``score --json`` and the report hold
    them (docs/schemas.md, "dar_readings"); None for a run without DAR's view."""
    rows = scorer_rows(scores)
    if not rows:  # a dar run recorded before its records kept DAR's verdicts has none
        return None
    return {
        "verdicts": "records" if scores.run.protocol == DAR_PROTOCOL else DAR_VIEW_FILE,
        "rows": [r.to_dict() for r in rows],
        "overall_accuracy": {
            "dar_default": overall(rows, strict=False),
            "dar_strict": overall(rows, strict=True),
        },
    }


__all__ = [
    "DAR_VIEW_FILE",
    "RewardCounts",
    "ScorerRow",
    "ViewedTrial",
    "overall",
    "read_view_file",
    "readings_json",
    "rows_of",
    "scorer_rows",
    "viewed_trials",
]
