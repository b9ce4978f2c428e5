"""The figure of one or more scored runs: the metric with its interval above the paper's
Figures 2 and 4 (correct / wrong / abstained shares as stacked bars).

One panel per domain, one group per mode the runs hold, in ``MODE_ORDER`` (the tables'
order, agentic modes and settings included).  As in the paper's Figure 4, the coloured
part is correct answers, solid pink wrong answers and hatched pink abstentions.
matplotlib is imported only here and only when a figure is drawn, with the file-only
Agg backend.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from ..data.domains import DOMAINS
from ..errors import missing_extra
from ..vocabulary.modes import MODE_ORDER, MODE_TITLES
from .encoding import Stage
from .scores import RunScores
from .tables import TABLE_DOMAINS, run_labels

_CORRECT = "#3a78b5"
_PINK = "#f2a7b8"


_RUN_COLOURS = ("#3a78b5", "#e08a2c", "#4a9e5c", "#8c5fb0", "#b5483a", "#6f6f6f")


def draw_figure(scores: Sequence[RunScores], path: str | Path, stage: Stage = "first") -> Path:
    """Write ``_render`` of ``scores`` to ``path`` (PNG) and return the path."""
    out = Path(path)
    with out.open("wb") as handle:
        _render(scores, handle, stage)
    return out


def figure_png(scores: Sequence[RunScores], stage: Stage = "first") -> bytes:
    """The same figure as PNG bytes (the HTML report embeds it)."""
    return figure_png_and_modes(scores, stage)[0]


def figure_png_and_modes(
    scores: Sequence[RunScores], stage: Stage = "first"
) -> tuple[bytes, dict[str, list[str]]]:
    """The figure as PNG bytes and ``figure_modes`` of that same figure (the report
    puts both in the page, so what the figure shows can be checked without its pixels)."""
    buffer = io.BytesIO()
    modes = _render(scores, buffer, stage)
    return buffer.getvalue(), modes


def figure_modes(fig: Any) -> dict[str, list[str]]:
    """Read back from a drawn figure the mode labels on each domain's axis, keyed by the
    domain's display name (the first line of the panel's title)."""
    shown: dict[str, list[str]] = {}
    for ax in fig.axes:
        title = ax.get_title()
        if not ax.get_visible() or not title:
            continue  # the lower row repeats the upper row's ticks and has no title
        shown[title.split("\n")[0]] = [t.get_text() for t in ax.get_xticklabels()]
    return shown


def _render(scores: Sequence[RunScores], target: IO[bytes], stage: Stage) -> dict[str, list[str]]:
    # start-up: matplotlib only when a figure is drawn
    import matplotlib.pyplot as plt

    fig = build_figure(scores, stage)
    modes = figure_modes(fig)
    fig.savefig(target, dpi=100, format="png")
    plt.close(fig)
    return modes


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files, no screen), imported on first use:
    drawing is the only user, and the import takes about 0.6 s."""
    try:
        # start-up: matplotlib only when a figure is drawn
        import matplotlib
    except ImportError:
        raise missing_extra("drawing figures", None, package="matplotlib") from None

    matplotlib.use("Agg")
    # start-up: matplotlib only when a figure is drawn
    import matplotlib.pyplot as plt

    return plt


def build_figure(scores: Sequence[RunScores], stage: Stage = "first") -> Any:
    """The metric with its interval beside the outcome decomposition, several runs at once.

    One column per domain.  The top row is the table's metric (accuracy or macro-F1) with
    the bootstrap interval as error bars; the bottom row is the paper's Figures 2 and 4:
    correct (solid), wrong (pink) and abstained (hatched) shares of the samples.  Within a
    domain there is one group per mode that some run ran, and one bar per run in it; a
    mode no run ran is left out rather than drawn as an empty slot.
    """
    plt = pyplot()
    present = {g.domain for s in scores for g in s.groups if g.stage == stage}
    domains = [DOMAINS[name] for name in TABLE_DOMAINS if name in present]
    columns = max(len(domains), 1)
    fig, axes = plt.subplots(
        2,
        columns,
        figsize=(max(2.9 * columns + 0.8, 5.0), 6.4),
        sharey="row",
        squeeze=False,
    )
    for col, domain in enumerate(domains):
        _draw_domain(axes[0][col], axes[1][col], scores, domain, stage)
    axes[0][0].set_ylabel("metric (%), 95% CI")
    axes[1][0].set_ylabel("share of samples (%)")
    for extra in range(len(domains), columns):
        axes[0][extra].set_visible(False)
        axes[1][extra].set_visible(False)
    fig.suptitle(f"{stage} attempt", fontsize=10)
    _legend(fig, run_labels(scores), columns)  # lays the figure out, its title included
    return fig


def _draw_domain(
    top: Any, bottom: Any, scores: Sequence[RunScores], domain: Any, stage: Stage
) -> None:
    """One domain's column: a group per mode some run ran, a bar per run in it."""
    width = 0.8 / max(len(scores), 1)
    modes = [m for m in MODE_ORDER if any(s.group(domain.name, m, stage) for s in scores)]
    for r, s in enumerate(scores):
        colour = _RUN_COLOURS[r % len(_RUN_COLOURS)]
        for slot, mode in enumerate(modes):
            g = s.group(domain.name, mode, stage)
            if g is not None:
                _draw_bars(top, bottom, g, slot - 0.4 + width * (r + 0.5), width * 0.9, colour)
    ticks = [MODE_TITLES[m] for m in modes]
    for ax in (top, bottom):
        ax.set_xticks(range(len(ticks)), ticks, fontsize=8)
        ax.set_xlim(-0.6, max(len(ticks), 1) - 0.4)
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    metric = next(g.metric for s in scores for g in s.groups if g.domain == domain.name)
    cases = max(g.n_cases for s in scores for g in s.groups if g.domain == domain.name)
    top.set_title(
        f"{domain.display_name}\n{_METRIC_NAMES.get(metric, metric)}, {cases} cases",
        fontsize=9,
    )


def _draw_bars(top: Any, bottom: Any, g: Any, x: float, width: float, colour: str) -> None:
    """One run's bars in one group: the metric with its interval, and the outcome shares."""
    e = g.estimate
    top.bar(x, 100 * e.mean, width=width, color=colour)
    top.errorbar(
        x,
        100 * e.mean,
        yerr=[[100 * e.lower], [100 * e.upper]],
        fmt="none",
        ecolor="black",
        capsize=3,
        linewidth=1,
    )
    c, w, a = 100 * g.rates.accuracy, 100 * g.rates.wrong, 100 * g.rates.abstain
    bottom.bar(x, c, width=width, color=colour)
    bottom.bar(x, w, width=width, bottom=c, color=_PINK)
    bottom.bar(x, a, width=width, bottom=c + w, color="white", edgecolor=_PINK, hatch="///")


def _legend(fig: Any, labels: Sequence[str], columns: int) -> None:
    """One colour per run, then the wrong and abstained shares, under the columns."""
    # start-up: matplotlib only when a figure is drawn
    from matplotlib.patches import Patch

    handles = [
        Patch(color=_RUN_COLOURS[r % len(_RUN_COLOURS)], label=label)
        for r, label in enumerate(labels)
    ]
    handles += [
        Patch(color=_PINK, label="wrong"),
        Patch(facecolor="white", edgecolor=_PINK, hatch="///", label="abstained"),
    ]
    # A narrow figure (one or two domains) stacks the legend rather than clipping it.
    per_row = 2 if columns < 3 else 4
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), per_row), fontsize=8)
    rows = -(-len(handles) // per_row)
    fig.tight_layout(rect=(0, 0.035 + 0.035 * rows, 1, 0.97))


_METRIC_NAMES = {"accuracy": "accuracy", "macro_f1": "macro-F1"}
