"""The HTML report's Reliability page: the per-signal table, the reasons for n/a, and
per domain x mode the reliability diagrams and risk-coverage curves with their bands."""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Sequence

from ..data.domains import DOMAINS
from ..scoring.tables import Table
from ..vocabulary.modes import MODE_TITLES
from .confidence_metrics import ECE_BINS
from .evaluate import SignalReport
from .figures import signal_figure_png
from .signal_tables import na_notes, reliability_table

SECTION_ID = "reliability"


def reliability_html(
    reports: Sequence[SignalReport], table_html: Callable[[Table, str], str]
) -> str:
    """The page's section.  ``table_html(table, id)`` is the report's own table
    renderer, passed in so both pages draw tables the same way."""
    parts = [f'<section id="{SECTION_ID}"><h2>Reliability</h2>']
    parts.append(
        '<p class="muted">How far each confidence signal can be trusted (docs/reliability.md): '
        f"AUROC for correctness, Brier, ECE over {ECE_BINS} equal-mass bins beside the ECE a "
        "calibrated model would show at the same item count, Tygert's Kuiper statistic "
        "with its asymptotic p-value (one sample per case), AURC and E-AURC, selective "
        "accuracy at 50/80/90% coverage and the coverage reachable at 90/95% accuracy; "
        "intervals are a bootstrap over cases, each drawn case with all its samples.</p>"
    )
    stages = list(dict.fromkeys(r.stage for r in reports))
    for stage in stages:
        parts.append(table_html(reliability_table(reports, stage=stage), f"reliability-{stage}"))
    notes = na_notes(reports)
    if notes:
        items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        parts.append(f'<ul id="reliability-na">{items}</ul>')
    groups: dict[tuple[str, str, str, str], list[SignalReport]] = {}
    for r in reports:
        if r.na is None:
            groups.setdefault((r.run, r.domain, r.mode, r.stage), []).append(r)
    several = len({key[0] for key in groups}) > 1
    for (run, domain, mode, stage), shown in groups.items():
        png = base64.b64encode(signal_figure_png(shown)).decode("ascii")
        label = f"{DOMAINS[domain].display_name}, {MODE_TITLES.get(mode, mode)}, {stage}"
        if several:
            label = f"{run}: {label}"
        parts.append(
            f'<figure class="reliability"><img alt="reliability, {html.escape(label)}" '
            f'src="data:image/png;base64,{png}"><figcaption>{html.escape(label)}. Left: '
            "share correct against mean confidence per equal-mass bin (dashed: perfect "
            "calibration). Right: selective accuracy against coverage. Shaded: the 2.5 to "
            "97.5 percentiles over the bootstrap replicates.</figcaption></figure>"
        )
    parts.append("</section>")
    return "".join(parts)
