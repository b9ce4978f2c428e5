"""The reliability table (terminal, Markdown, CSV), its long rows (which ``api`` turns
into the library's data frame), results.json's ``reliability`` section, and the cascade
and cost tables.  The data frames themselves are built in ``api``, which alone imports
pandas."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..data.domains import DOMAINS
from ..scoring.tables import Table
from ..vocabulary.modes import MODE_TITLES
from .cascade import CascadeResult
from .confidence_metrics import ECE_BINS
from .costs import POLICIES, CostReport
from .evaluate import METRICS, MetricValue, SignalReport

RELIABILITY_SCHEMA = 1
LONG_COLUMNS = (
    "run",
    "model",
    "domain",
    "mode",
    "stage",
    "signal",
    "metric",
    "point",
    "mean",
    "ci_low",
    "ci_high",
    "na",
    "n_cases",
    "n_samples",
)
"""One row per run x domain x mode x stage x signal x metric."""

CALIBRATED = "ece_if_calibrated"
"""The calibrated-reference ECE: a column beside ECE, a field of results.json and a row
of the long table (a point, no interval)."""
HEADERS = {
    "auroc": "AUROC",
    "brier": "Brier",
    "ece": f"ECE ({ECE_BINS} bins)",
    "ece_if_calibrated": "ECE if calibrated",
    "kuiper": "Kuiper",
    "kuiper_p": "Kuiper p",
    "aurc": "AURC",
    "e_aurc": "E-AURC",
    "acc_at_50": "Acc@50%",
    "acc_at_80": "Acc@80%",
    "acc_at_90": "Acc@90%",
    "cov_at_90": "Cov@90%acc",
    "cov_at_95": "Cov@95%acc",
}


def value_text(v: MetricValue, metric: str) -> str:
    """``point [low, high]`` with three decimals; p-values in scientific notation;
    ``n/a`` for an undefined value (the reason is in the notes under the table)."""
    if v.point is None:
        return "n/a"
    if metric == "kuiper_p":
        return f"{v.point:.2g}"
    if v.low is None or v.high is None:
        return f"{v.point:.3f}"
    return f"{v.point:.3f} [{v.low:.3f}, {v.high:.3f}]"


def _columns() -> list[str]:
    """The metrics in table order, the calibrated-reference ECE right after ECE."""
    at = METRICS.index("ece") + 1
    return [*METRICS[:at], CALIBRATED, *METRICS[at:]]


def _calibrated_text(r: SignalReport) -> str:
    return "n/a" if r.ece_if_calibrated is None else f"{r.ece_if_calibrated:.3f}"


def reliability_table(reports: Sequence[SignalReport], *, stage: str = "first") -> Table:
    """One row per run x domain x mode x signal that could be computed; the signals
    that are n/a are listed with their reason in the title's notes."""
    several = len({r.run for r in reports}) > 1
    headers = [*(["Run"] if several else []), "Domain", "Mode", "Signal", "N"]
    columns = _columns()
    headers += [HEADERS[m] for m in columns]
    rows: list[list[str]] = []
    for r in reports:
        if r.stage != stage or r.na is not None:
            continue
        row = [*([r.run] if several else []), DOMAINS[r.domain].display_name]
        row += [MODE_TITLES.get(r.mode, r.mode), r.signal, str(r.n_cases)]
        row += [
            _calibrated_text(r) if m == CALIBRATED else value_text(r.metrics[m], m) for m in columns
        ]
        rows.append(row)
    title = (
        f"Confidence signals ({stage} attempt): point [95% bootstrap interval over cases]; "
        "ECE if calibrated: the mean ECE of a calibrated confidence at this item count; "
        "Kuiper p on one sample per case (asymptotic)"
    )
    return Table(headers, rows, title, key_columns=len(headers) - len(columns))


def na_notes(reports: Sequence[SignalReport]) -> list[str]:
    """One line per reason a signal or a metric is n/a, naming where."""
    seen: dict[str, list[str]] = {}
    for r in reports:
        where = f"{r.domain} {r.mode}"
        if r.na is not None:
            seen.setdefault(f"{r.signal}: {r.na}", []).append(where)
            continue
        for metric, v in r.metrics.items():
            if v.na:
                seen.setdefault(f"{r.signal} {HEADERS[metric]}: {v.na}", []).append(where)
    return [f"n/a - {why} ({', '.join(dict.fromkeys(w))})" for why, w in seen.items()]


def long_rows(reports: Sequence[SignalReport]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in reports:
        base = {
            "run": r.run,
            "model": r.model,
            "domain": r.domain,
            "mode": r.mode,
            "stage": r.stage,
            "signal": r.signal,
        }
        counts = {"n_cases": r.n_cases, "n_samples": r.n_samples}
        if r.na is not None:
            out.append(
                {**base, "metric": None, "point": None, "mean": None, "ci_low": None,
                 "ci_high": None, "na": r.na, **counts}
            )  # fmt: skip
            continue
        for metric, v in r.metrics.items():
            out.append(
                {**base, "metric": metric, "point": v.point, "mean": v.mean, "ci_low": v.low,
                 "ci_high": v.high, "na": v.na, **counts}
            )  # fmt: skip
            if metric == "ece":
                out.append(
                    {**base, "metric": CALIBRATED, "point": r.ece_if_calibrated, "mean": None,
                     "ci_low": None, "ci_high": None, "na": None, **counts}
                )  # fmt: skip
    return out


def reliability_section(
    reports: Sequence[SignalReport], replicates: int, seed: int
) -> dict[str, Any]:
    """results.json's ``reliability`` section (schema in docs/schemas.md)."""
    groups = []
    for r in reports:
        entry: dict[str, Any] = {
            "domain": r.domain,
            "mode": r.mode,
            "stage": r.stage,
            "signal": r.signal,
            "n_cases": r.n_cases,
            "n_samples": r.n_samples,
        }
        if r.na is not None:
            entry["na"] = r.na
        else:
            entry["metrics"] = {
                k: {"point": v.point, "mean": v.mean, "ci_low": v.low, "ci_high": v.high,
                    **({"na": v.na} if v.na else {})}
                for k, v in r.metrics.items()
            }  # fmt: skip
            entry["kuiper_normalised"] = r.kuiper_x
            entry[CALIBRATED] = r.ece_if_calibrated
            entry["reliability_diagram"] = r.diagram
        groups.append(entry)
    return {
        "schema": RELIABILITY_SCHEMA,
        "bootstrap": replicates,
        "bootstrap_seed": seed,
        "ece_bins": ECE_BINS,
        "groups": groups,
    }


def cascade_table(results: Sequence[CascadeResult]) -> Table:
    """The frontier of each cascade, each side alone and the cross-fitted tau."""
    headers = ["Domain", "Mode", "Policy", "tau", "Metric", "Deferred", "Cost/case", "Pareto"]
    rows = []
    for r in results:
        shown = [p for p in r.points if p.pareto or p.label != "tau"]
        if r.crossfit is not None:
            shown.append(r.crossfit)
        for p in shown:
            tau = "" if p.tau is None else ("inf" if p.tau == float("inf") else f"{p.tau:.3f}")
            if p.label == "cross-fitted":
                tau = ", ".join(f"{t:.3f}" for t in r.crossfit_taus)
            rows.append(
                [
                    DOMAINS[r.domain].display_name,
                    MODE_TITLES.get(r.mode, r.mode),
                    p.label,
                    tau,
                    value_text(p.metric, "point"),
                    f"{p.deferred:.1%}",
                    f"{p.cost:.5f} {r.cost_unit}"
                    if r.cost_unit == "USD"
                    else f"{p.cost:.0f} tokens",
                    "yes" if p.pareto else "",
                ]
            )
    first = results[0] if results else None
    title = (
        f"Cascade {first.small} -> {first.large} on {first.signal}: the Pareto frontier, "
        "each side alone and the cross-fitted tau (one per fold)"
        if first
        else "Cascade"
    )
    return Table(headers, rows, title, key_columns=3)


def cost_table(reports: Sequence[CostReport]) -> Table:
    """Expected cost per case of the three policies, beside accuracy."""
    headers = ["Domain", "Mode", "Signal", "Accuracy", "Always answer", "Always abstain",
               "Best selective", "tau per fold"]  # fmt: skip
    rows = []
    for r in reports:
        rows.append(
            [
                DOMAINS[r.domain].display_name,
                MODE_TITLES.get(r.mode, r.mode),
                r.signal,
                f"{r.accuracy:.1%}",
                *(value_text(r.policies[p], "cost") for p in POLICIES),
                ", ".join("inf" if t == float("inf") else f"{t:.2f}" for t in r.thresholds),
            ]
        )
    return Table(
        headers,
        rows,
        "Expected cost per case, in the costs file's units (amounts owed in dollars), "
        "with its 95% bootstrap interval over cases",
        key_columns=3,
    )
