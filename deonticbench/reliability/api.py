"""The library front door: run folders in, pandas data frames out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import missing_extra
from ..scoring.metrics import DEFAULT_BOOTSTRAP
from ..scoring.scores import RunScores
from ..scoring.tables import render, render_csv
from ..store.run import RunLike, read_run
from .cascade import CascadeError, CascadeResult, DeferTo, Prices, cascade, load_prices
from .costs import CostModel, cost_reports, load_costs
from .evaluate import SignalReport, evaluate_groups
from .signal_tables import (
    cascade_table,
    cost_table,
    long_rows,
    na_notes,
    reliability_section,
    reliability_table,
)
from .signals import SIGNALS, check_signal, run_signals


def _frame(rows: list[dict[str, Any]]) -> Any:
    try:
        # Imported here: pandas is the optional 'reliability' extra, needed only for frames.
        import pandas as pd
    except ImportError:
        raise missing_extra("A data frame", "reliability") from None
    return pd.DataFrame(rows)


def reliability_reports(
    runs: Sequence[RunLike],
    *,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    signals: Sequence[str] = SIGNALS,
) -> list[SignalReport]:
    """Every signal's metrics for every domain x mode x stage of the runs."""
    return [
        r
        for run in [read_run(given) for given in runs]  # every path checked before any is read
        for r in evaluate_groups(run_signals(run), replicates=bootstrap, seed=seed, signals=signals)
    ]


def reliability_frame(
    runs: Sequence[RunLike], *, bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> Any:
    """The long table of ``reliability_reports`` as a data frame: one row per run x
    domain x mode x stage x signal x metric (``point``, ``mean``, ``ci_low``,
    ``ci_high``, ``na``: why a value is undefined)."""
    return _frame(long_rows(reliability_reports(runs, bootstrap=bootstrap, seed=seed)))


def cascade_rows(results: Sequence[CascadeResult]) -> list[dict[str, Any]]:
    rows = []
    for r in results:
        points = [*r.points, *([r.crossfit] if r.crossfit else [])]
        for p in points:
            rows.append(
                {
                    "domain": r.domain,
                    "mode": r.mode,
                    "signal": r.signal,
                    "small": r.small,
                    "large": r.large,
                    "policy": p.label,
                    "tau": p.tau,
                    "metric": r.metric,
                    "point": p.metric.point,
                    "ci_low": p.metric.low,
                    "ci_high": p.metric.high,
                    "deferred": p.deferred,
                    "cost_per_case": p.cost,
                    "cost_unit": r.cost_unit,
                    "pareto": p.pareto,
                }
            )
    return rows


def cascade_text(results: Sequence[CascadeResult], fmt: str) -> str:
    """What ``deonticbench cascade`` prints: the table as text (``table``) or markdown,
    or its rows as CSV (``csv``)."""
    if fmt == "csv":
        return render_csv(list(cascade_rows(results)[0]), cascade_rows(results))
    return render(cascade_table(results), "markdown" if fmt == "markdown" else "table")


def write_cascade(results: Sequence[CascadeResult], out: Path) -> int:
    """cascade.csv, cascade.md and one frontier figure per group in ``out``; the
    number of figures drawn."""
    from .figures import draw_cascade  # start-up: matplotlib only when figures are drawn

    out.mkdir(parents=True, exist_ok=True)
    rows = cascade_rows(results)
    (out / "cascade.csv").write_text(render_csv(list(rows[0]), rows), encoding="utf-8")
    (out / "cascade.md").write_text(render(cascade_table(results), "markdown"), encoding="utf-8")
    written = [draw_cascade(r, out / f"cascade-{r.domain}-{r.mode}.png") for r in results]
    return len(written)


def cascade_folders(
    small: RunLike,
    large: RunLike | None,
    *,
    signal: str,
    prices: Path | None,
    defer_to: DeferTo,
    human_accuracy: float,
    human_cost: float | None,
    bootstrap: int,
    seed: int,
) -> list[CascadeResult]:
    """``deonticbench cascade``: the run folders (and a ``prices`` file) read, and the
    cascade of every group that has ``signal``; refused in one sentence when the folders
    do not fit the deferral, or when no group can form a cascade."""
    # The paths first, so a wrong one is told in the sentence every command gives.
    small_run = read_run(small)
    large_run = read_run(large) if large is not None else None
    if defer_to == "model" and large is None:
        raise CascadeError("cascade needs LARGE_RUN (or --defer-to human).")
    if defer_to == "human" and large is not None:
        raise CascadeError("--defer-to human takes one run folder, not two.")
    results = cascade(
        small_run,
        large_run,
        signal=signal,
        prices=load_prices(prices) if prices else None,
        defer_to=defer_to,
        human_accuracy=human_accuracy,
        human_cost=human_cost,
        replicates=bootstrap,
        seed=seed,
    )
    if not results:
        raise CascadeError(
            f"No domain x mode of {small_run.path} has the {signal!r} signal and a counterpart to "
            "defer to; see `deonticbench score --reliability` for which signals exist."
        )
    return results


def cascade_frame(
    small: RunLike,
    large: RunLike | None,
    *,
    signal: str = "consistency",
    prices: Prices | None = None,
    defer_to: DeferTo = "model",
    human_accuracy: float = 1.0,
    human_cost: float | None = None,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> Any:
    """Every threshold of the cascade small -> large (or -> a person) as a data frame."""
    results = cascade(
        read_run(small),
        read_run(large) if large is not None else None,
        signal=signal,
        prices=prices,
        defer_to=defer_to,
        human_accuracy=human_accuracy,
        human_cost=human_cost,
        replicates=bootstrap,
        seed=seed,
    )
    return _frame(cascade_rows(results))


def cost_rows(reports: Sequence[Any]) -> list[dict[str, Any]]:
    rows = []
    for r in reports:
        for policy, v in r.policies.items():
            rows.append(
                {
                    "run": r.run,
                    "domain": r.domain,
                    "mode": r.mode,
                    "stage": r.stage,
                    "signal": r.signal,
                    "accuracy": r.accuracy,
                    "policy": policy,
                    **{k: val for k, val in asdict(v).items() if k != "undefined_replicates"},
                    # A threshold of infinity (never answer) is written as null.
                    "thresholds": [t if math.isfinite(t) else None for t in r.thresholds]
                    if policy == "best_selective"
                    else None,
                }
            )
    return rows


def cost_frame(
    runs: Sequence[RunLike],
    costs: dict[str, CostModel],
    *,
    signal: str = "consistency",
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> Any:
    """Expected cost per case of always-answer, always-abstain and the best selective
    policy, per run x domain x mode x stage."""
    rows = []
    for run in runs:
        groups = run_signals(read_run(run))
        rows += cost_rows(cost_reports(groups, costs, signal, replicates=bootstrap, seed=seed))
    return _frame(rows)


@dataclass
class ScoreExtras:
    """What ``score --reliability`` / ``--costs`` add: the tables to print, the notes,
    each run's results.json sections and the report's Reliability page."""

    tables: list[Any] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Run name -> results.json sections."""
    reports: list[SignalReport] = field(default_factory=list)


def _signal_gaps(
    run: str, groups: Sequence[Any], models: dict[str, CostModel], signal: str
) -> list[str]:
    """A sentence per group the costs file prices but whose ``signal`` is n/a: without
    it the group's row would just be missing from the cost table."""
    notes = []
    for g in groups:
        value = g.signals.get(signal)
        if g.domain in models and (value is None or isinstance(value, str)):
            why = value if isinstance(value, str) else "the run does not hold it"
            notes.append(
                f"{run}: {g.domain} {g.mode} ({g.stage}) has no expected cost: the "
                f"{signal} signal is n/a there: {why}"
            )
    return notes


def score_extras(
    scores: Sequence[RunScores],
    *,
    reliability: bool,
    costs: str | Path | None,
    signal: str = "consistency",
    bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> ScoreExtras:
    """The reliability table and the cost table of scored runs (as ``score`` prints)."""
    check_signal(signal)
    out = ScoreExtras()
    cost_models = load_costs(costs) if costs is not None else None
    for s in scores:
        groups = run_signals(s.run)
        sections: dict[str, Any] = {}
        if reliability:
            reports = evaluate_groups(groups, replicates=bootstrap, seed=seed)
            out.reports += reports
            sections["reliability"] = reliability_section(reports, bootstrap, seed)
            out.notes += [f"{s.run.name}: {n}" for g in groups for n in g.notes]
        if cost_models is not None:
            found = cost_reports(groups, cost_models, signal, replicates=bootstrap, seed=seed)
            missing = sorted({g.domain for g in groups} - set(cost_models))
            if missing:
                out.notes.append(
                    f"{s.run.name}: the costs file names no costs for {', '.join(missing)}; "
                    "those domains have no expected cost"
                )
            out.notes += _signal_gaps(s.run.name, groups, cost_models, signal)
            if found:
                out.tables.append(cost_table(found))
            sections["costs"] = {"signal": signal, "rows": cost_rows(found)}
        out.sections[s.run.name] = sections
    if reliability:
        for stage in dict.fromkeys(r.stage for r in out.reports):
            out.tables.insert(0, reliability_table(out.reports, stage=stage))
        out.notes += na_notes(out.reports)
    return out
