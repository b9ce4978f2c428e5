"""The long table's rows: one per run x domain x mode x stage (``score``'s CSV, the
API's ``score_rows``), and the one refusal of runs with nothing to score."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..errors import DeonticBenchError
from ..vocabulary.modes import Mode
from .encoding import Stage
from .scores import GroupScore, RunScores


@dataclass(frozen=True)
class ScoreRow:
    """One row of the long table: a run x domain x mode x stage, fractions in [0, 1].

    ``mean``/``ci_low``/``ci_high`` are the bootstrap mean and 95% interval; ``point``
    the metric on the full data; ``upper``/``lower`` the interval's distances from the
    mean (the paper's super- and subscripts).  The field order is the CSV's columns.
    """

    domain: str
    mode: Mode
    stage: Stage
    metric: str
    n_cases: int
    k: int
    mean: float
    ci_low: float
    ci_high: float
    accuracy: float
    abstain_rate: float
    wrong_rate: float
    point: float
    upper: float
    lower: float
    n_samples: int
    bootstrap: int
    seed: int
    """The bootstrap's seed (``score(bootstrap_seed=...)``), in the column ``seed`` of
    long.csv and of results.json's rows."""
    model: str
    run: str
    protocol: str
    """The protocol the run followed (``vocabulary.protocols``): which figures compare."""

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.columns()}


class NothingToScoreError(DeonticBenchError):
    """No run folder given holds a record that can be scored."""


def require_scorable(scores: Sequence[RunScores]) -> None:
    """Refuse, in one sentence, runs with nothing to score (``score`` and ``report``)."""
    if not any(s.groups for s in scores):
        # Named, so that a typo among several folders is found at once.
        names = ", ".join(str(s.run.path) for s in scores)
        raise NothingToScoreError(
            f"None of the given run folders holds a scorable record ({names})."
        )


def score_rows(scores: Sequence[RunScores]) -> list[ScoreRow]:
    """The long table of scored runs: one row per run x domain x mode x stage."""
    return [score_row(g, s) for s in scores for g in s.groups]


def score_row(g: GroupScore, s: RunScores) -> ScoreRow:
    e = g.estimate
    return ScoreRow(
        domain=g.domain,
        mode=g.mode,
        stage=g.stage,
        metric=g.metric,
        n_cases=g.n_cases,
        k=g.k,
        mean=e.mean,
        ci_low=e.low,
        ci_high=e.high,
        accuracy=g.rates.accuracy,
        abstain_rate=g.rates.abstain,
        wrong_rate=g.rates.wrong,
        point=e.point,
        upper=e.upper,
        lower=e.lower,
        n_samples=g.n_samples,
        bootstrap=s.bootstrap,
        seed=s.seed,
        model=g.model,
        run=g.run,
        protocol=s.run.protocol,
    )
