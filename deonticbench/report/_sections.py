"""The report's sections above the sample browser, each as HTML: the runs, the score
tables, the paper's rows beside them, DAR's readings, agentic cost and format, paired
differences, the reader sensitivity and the figures."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..scoring import dar_readings
from ..scoring.agent_format import format_rows, format_table
from ..scoring.comparisons import Comparison, comparisons_note
from ..scoring.encoding import STAGES
from ..scoring.figures import figure_png_and_modes
from ..scoring.notes import protocol_notes
from ..scoring.paper import match_model
from ..scoring.rereading import sensitivity_table
from ..scoring.results import estimated_cost, run_totals
from ..scoring.scores import RunScores
from ..scoring.tables import Table, against_paper, comparison_table, upstream_bootstrap_table
from ..scoring.usage import usage_rows, usage_table
from ._json import dumps

if TYPE_CHECKING:
    from ..scoring.rereading import SensitivityRow


def _cell_html(text: str) -> str:
    parts = text.split()
    if len(parts) >= 3 and parts[1].startswith("+") and parts[2].startswith("-"):
        rest = " ".join(parts[3:])
        tail = f" {html.escape(rest)}" if rest else ""
        return (
            f'{html.escape(parts[0])} <span class="ci">{html.escape(parts[1])} '
            f"{html.escape(parts[2])}</span>{tail}"
        )
    return html.escape(text)


def table_html(table: Table, table_id: str, *, paper_rows: bool = False) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in table.headers)
    body = []
    for row in table.rows:
        cls = ' class="paper"' if paper_rows and row[0].startswith("paper") else ""
        cells = "".join(f"<td>{_cell_html(c)}</td>" for c in row)
        body.append(f"<tr{cls}>{cells}</tr>")
    caption = f"<caption>{html.escape(table.title)}</caption>" if table.title else ""
    return (
        f'<table id="{table_id}" class="scores">{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def figure_html(scores: Sequence[RunScores]) -> str:
    stages = [st for st in STAGES if any(st in s.stages for s in scores)]
    out = []
    for stage in stages:
        png, modes = figure_png_and_modes(scores, stage)
        data = base64.b64encode(png).decode("ascii")
        # The modes each panel's axis shows, read back from the drawn figure, so what the
        # figure holds can be checked without its pixels; the alt text says it in words.
        shown = html.escape(dumps(modes), quote=True)
        alt = html.escape(
            f"scores, {stage} attempt: "
            + "; ".join(f"{domain}: {', '.join(labels)}" for domain, labels in modes.items()),
            quote=True,
        )
        out.append(
            f'<figure data-stage="{stage}" data-modes="{shown}">'
            f'<img alt="{alt}" src="data:image/png;base64,{data}">'
            f"<figcaption>{stage} attempt. Top: the table's metric with its bootstrap 95% "
            "interval. Bottom: correct (run colour), wrong (pink) and abstained (hatched) "
            "shares of the samples. A mode that was not run is left out.</figcaption></figure>"
        )
    return "".join(out)


def runs_html(scores: Sequence[RunScores]) -> str:
    rows = []
    for s in scores:
        t = run_totals(s.run)
        cost = estimated_cost(s.run.model, t)
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(v))}</td>"
                for v in (
                    s.run.name,
                    s.run.model,
                    s.run.protocol,
                    s.run.split or "?",
                    len(s.run.records),
                    t.requests,
                    f"{t.tokens_in:,} / {t.tokens_out:,}",
                    "—" if cost is None else f"${cost['usd']:,.2f}",
                    ", ".join(s.stages),
                )
            )
            + "</tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "Run",
            "Model",
            "Protocol",
            "Split",
            "Samples",
            "Requests",
            "Tokens in / out",
            "Est. cost",
            "Stages",
        )
    )
    return f'<table id="runs"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def agents_html(scores: Sequence[RunScores]) -> str | None:
    """The cost and the format of each agentic setting; None when no run has one."""
    formats = format_rows(scores)
    if not formats:
        return None
    return (
        '<section id="agents"><h2>Agentic trials: cost and format</h2>'
        + table_html(usage_table(usage_rows(scores)), "usage-table")
        + table_html(format_table(formats), "format-table")
        + "</section>"
    )


def paper_sections(scores: Sequence[RunScores]) -> list[str]:
    """Beside the paper (the runs of a model it reports, with a note where a split or a
    protocol makes its cells incomparable), and upstream's own statistics of each run's
    prompted modes (``upstream_bootstrap``, as its ``bootstrap_outputs.py`` prints them)."""
    out: list[str] = []
    matched = [s for s in scores if match_model(s.run.model)]
    if matched:
        other_split = [s.run.name for s in matched if s.run.split not in (None, "hard")]
        caution = (
            '<p class="muted">The paper\'s rows are on the hard split; '
            + html.escape(", ".join(other_split))
            + " ran on another split, so the numbers are not comparable.</p>"
            if other_split
            else ""
        )
        caution += "".join(
            f'<p class="muted protocol-note">{html.escape(note)}</p>'
            for note in protocol_notes([(s.run.name, s.run.protocol) for s in matched])
        )
        out.append(
            '<section id="paper"><h2>Beside the paper</h2>'
            + caution
            + table_html(against_paper(matched), "paper-table", paper_rows=True)
            + "</section>"
        )
    table = upstream_bootstrap_table(scores)
    if table.rows:
        out.append(
            '<section id="upstream-bootstrap"><h2>Upstream\'s statistics</h2>'
            '<p class="muted">Accuracy, abstention and wrong rates with 95% intervals as '
            "upstream's bootstrap_outputs.py computes them (1,000 replicates, seed 42): "
            "beside the paper's B.3 metrics above, not instead of them.</p>"
            + table_html(table, "upstream-bootstrap-table")
            + "</section>"
        )
    return out


def comparison_section(comparisons: Sequence[Comparison]) -> str:
    note = comparisons_note(comparisons)
    return (
        '<section id="comparison"><h2>Paired differences</h2>'
        + (f'<p class="muted">{html.escape(note)}</p>' if note else "")
        + table_html(comparison_table(comparisons), "comparison-table")
        + "</section>"
    )


def sensitivity_section(sensitivity: Sequence[tuple[str, SensitivityRow]]) -> str:
    return (
        '<section id="reader-sensitivity"><h2>How much the figures depend on the reader'
        '</h2><p class="muted">The same stored replies read by the harness\'s reader and '
        "by the paper's (upstream's scripts'): a figure that moves far depends on how its "
        "replies are read as much as on the model.</p>"
        + table_html(sensitivity_table(sensitivity), "sensitivity-table")
        + "</section>"
    )


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _rewards_text(rewards: dict[str, Any] | None) -> str:
    if rewards is None:
        return "-"
    parts = [f"1: {rewards['reward_1']}", f"0: {rewards['reward_0']}"]
    parts += [f"none: {n} {name}" for name, n in rewards["no_reward"].items()]
    return ", ".join(parts)


def _classes_text(classes: list[str] | None) -> str:
    return "" if classes is None else ", ".join(repr(c) for c in classes)


def dar_section(scores: Sequence[RunScores]) -> str | None:
    """DAR's readings of each run that holds them, from the document results.json and
    ``score --json`` hold (``dar_readings.readings_json``, also in each table's
    ``data-dar-readings``); None when no run holds them."""
    tables = []
    for index, s in enumerate(scores):
        doc = dar_readings.readings_json(s)
        if doc is None:
            continue
        rows = [
            [
                r["domain"],
                r["mode"],
                r["metric"],
                str(r["trials"]),
                _percent(r["harness_reader"]),
                _percent(r["dar_default"]),
                _percent(r["dar_strict"]),
                _rewards_text(r["dar_rewards"]),
                ", ".join(repr(c) for c in r["dar_classes"])
                if r["dar_classes"] is not None
                else "",
            ]
            for r in doc["rows"]
        ]
        overall = doc["overall_accuracy"]
        table = Table(
            ["Domain", "Mode", "Metric", "Trials", "Harness reader (point)", "DAR default",
             "DAR strict", "DAR rewards (1 / 0 / none)", "DAR classes"],
            rows,
            title=f"{s.run.name}: DAR overall accuracy {_percent(overall['dar_default'])} "
            f"(strict {_percent(overall['dar_strict'])})",
        )  # fmt: skip
        html_table = table_html(table, f"dar-readings-{index}")
        data = html.escape(dumps(doc), quote=True)
        tables.append(html_table.replace("<table ", f'<table data-dar-readings="{data}" ', 1))
    if not tables:
        return None
    return (
        '<section id="dar-readings"><h2>DAR\'s readings beside the harness reader</h2>'
        '<p class="muted">The same final states read three ways: the harness reader with '
        "the paper's metric (point value, first attempts; no answer is an abstention), DAR's "
        "scorer (evaluate_deonticbench.py: truncation, exact strings; no answer compares "
        "'' with '' and counts as correct) and its --errors-as-incorrect (strict); with "
        "DAR's verifier's rewards (1, 0, or none with Harbor's exception).</p>"
        + "".join(tables)
        + "</section>"
    )
