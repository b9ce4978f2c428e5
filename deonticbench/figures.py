"""The paper's Figure 2 for one run: correct / wrong / abstained shares as stacked bars.

One panel per domain, one bar per mode (Direct, Zero-Shot, Few-Shot from left to right,
as in the paper).  As in the paper's Figure 4, the coloured part is correct answers,
solid pink wrong answers and hatched pink abstentions.  matplotlib is imported only
here and only when a figure is drawn, with the file-only Agg backend.
"""

from __future__ import annotations

from pathlib import Path

from .domains import DOMAINS
from .errors import ConfigError
from .modes import MODE_TITLES, MODES
from .report import TABLE_DOMAINS
from .scoring import RunScores, Stage

FIGURE_MODE_ORDER = MODES
_MODE_LABELS = MODE_TITLES
_CORRECT = "#3a78b5"
_PINK = "#f2a7b8"


def draw_run_figure(scores: RunScores, path: str | Path, stage: Stage = "first") -> Path:
    """Write the figure of ``scores`` at ``stage`` to ``path`` (PNG) and return the path."""
    try:
        import matplotlib
    except ImportError:
        raise ConfigError(
            "drawing figures needs matplotlib: pip install -e . (it is a dependency)."
        ) from None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    present = {g.domain for g in scores.groups}
    domains = [DOMAINS[name] for name in TABLE_DOMAINS if name in present]
    columns = max(len(domains), 1)
    fig, axes = plt.subplots(
        1, columns, figsize=(max(2.6 * columns + 0.6, 4.5), 3.9), sharey=True, squeeze=False
    )
    for ax, domain in zip(axes[0], domains, strict=False):
        # Fixed slots per mode, so a run without some mode keeps the paper's bar order.
        x, correct, wrong, abstain = [], [], [], []
        for slot, mode in enumerate(FIGURE_MODE_ORDER):
            g = scores.group(domain.name, mode, stage)
            if g is None:
                continue
            x.append(slot)
            correct.append(100 * g.rates.accuracy)
            wrong.append(100 * g.rates.wrong)
            abstain.append(100 * g.rates.abstain)
        ax.bar(x, correct, width=0.75, color=_CORRECT, label="correct")
        ax.bar(x, wrong, width=0.75, bottom=correct, color=_PINK, label="wrong")
        bottoms = [c + w for c, w in zip(correct, wrong, strict=True)]
        ax.bar(
            x,
            abstain,
            width=0.75,
            bottom=bottoms,
            color="white",
            edgecolor=_PINK,
            hatch="///",
            label="abstained",
        )
        labels = [_MODE_LABELS[m] for m in FIGURE_MODE_ORDER]
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize=8)
        ax.set_xlim(-0.6, len(labels) - 0.4)
        cases = max((g.n_cases for g in scores.groups if g.domain == domain.name), default=0)
        ax.set_title(f"{domain.display_name}\n{cases} cases", fontsize=9)
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[0][0].set_ylabel("share of samples (%)")
    handles, names = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle(f"{scores.run.model} — {stage} attempt", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
