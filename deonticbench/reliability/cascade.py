"""Cascades (the paper's proposal, section 4): answer with the small model when its
confidence is at least tau, else defer to the large model (or to a person).

Both runs hold every case, so each policy is evaluated exactly, nothing simulated: a
sample of the small run is paired with the large run's sample of the same index (modulo
the large run's samples of that case).  For every tau: the metric (accuracy or macro-F1)
with the paper's bootstrap over cases, the share deferred and the cost per case, which is
the small model's always, plus the large model's for a deferred sample, each from the
run's own attempts as the provider billed them (``scoring.results.attempts_cost``, at
``eval/models.yaml``'s prices: cache reads and writes and batches at their own rates), or
at a ``--prices`` file's flat rates when it names the model; tokens where no price is
known).  A deferral to a person is right with probability
``human_accuracy`` and costs ``human_cost`` per case.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import partial
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..errors import ConfigError
from ..scoring.metrics import (
    DEFAULT_BOOTSTRAP,
    POSITIVE,
    effective_class,
    iter_draws,
    macro_f1_from_counts,
)
from ..scoring.results import PRICE_IN, PRICE_OUT, attempts_cost, model_prices
from ..scoring.seeds import domain_rng
from ..store.record import Attempt, Record
from ..store.run import Run
from ._crossfit import crossfit_thresholds
from ._yaml import read_mapping
from .evaluate import MetricValue, summarise
from .signals import GroupSignals, run_signals

DeferTo = Literal["model", "human"]
Prices = Mapping[str, tuple[float, float]]


class CascadeError(ConfigError):
    """Two runs that cannot form a cascade, or a bad prices file."""


def load_prices(path: str | Path) -> dict[str, tuple[float, float]]:
    """A ``--prices`` file: ``{model spec or glob: {usd_per_mtok_in, usd_per_mtok_out}}``."""
    file = Path(path)
    doc = read_mapping(file, "prices file", "map model specs to prices", CascadeError)
    out = {}
    for spec, entry in doc.items():
        pin = entry.get(PRICE_IN) if isinstance(entry, Mapping) else None
        pout = entry.get(PRICE_OUT) if isinstance(entry, Mapping) else None
        if not all(isinstance(p, int | float) and not isinstance(p, bool) for p in (pin, pout)):
            raise CascadeError(
                f"The prices file {file} needs numbers {PRICE_IN} and {PRICE_OUT} for {spec!r}."
            )
        out[str(spec)] = (float(pin), float(pout))  # type: ignore[arg-type]
    return out


def price_of(spec: str, prices: Prices | None) -> tuple[float, float] | None:
    """A model's (input, output) USD per million tokens: the prices file first (exact
    spec, then globs), then eval/models.yaml."""
    flat = _file_price(spec, prices)
    if flat is not None:
        return flat
    listed = model_prices(spec)
    return None if listed is None else (listed.input, listed.output)


def _file_price(spec: str, prices: Prices | None) -> tuple[float, float] | None:
    if prices:
        if spec in prices:
            return prices[spec]
        for pattern, price in prices.items():
            if fnmatchcase(spec, pattern):
                return price
    return None


Pricer = Callable[[Sequence[Attempt]], float]
"""What some attempts of one run cost, in USD."""


def pricer_of(spec: str, prices: Prices | None) -> Pricer | None:
    """How a side's attempts are priced: a ``--prices`` file's flat input and output
    rates when it names the model, else what the provider billed them at eval/models.yaml's
    prices (``scoring.results.attempts_cost``: cache reads and writes, batches and cached
    responses at their own rates, as results.json prices them); None: no price."""
    flat = _file_price(spec, prices)
    if flat is not None:
        pin, pout = flat
        return lambda attempts: (
            (sum(a.tokens_in for a in attempts) * pin + sum(a.tokens_out for a in attempts) * pout)
            / 1e6
        )
    if model_prices(spec) is None:
        return None

    def billed(attempts: Sequence[Attempt]) -> float:
        cost = attempts_cost(spec, attempts)
        return 0.0 if cost is None else cost.usd

    return billed


def _case_costs(
    records: Sequence[Record], case_ids: Sequence[str], price: Pricer | None
) -> NDArray[np.float64]:
    """Each case's cost per sample: all its records' attempts over its samples, in USD by
    ``price`` or in tokens without one."""
    totals: dict[str, list[float]] = {}
    for r in records:
        acc = totals.setdefault(r.case_id, [0.0, 0.0])
        if price is not None:
            acc[0] += price(r.attempts)
        else:
            acc[0] += sum(a.tokens_in + a.tokens_out for a in r.attempts)
        acc[1] += 1
    out = np.zeros(len(case_ids))
    for i, c in enumerate(case_ids):
        cost, n = totals.get(c, [0.0, 1.0])
        out[i] = float(cost) / max(n, 1)
    return out


LARGE_ALONE = "large alone"
PERSON_ALONE = "person alone"
"""The deferred-to side alone: the large model's row, or the person's (``--defer-to
human``), which is no model."""


@dataclass
class CascadePoint:
    label: str
    """``tau``, ``small alone``, ``large alone`` (``person alone`` with ``defer_to``
    human) or ``cross-fitted``."""
    tau: float | None
    metric: MetricValue
    deferred: float
    cost: float
    pareto: bool = False


@dataclass
class CascadeResult:
    domain: str
    mode: str
    stage: str
    signal: str
    metric: str
    small: str
    large: str
    n_cases: int
    cost_unit: str
    points: list[CascadePoint] = field(default_factory=list)
    crossfit: CascadePoint | None = None
    crossfit_taus: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def frontier(self) -> list[CascadePoint]:
        return [p for p in self.points if p.pareto]


@dataclass(frozen=True)
class _Side:
    """One side of the cascade as per-cell arrays over the small run's cells:
    probability of being right (numeric) or of predicting the positive class (binary)."""

    score: NDArray[np.float64]
    cost: NDArray[np.float64]


def _metric(kind: str, gold_pos: Any, q: Any, weight: Any) -> Any:
    """Accuracy (numeric: ``q`` is P(right)) or macro-F1 from fractional confusion counts
    (binary: ``q`` is P(predicted positive)); rows are replicates."""
    if kind == "numeric":
        return np.sum(q * weight, axis=-1) / np.sum(weight, axis=-1)
    tp = np.sum(weight * gold_pos * q, axis=-1)
    fn = np.sum(weight * gold_pos * (1 - q), axis=-1)
    fp = np.sum(weight * (1 - gold_pos) * q, axis=-1)
    tn = np.sum(weight * (1 - gold_pos) * (1 - q), axis=-1)
    return macro_f1_from_counts(*(np.asarray(x, dtype=np.float64) for x in (tp, fp, fn, tn)))


class _Evaluator:
    def __init__(self, g: GroupSignals, replicates: int, seed: int) -> None:
        o = g.outcomes
        self.g, self.o = g, o
        self.kind = o.kind
        self.valid = g.valid
        self.weight = self.valid / o.present[:, None]
        self.gold_pos = np.broadcast_to((o.gold == POSITIVE)[:, None], o.pred.shape).astype(float)
        width = o.pred.shape[1]
        self.cells = [
            d.case * width + (d.u * o.present[d.case]).astype(np.intp)
            for d in iter_draws(o.n_cases, replicates, domain_rng(seed, g.domain))
        ]

    def value(self, q: NDArray[np.float64]) -> MetricValue:
        point = float(_metric(self.kind, self.gold_pos.ravel(), q.ravel(), self.weight.ravel()))
        reps = np.concatenate(
            [
                _metric(
                    self.kind,
                    np.take(self.gold_pos.ravel(), c),
                    np.take(q.ravel(), c),
                    np.ones(c.shape),
                )
                for c in self.cells
            ]
        )
        return summarise(point, np.asarray(reps, dtype=np.float64), None)

    def mean(self, per_cell: NDArray[np.float64]) -> float:
        return float(np.sum(per_cell * self.weight) / self.o.n_cases)


def _pareto(points: list[CascadePoint]) -> None:
    for p in points:
        score = p.metric.point if p.metric.point is not None else -np.inf
        p.pareto = not any(
            (q.metric.point or -np.inf) >= score
            and q.cost <= p.cost
            and ((q.metric.point or -np.inf) > score or q.cost < p.cost)
            for q in points
        )


def _side_of(g: GroupSignals) -> NDArray[np.float64]:
    o = g.outcomes
    if o.kind == "numeric":
        return g.correct.astype(np.float64)
    return effective_class(o.pred, o.abstain, o.gold[:, None]).astype(np.float64)


def _paired(small: GroupSignals, large: GroupSignals) -> NDArray[np.float64]:
    """The large run's per-cell score laid over the small run's cells (same case, the
    sample of the same index modulo the large run's samples of the case)."""
    lo = large.outcomes
    where = {c: i for i, c in enumerate(lo.case_ids)}
    rows = np.array([where[c] for c in small.outcomes.case_ids], dtype=np.intp)
    k = small.outcomes.pred.shape[1]
    cols = np.arange(k)[None, :] % lo.present[rows][:, None]
    return np.asarray(_side_of(large)[rows[:, None], cols], dtype=np.float64)


def cascade(
    small: Run,
    large: Run | None,
    *,
    signal: str = "consistency",
    prices: Prices | None = None,
    defer_to: DeferTo = "model",
    human_accuracy: float = 1.0,
    human_cost: float | None = None,
    replicates: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> list[CascadeResult]:
    """Every domain x mode both runs hold (first attempt), for every threshold."""
    _check_deferral(defer_to, large, human_accuracy, human_cost)
    small_groups = [g for g in run_signals(small) if g.stage == "first"]
    large_groups = (
        {(g.domain, g.mode): g for g in run_signals(large, combined=False) if g.stage == "first"}
        if large is not None
        else {}
    )
    price_small, price_large = _prices_in_usd(small, large, prices, defer_to)
    unit = "USD" if price_small is not None else "tokens"
    results = []
    for g in small_groups:
        s_value = g.signals.get(signal)
        if s_value is None or isinstance(s_value, str):
            continue
        other = large_groups.get((g.domain, g.mode)) if defer_to == "model" else None
        if defer_to == "model" and other is None:
            continue
        notes: list[str] = []
        if other is not None:
            g, other, notes = _on_shared_cases(g, other)
        s = np.asarray(g.signals[signal])
        small_records = [r for r in small.records if r.domain == g.domain and r.mode == g.mode]
        cost_small = _case_costs(small_records, g.outcomes.case_ids, price_small)
        if other is not None and large is not None:
            cost_large, q_large, large_name = _model_side(g, other, large, price_large)
        else:
            cost_large, q_large, large_name = _human_side(g, s.shape, human_accuracy, human_cost)
        sides = _Sides(s, _side_of(g), q_large, cost_small, cost_large)
        result = CascadeResult(
            g.domain, g.mode, g.stage, signal, g.outcomes.metric, small.name, large_name,
            g.outcomes.n_cases, unit, notes=notes,
        )  # fmt: skip
        _evaluate(result, g, sides, replicates, seed, PERSON_ALONE if other is None else None)
        results.append(result)
    return results


def _check_deferral(
    defer_to: DeferTo, large: Run | None, human_accuracy: float, human_cost: float | None
) -> None:
    """What deferring needs: a person's cost and accuracy, or the large model's run."""
    if defer_to == "human":
        if human_cost is None:
            raise CascadeError("--defer-to human needs --human-cost (per case deferred).")
        if not 0.0 <= human_accuracy <= 1.0:
            raise CascadeError("--human-accuracy is a share between 0 and 1.")
    elif large is None:
        raise CascadeError("A cascade to a model needs the large model's run.")


def _prices_in_usd(
    small: Run, large: Run | None, prices: Prices | None, defer_to: DeferTo
) -> tuple[Pricer | None, Pricer | None]:
    """Both sides' prices when the cascade can be costed in USD, else (None, None): costs
    are then counted in tokens.  A person is priced in USD, so the small model must be."""
    price_small = pricer_of(small.model, prices)
    price_large = pricer_of(large.model, prices) if large is not None else None
    if defer_to == "human" and price_small is None:
        raise CascadeError(
            f"--defer-to human prices the person in USD, so {small.model} needs a price too: "
            "add it to a --prices file (usd_per_mtok_in, usd_per_mtok_out)."
        )
    if price_small is not None and (defer_to == "human" or price_large is not None):
        return price_small, price_large
    return None, None


def _model_side(
    g: GroupSignals, other: GroupSignals, large: Run, price: Pricer | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], str]:
    """Deferring to the large model: its cost per case, its score per cell, its name."""
    records = [r for r in large.records if r.domain == g.domain and r.mode == g.mode]
    return _case_costs(records, g.outcomes.case_ids, price), _paired(g, other), large.name


def _human_side(
    g: GroupSignals, shape: tuple[int, ...], human_accuracy: float, human_cost: float | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], str]:
    """Deferring to a person: a fixed cost per case, right with ``human_accuracy`` (for a
    label, the wrong class otherwise) in every cell of ``shape``, named by that accuracy."""
    cost = np.full(g.outcomes.n_cases, float(human_cost or 0.0))
    if g.outcomes.kind == "numeric":
        q = np.full(shape, human_accuracy)
    else:
        gold_pos = (g.outcomes.gold == POSITIVE)[:, None]
        q = np.where(gold_pos, human_accuracy, 1.0 - human_accuracy) * np.ones(shape)
    return cost, np.asarray(q, dtype=np.float64), f"human (accuracy {human_accuracy:g})"


@dataclass(frozen=True)
class _Sides:
    """Per cell of the small run: its confidence, both sides' scores (see ``_side_of``),
    and per case each side's cost per sample."""

    s: NDArray[np.float64]
    q_small: NDArray[np.float64]
    q_large: NDArray[np.float64]
    cost_small: NDArray[np.float64]
    cost_large: NDArray[np.float64]


def _evaluate(
    result: CascadeResult,
    g: GroupSignals,
    sides: _Sides,
    replicates: int,
    seed: int,
    large_label: str | None = None,
) -> None:
    """Every tau, the two sides alone, the frontier and the cross-fitted tau;
    ``large_label`` names the deferred-to side when it is not a model."""
    ev = _Evaluator(g, replicates, seed)
    taus = sorted({*np.unique(sides.s[ev.valid]).tolist(), float("inf")})
    result.points = [_policy_point(ev, sides, t, "tau", t) for t in taus]
    result.points.extend(_alone_points(ev, sides, large_label))
    _pareto(result.points)
    choose = partial(_cheapest_tau, ev, sides)
    per_case, chosen = crossfit_thresholds(taus, choose, g.outcomes.n_cases, seed)
    result.crossfit = _policy_point(ev, sides, per_case, "cross-fitted", None)
    result.crossfit_taus = chosen


def _policy_point(
    ev: _Evaluator,
    sides: _Sides,
    tau: NDArray[np.float64] | float,
    label: str,
    value: float | None,
) -> CascadePoint:
    """The cascade that defers a valid cell when the small side's confidence is below
    ``tau`` (one threshold, or one per case): its metric, share deferred and cost."""
    tau_cells = tau[:, None] if isinstance(tau, np.ndarray) else tau
    defer = (sides.s < tau_cells) & ev.valid
    q = np.where(defer, sides.q_large, sides.q_small)
    cost = sides.cost_small[:, None] + defer * sides.cost_large[:, None]
    return CascadePoint(label, value, ev.value(q), ev.mean(defer.astype(float)), ev.mean(cost))


def _alone_points(ev: _Evaluator, sides: _Sides, large_label: str | None) -> list[CascadePoint]:
    """The two sides alone: the small side never deferring, the large side (or the
    person, named by ``large_label``) always."""
    ones = np.ones(sides.s.shape)
    return [
        CascadePoint(
            "small alone",
            None,
            ev.value(sides.q_small),
            0.0,
            ev.mean(sides.cost_small[:, None] * ones),
        ),
        CascadePoint(
            large_label or LARGE_ALONE,
            None,
            ev.value(sides.q_large),
            1.0,
            ev.mean(sides.cost_large[:, None] * ones),
        ),
    ]


def _cheapest_tau(
    ev: _Evaluator, sides: _Sides, train: NDArray[np.bool_], candidates: Sequence[float]
) -> float:
    """The cheapest of ``candidates`` that is as good as the large side alone on the
    training cases (``train``); if none is, the best one (the cheaper on a tie)."""
    s, q_small, q_large = sides.s, sides.q_small, sides.q_large
    cost_small, cost_large = sides.cost_small, sides.cost_large
    w = ev.weight[train].ravel()
    gp = ev.gold_pos[train].ravel()
    target = float(_metric(ev.kind, gp, q_large[train].ravel(), w))
    rows = []
    for t in candidates:
        defer = (s[train] < t) & ev.valid[train]
        q = np.where(defer, q_large[train], q_small[train])
        score = float(_metric(ev.kind, gp, q.ravel(), w))
        cost = cost_small[train][:, None] + defer * cost_large[train][:, None]
        rows.append((t, score, float(np.sum(cost.ravel() * w))))
    good = [r for r in rows if r[1] >= target - 1e-12]
    if good:
        return min(good, key=lambda r: (r[2], -r[1]))[0]
    return max(rows, key=lambda r: (r[1], -r[2]))[0]


def _on_shared_cases(
    g: GroupSignals, other: GroupSignals
) -> tuple[GroupSignals, GroupSignals, list[str]]:
    """Both runs' groups restricted to the cases they share, with a note when either
    held cases the other lacks."""
    notes: list[str] = []
    common = sorted(set(g.outcomes.case_ids) & set(other.outcomes.case_ids))
    if len(common) < g.outcomes.n_cases or len(common) < other.outcomes.n_cases:
        notes.append(f"the runs share {len(common)} cases; only those are used")
    return _restrict(g, common), _restrict(other, common), notes


def _restrict(g: GroupSignals, case_ids: Sequence[str]) -> GroupSignals:
    if tuple(case_ids) == g.outcomes.case_ids:
        return g
    where = {c: i for i, c in enumerate(g.outcomes.case_ids)}
    rows = np.array([where[c] for c in case_ids], dtype=np.intp)
    signals: dict[str, Any] = {
        k: v if isinstance(v, str) else np.asarray(v)[rows] for k, v in g.signals.items()
    }
    return GroupSignals(
        g.run, g.model, g.domain, g.mode, g.stage, g.outcomes.subset(list(case_ids)),
        g.correct[rows], signals, list(g.notes),
    )  # fmt: skip
