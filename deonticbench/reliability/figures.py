"""Figures: reliability diagrams and risk-coverage curves with their bootstrap bands,
and a cascade's cost-accuracy frontier (matplotlib, drawn off-screen to PNG)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .cascade import LARGE_ALONE, PERSON_ALONE, CascadePoint, CascadeResult
from .evaluate import SignalReport


def _pyplot() -> Any:
    # Imported on the first figure (start-up time: pyplot takes about 0.4 s), with the
    # off-screen backend chosen before pyplot is loaded.
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): pyplot takes the backend chosen

    return plt


def _none_to_nan(values: Sequence[float | None]) -> list[float]:
    return [float("nan") if v is None else v for v in values]


def signal_figure_png(reports: Sequence[SignalReport]) -> bytes:
    """One row per signal of one domain x mode: the reliability diagram (left) and the
    risk-coverage curve (right), each with its 95% band over the bootstrap replicates."""
    plt = _pyplot()
    shown = [r for r in reports if r.diagram and r.curve]
    fig, axes = plt.subplots(len(shown), 2, figsize=(8, 2.6 * len(shown)), squeeze=False)
    for row, r in zip(axes, shown, strict=True):
        d, c = r.diagram, r.curve
        assert d is not None and c is not None
        left, right = row
        conf = _none_to_nan(d["confidence"])
        left.plot([0, 1], [0, 1], color="#999", lw=0.8, ls="--")
        left.fill_between(
            conf, _none_to_nan(d["accuracy_low"]), _none_to_nan(d["accuracy_high"]),
            color="#4c72b0", alpha=0.2, step="mid",
        )  # fmt: skip
        left.plot(conf, _none_to_nan(d["accuracy"]), "o-", color="#4c72b0", ms=3)
        left.set(xlim=(0, 1), ylim=(0, 1), xlabel="confidence", ylabel="share correct")
        left.set_title(f"{r.signal}: reliability", fontsize=9)
        right.fill_between(
            c["band_coverage"], _none_to_nan(c["accuracy_low"]),
            _none_to_nan(c["accuracy_high"]), color="#dd8452", alpha=0.2,
        )  # fmt: skip
        right.plot(c["coverage"], _none_to_nan(c["accuracy"]), color="#dd8452")
        right.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="coverage", ylabel="selective accuracy")
        right.set_title(f"{r.signal}: risk-coverage", fontsize=9)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return buf.getvalue()


def cascade_png(result: CascadeResult) -> bytes:
    """Cost per case against the metric: every tau (line), the Pareto frontier (thick),
    the two models alone and the cross-fitted tau, with their 95% intervals."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    # Runs without token counts (replay, reference) cost nothing: then the share
    # deferred is the only axis that separates the policies.
    free = all(p.cost == 0 for p in result.points)

    def x(p: CascadePoint) -> float:
        return p.deferred if free else p.cost

    taus = [p for p in result.points if p.label == "tau"]
    ax.plot([x(p) for p in taus], [p.metric.point for p in taus], ".-", color="#bbb",
            label="every tau")  # fmt: skip
    front = sorted(result.frontier(), key=x)
    ax.plot([x(p) for p in front], [p.metric.point for p in front], "-", color="#4c72b0",
            lw=2, label="Pareto frontier")  # fmt: skip
    marks = {
        "small alone": ("s", "#55a868"),
        LARGE_ALONE: ("D", "#c44e52"),
        PERSON_ALONE: ("D", "#c44e52"),
    }
    others = [p for p in result.points if p.label in marks]
    if result.crossfit is not None:
        others.append(result.crossfit)
    for p in others:
        shape, colour = marks.get(p.label, ("*", "#8172b3"))
        low = p.metric.low if p.metric.low is not None else p.metric.point
        high = p.metric.high if p.metric.high is not None else p.metric.point
        point = p.metric.point or 0.0
        below, above = max(0.0, point - (low or 0.0)), max(0.0, (high or 0.0) - point)
        ax.errorbar([x(p)], [point], yerr=[[below], [above]],
                    fmt=shape, color=colour, ms=8, capsize=3, label=p.label)  # fmt: skip
    ax.set_xlabel(
        "share deferred (the runs hold no token counts)"
        if free
        else f"cost per case ({result.cost_unit})"
    )
    ax.set_ylabel(result.metric.replace("_", "-"))
    ax.set_title(f"{result.domain} {result.mode}: {result.small} -> {result.large}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def draw_cascade(result: CascadeResult, path: Path) -> Path:
    path.write_bytes(cascade_png(result))
    return path
