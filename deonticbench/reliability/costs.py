"""What a wrong answer costs: ``--costs FILE`` and the expected cost per case.

The file (YAML) gives, per domain, the cost of an abstention (or a deferral) and of a
wrong answer; for a numeric domain the wrong answer's cost may depend on the sign and
size of the error ``u = gold - answer`` (an amount owed):

    sara_numeric:
      abstain: 270                 # per abstention or deferral
      wrong: 0                     # flat, added to every wrong answer (default 0)
      underpayment:                # u > 0: a penalty on the understatement
        rate: 0.20
        threshold_abs: 5000
        threshold_rel: 0.10        # charged only when u > max(threshold_abs, rel * gold)
      overpayment_weight: 1.0      # u < 0: this share of the overpaid amount is lost

``eval/costs.yaml`` ships the part of the tax paper's cost model that rests on a statute
(26 U.S.C. 6662, docs/reliability.md) and no guessed figure: its abstention cost and the
treatment of overpayments must be stated by the user.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._paths import EVAL
from ..data.domains import DOMAINS, NUMERIC_TOLERANCE
from ..errors import ConfigError
from ..scoring.metrics import DEFAULT_BOOTSTRAP, iter_draws, numeric_correct
from ..scoring.seeds import domain_rng
from ._crossfit import crossfit_thresholds
from ._yaml import read_mapping
from .evaluate import MetricValue, summarise
from .signals import GroupSignals

DEFAULT_COSTS = EVAL / "costs.yaml"
"""The shipped cost file (statute-backed figures only)."""
POLICIES = ("always_answer", "always_abstain", "best_selective")


class CostsError(ConfigError):
    """A costs file that cannot be read or misses a figure it needs."""


@dataclass(frozen=True)
class CostModel:
    domain: str
    abstain: float | None
    wrong: float = 0.0
    underpay_rate: float = 0.0
    underpay_threshold_abs: float = 0.0
    underpay_threshold_rel: float = 0.0
    overpay_weight: float = 0.0

    def answer_costs(
        self, o_pred: NDArray[Any], abstain: NDArray[Any], gold: NDArray[Any], correct: NDArray[Any]
    ) -> NDArray[np.float64]:
        """The cost of each sample as the model answered it (its own abstentions cost
        ``abstain``)."""
        cost = np.where(correct, 0.0, self.wrong)
        if DOMAINS[self.domain].label_kind == "numeric":
            u = gold - np.round(o_pred)
            wrong = ~correct & ~abstain & (np.abs(u) > NUMERIC_TOLERANCE)
            threshold = np.maximum(
                self.underpay_threshold_abs, self.underpay_threshold_rel * np.abs(gold)
            )
            penalty = np.where(u > threshold, self.underpay_rate * u, 0.0)
            lost = np.where(u < 0, self.overpay_weight * -u, 0.0)
            cost = cost + np.where(wrong, penalty + lost, 0.0)
        return np.asarray(np.where(abstain, self.abstain_cost(), cost), dtype=np.float64)

    def abstain_cost(self) -> float:
        if self.abstain is None:
            raise CostsError(
                f"The costs file gives no 'abstain' cost for {self.domain}; state one "
                "(docs/reliability.md explains why none is shipped)."
            )
        return self.abstain


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise CostsError(f"{where} must be a non-negative number, not {value!r}.")
    return float(value)


def load_costs(path: str | Path | None = None) -> dict[str, CostModel]:
    """Read a costs file (default: the shipped ``eval/costs.yaml``)."""
    file = Path(path) if path is not None else DEFAULT_COSTS
    doc = read_mapping(file, "costs file", "map domains to their costs", CostsError)
    out: dict[str, CostModel] = {}
    for name, entry in doc.items():
        if name not in DOMAINS:
            raise CostsError(f"The costs file {file} names an unknown domain {name!r}.")
        if not isinstance(entry, Mapping):
            raise CostsError(f"{file}: {name} should be a mapping of costs.")
        known = {"abstain", "wrong", "underpayment", "overpayment_weight", "source"}
        extra = set(entry) - known
        if extra:
            raise CostsError(f"{file}: {name} has unknown keys {', '.join(sorted(extra))}.")
        under = entry.get("underpayment") or {}
        numeric = DOMAINS[name].label_kind == "numeric"
        if (under or "overpayment_weight" in entry) and not numeric:
            raise CostsError(f"{file}: {name} is not numeric; give it a flat 'wrong' cost.")
        out[name] = CostModel(
            domain=name,
            abstain=None
            if entry.get("abstain") is None
            else _number(entry["abstain"], f"{file}: {name}.abstain"),
            wrong=_number(entry.get("wrong", 0.0), f"{file}: {name}.wrong"),
            underpay_rate=_number(under.get("rate", 0.0), f"{file}: {name}.underpayment.rate"),
            underpay_threshold_abs=_number(
                under.get("threshold_abs", 0.0), f"{file}: {name}.underpayment.threshold_abs"
            ),
            underpay_threshold_rel=_number(
                under.get("threshold_rel", 0.0), f"{file}: {name}.underpayment.threshold_rel"
            ),
            overpay_weight=_number(
                entry.get("overpayment_weight", 0.0), f"{file}: {name}.overpayment_weight"
            ),
        )
    return out


@dataclass
class CostReport:
    """Expected cost per case of the three policies, for one group and signal."""

    run: str
    domain: str
    mode: str
    stage: str
    signal: str
    accuracy: float
    policies: dict[str, MetricValue]
    thresholds: list[float]
    """The best selective policy's threshold in each cross-fitting fold."""


def _case_mean(values: NDArray[np.float64], g: GroupSignals) -> float:
    return float(np.mean(np.sum(values * g.valid, axis=1) / g.outcomes.present))


def _bootstrap_mean(
    values: NDArray[np.float64], g: GroupSignals, replicates: int, seed: int
) -> NDArray[np.float64]:
    o = g.outcomes
    width = o.pred.shape[1]
    parts = []
    for d in iter_draws(o.n_cases, replicates, domain_rng(seed, g.domain)):
        cell = d.case * width + (d.u * o.present[d.case]).astype(np.intp)
        parts.append(np.take(values.ravel(), cell).mean(axis=1))
    return np.concatenate(parts)


def sample_costs(g: GroupSignals, model: CostModel) -> NDArray[np.float64]:
    o = g.outcomes
    gold = np.broadcast_to(o.gold[:, None], o.pred.shape)
    correct = g.correct
    if o.kind == "numeric":
        correct = numeric_correct(o.pred, o.abstain, gold) & g.valid
    return model.answer_costs(o.pred, o.abstain, gold, correct) * g.valid


def expected_costs(
    g: GroupSignals,
    signal: str,
    model: CostModel,
    *,
    replicates: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> CostReport | None:
    """Always-answer, always-abstain and the best selective policy (answer when the
    signal is at least a threshold chosen by cross-fitting, else abstain)."""
    s = g.signals.get(signal)
    if s is None or isinstance(s, str):
        return None
    s = np.asarray(s)
    answer = sample_costs(g, model)
    abstain = model.abstain_cost()
    valid = g.valid
    candidates = sorted({*np.unique(s[valid]).tolist(), float("inf")})
    present = g.outcomes.present

    def mean_cost(train: NDArray[np.bool_], tau: float) -> float:
        chosen = np.where(s[train] >= tau, answer[train], abstain) * valid[train]
        return float(np.mean(chosen.sum(axis=1) / present[train]))

    def choose(train: NDArray[np.bool_], taus: Sequence[float]) -> float:
        costs = [mean_cost(train, t) for t in taus]
        return float(taus[int(np.argmin(costs))])

    per_case, chosen = crossfit_thresholds(candidates, choose, g.outcomes.n_cases, seed)
    selective = np.where(s >= per_case[:, None], answer, abstain) * valid
    always_abstain = np.where(valid, abstain, 0.0)
    policies = {}
    for name, values in (
        ("always_answer", answer),
        ("always_abstain", always_abstain),
        ("best_selective", selective),
    ):
        reps = _bootstrap_mean(values, g, replicates, seed)
        policies[name] = summarise(_case_mean(values, g), reps, None)
    accuracy = _case_mean(g.correct.astype(np.float64), g)
    return CostReport(g.run, g.domain, g.mode, g.stage, signal, accuracy, policies, chosen)


def cost_reports(
    groups: Sequence[GroupSignals],
    models: Mapping[str, CostModel],
    signal: str,
    *,
    replicates: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> list[CostReport]:
    out = []
    for g in groups:
        model = models.get(g.domain)
        if model is None:
            continue
        report = expected_costs(g, signal, model, replicates=replicates, seed=seed)
        if report is not None:
            out.append(report)
    return out
