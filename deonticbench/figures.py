"""The paper's Figure 2 for one run: correct / wrong / abstained shares as stacked bars.

One panel per domain, one bar per mode (Direct, Zero-Shot, Few-Shot from left to right,
as in the paper).  As in the paper's Figure 4, the coloured part is correct answers,
solid pink wrong answers and hatched pink abstentions.  matplotlib is imported only
here and only when a figure is drawn, with the file-only Agg backend.
"""

from __future__ import annotations

from pathlib import Path

from .domains import DOMAINS
from .report import TABLE_DOMAINS
from .scoring import RunScores, Stage

FIGURE_MODE_ORDER = ("direct", "zero-shot", "few-shot")
_MODE_LABELS = {"direct": "Direct", "zero-shot": "Zero-Shot", "few-shot": "Few-Shot"}
_CORRECT = "#3a78b5"
_PINK = "#f2a7b8"


def draw_run_figure(scores: RunScores, path: str | Path, stage: Stage = "first") -> Path:
    """Write the figure of ``scores`` at ``stage`` to ``path`` (PNG) and return the path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    present = {g.domain for g in scores.groups}
    domains = [DOMAINS[name] for name in TABLE_DOMAINS if name in present]
    fig, axes = plt.subplots(
        1,
        max(len(domains), 1),
        figsize=(2.6 * max(len(domains), 1) + 0.6, 3.6),
        sharey=True,
        squeeze=False,
    )
    for ax, domain in zip(axes[0], domains, strict=False):
        labels, correct, wrong, abstain = [], [], [], []
        for mode in FIGURE_MODE_ORDER:
            g = scores.group(domain.name, mode, stage)
            if g is None:
                continue
            labels.append(_MODE_LABELS[mode])
            correct.append(100 * g.rates.accuracy)
            wrong.append(100 * g.rates.wrong)
            abstain.append(100 * g.rates.abstain)
        x = range(len(labels))
        ax.bar(x, correct, color=_CORRECT, label="correct")
        ax.bar(x, wrong, bottom=correct, color=_PINK, label="wrong")
        bottoms = [c + w for c, w in zip(correct, wrong, strict=True)]
        ax.bar(
            x,
            abstain,
            bottom=bottoms,
            color="white",
            edgecolor=_PINK,
            hatch="///",
            label="abstained",
        )
        ax.set_xticks(list(x), labels, rotation=30, ha="right", fontsize=8)
        ax.set_title(domain.display_name, fontsize=10)
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[0][0].set_ylabel("share of samples (%)")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper right", ncol=3, fontsize=8, frameon=False)
    fig.suptitle(f"{scores.run.model} — {stage} attempt", x=0.02, ha="left", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
