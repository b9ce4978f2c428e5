"""Tables from scores: the paper's Table 2 layout, a long table, per-case rows,
comparisons and the published numbers side by side.

A table is built once as plain strings (``Table``) and then rendered as terminal text,
Markdown, LaTeX or CSV, so every format shows the same numbers.
"""

from __future__ import annotations

import csv
import io
import math
import shutil
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..data.domains import DISPLAY_ORDER, DOMAINS
from ..vocabulary.modes import MODE_TITLES, TABLE_MODE_ORDER
from ..vocabulary.protocols import (
    DEPARTURE_MARK,
    LEAK_MARK,
    mode_protocol,
    sampling_departures,
    shows_reference_programs,
)
from .comparisons import Comparison
from .dar_readings import readings_json
from .metrics import BootstrapEstimate
from .paper import PaperCell, match_model, paper_cells
from .rows import ScoreRow, score_row, score_rows
from .scores import GroupScore, RunScores
from .upstream_bootstrap import upstream_bootstrap

MISSING = "—"

# Table 2's columns: accuracy domains, then macro-F1 domains, in the paper's order.
TABLE_DOMAINS: tuple[str, ...] = DISPLAY_ORDER

_N_MAIN_COLUMNS = 12
LONG_COLUMNS = ScoreRow.columns()[:_N_MAIN_COLUMNS]
"""The long table's main columns (domain ... wrong_rate); ``ScoreRow`` owns them."""
LONG_EXTRA = ScoreRow.columns()[_N_MAIN_COLUMNS:]
"""Then point, upper, lower, n_samples, bootstrap, seed, model, run."""


@dataclass(frozen=True)
class Table:
    headers: list[str]
    rows: list[list[str]]
    title: str = ""
    key_columns: int = 0
    """The leading columns that name a row: when set, a table wider than the terminal
    (``terminal_width``) splits the other columns into parts, each repeating these."""


TERMINAL_WIDTH = 100
"""The terminal's width when it cannot be told (output to a file or a pipe, no COLUMNS)."""


def terminal_width() -> int:
    """The width plain text is fitted to: ``COLUMNS`` if set, else the terminal's, else
    ``TERMINAL_WIDTH``."""
    return shutil.get_terminal_size((TERMINAL_WIDTH, 24)).columns


# -- numbers as text -------------------------------------------------------------------


def pct(x: float) -> str:
    return "nan" if math.isnan(x) else f"{100 * x:.1f}"


def estimate_text(e: BootstrapEstimate) -> str:
    """The paper's ``mean +upper -lower`` in percent, one decimal."""
    return f"{pct(e.mean)} +{pct(e.upper)} -{pct(e.lower)}"


def signed_points(x: float) -> str:
    """A fraction's difference in points, signed, one decimal: ``+3.2``."""
    return "nan" if math.isnan(x) else f"{100 * x:+.1f}"


# -- Table 2 ---------------------------------------------------------------------------


def _marked(text: str, s: RunScores, domain: str, mode: str) -> str:
    """A figure, with ``LEAK_MARK`` when its prompts showed other cases' reference
    programs, and ``DEPARTURE_MARK`` when its first attempts sampled away from the
    published setting (the run's notes say what the marks mean: ``score_run``)."""
    if shows_reference_programs(s.run.protocol, domain, mode):
        text = f"{text} {LEAK_MARK}"
    if sampling_departures(s.run.protocol, mode, s.run.config):
        text = f"{text} {DEPARTURE_MARK}"
    return text


def protocol_of(s: RunScores, mode: str) -> str:
    """The protocol a mode's figures came from (``vocabulary.protocols.mode_protocol``),
    and the reader when a re-read (``score --reading``) read them with the other one."""
    protocol = mode_protocol(s.run.protocol, mode)
    reader = s.run.reading(mode)
    return protocol if reader == protocol else f"{protocol}, {reader} reader"


def run_labels(scores: Sequence[RunScores]) -> list[str]:
    """A model label per run; runs of the same model are told apart by folder name."""
    models = [s.run.model for s in scores]
    return [
        m if models.count(m) == 1 else f"{m} ({s.run.name})"
        for m, s in zip(models, scores, strict=True)
    ]


def table2(scores: Sequence[RunScores]) -> Table:
    """One row per model x mode (x stage when any run retried), Table 2's columns."""
    with_stage = any(len(s.stages) > 1 for s in scores)
    headers = ["Model", "Protocol", "Setting"] + (["Stage"] if with_stage else [])
    headers += [DOMAINS[d].display_name for d in TABLE_DOMAINS]
    rows: list[list[str]] = []
    for label, s in zip(run_labels(scores), scores, strict=True):
        for mode in TABLE_MODE_ORDER:
            if mode not in s.modes:
                continue
            for stage in s.stages:
                row = [label, protocol_of(s, mode), MODE_TITLES[mode]]
                row += [stage] if with_stage else []
                for domain in TABLE_DOMAINS:
                    g = s.group(domain, mode, stage)
                    row.append(
                        _marked(estimate_text(g.estimate), s, domain, mode) if g else MISSING
                    )
                rows.append(row)
    # The bootstrap mean, as the paper prints it; the usage and comparison tables show
    # point values, and each title says which it is, since the two differ on few cases.
    return Table(
        headers,
        rows,
        title="Accuracy (SARA Num., Airline) and macro-F1 (others), %: "
        "the bootstrap mean +upper -lower (paper B.3)",
    )


# -- rendering -------------------------------------------------------------------------


def render_text(table: Table, width: int | None = None) -> str:
    """The table as plain text; one with ``key_columns`` wider than ``width`` (default:
    ``terminal_width()``) is split into parts that fit, and says so."""
    width = terminal_width() if width is None else width
    body = _plain(Table(table.headers, table.rows))
    widest = max(len(line) for line in body.splitlines())
    if table.key_columns and widest > width:
        return _fitted(table, width, widest)
    if table.key_columns and table.title:
        # A title is prose: wrapped to the terminal, like the split table's.
        return textwrap.fill(table.title, width) + "\n" + body
    return _plain(table)


def _fitted(table: Table, width: int, widest: int) -> str:
    """A wide table as parts no wider than ``width``: the key columns, then as many of
    the other columns as fit, part after part; the title wrapped above the first, and a
    line saying why the table is split."""
    keep = table.key_columns

    def column_width(i: int) -> int:
        return max([len(table.headers[i]), *(len(r[i]) for r in table.rows)])

    key_width = sum(column_width(i) + 2 for i in range(keep))
    parts: list[list[int]] = [[]]
    used = key_width
    for i in range(keep, len(table.headers)):
        if parts[-1] and used + column_width(i) > width:
            parts.append([])
            used = key_width
        parts[-1].append(i)
        used += column_width(i) + 2
    title = textwrap.fill(table.title, width) if table.title else ""
    out = []
    for number, columns in enumerate(parts, start=1):
        chosen = [*range(keep), *columns]
        part = Table(
            [table.headers[i] for i in chosen],
            [[r[i] for i in chosen] for r in table.rows],
            f"({number} of {len(parts)})",
        )
        out.append(_plain(part))
    if len(parts) > 1:
        why = textwrap.fill(
            f"(split into {len(parts)} parts: the table is {widest} characters wide, the "
            f"terminal {width}; a wider terminal or COLUMNS={widest} shows it whole)",
            width,
        )
        title = f"{title}\n{why}" if title else why
    return (title + "\n" if title else "") + "\n".join(out)


def _plain(table: Table) -> str:
    widths = [len(h) for h in table.headers]
    for row in table.rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [table.title] if table.title else []
    out += [line(table.headers), line(["-" * w for w in widths])]
    out += [line(r) for r in table.rows]
    return "\n".join(out) + "\n"


def render_markdown(table: Table) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [f"**{table.title}**", ""] if table.title else []
    out += [line(table.headers), line(["---"] * len(table.headers))]
    out += [line(r) for r in table.rows]
    return "\n".join(out) + "\n"


_LATEX_SPECIALS = {c: "\\" + c for c in "&%$#_{}"}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIALS.get(ch, ch) for ch in text)


def _latex_cell(cell: str) -> str:
    # "23.7 +13.9 -12.1" becomes the paper's 23.7^{+13.9}_{-12.1}.
    parts = cell.split()
    if len(parts) == 3 and parts[1].startswith("+") and parts[2].startswith("-"):
        return f"{parts[0]}$^{{{parts[1]}}}_{{{parts[2]}}}$"
    return "--" if cell == MISSING else _latex_escape(cell)


def render_latex(table: Table) -> str:
    cols = "l" * (len(table.headers) - len(TABLE_DOMAINS)) + "c" * len(TABLE_DOMAINS)
    out = [f"\\begin{{tabular}}{{{cols}}}", "\\toprule"]
    out.append(" & ".join(_latex_escape(h) for h in table.headers) + " \\\\")
    out.append("\\midrule")
    for row in table.rows:
        out.append(" & ".join(_latex_cell(c) for c in row) + " \\\\")
    out += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(out) + "\n"


def render_csv(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return buffer.getvalue()


def render_table_csv(table: Table) -> str:
    return render_csv(table.headers, [dict(zip(table.headers, r, strict=True)) for r in table.rows])


TABLE_FORMATS: dict[str, Callable[[Table], str]] = {
    "table": render_text,
    "markdown": render_markdown,
    "csv": render_table_csv,
    "latex": render_latex,
}
"""Every way a table can be written, by the name ``score --format`` takes: a new output
format is one renderer here (and, if ``score --out`` should write it, one file name in
``report.score_files``)."""


def render(table: Table, fmt: str) -> str:
    return TABLE_FORMATS.get(fmt, render_text)(table)


# -- the long table --------------------------------------------------------------------


def _long_row(g: GroupScore, s: RunScores) -> dict[str, Any]:
    return score_row(g, s).to_dict()


def long_rows(scores: Sequence[RunScores]) -> list[dict[str, Any]]:
    """One row per run x domain x mode x stage; fractions in [0, 1], not percent."""
    return [row.to_dict() for row in score_rows(scores)]


def long_csv(scores: Sequence[RunScores]) -> str:
    return render_csv(LONG_COLUMNS + LONG_EXTRA, long_rows(scores))


PAPER_COLUMNS = ("paper_table", "paper_model", "paper_mean", "paper_upper", "paper_lower")


def long_csv_with_paper(scores: Sequence[RunScores]) -> str:
    """The long table with the paper's published cell beside each first-stage row of a
    model the paper reports (percent, as published); one loadable CSV."""
    rows = []
    for s in scores:
        matched = match_model(s.run.model)
        cells = {(c.setting, c.domain): c for c in paper_cells(model=matched)} if matched else {}
        for g in s.groups:
            row = _long_row(g, s)
            cell = cells.get((g.mode, g.domain)) if g.stage == "first" else None
            if cell is not None:
                row.update(
                    paper_table=cell.table,
                    paper_model=cell.model,
                    paper_mean=cell.mean,
                    paper_upper=cell.upper,
                    paper_lower=cell.lower,
                )
            rows.append(row)
    return render_csv(LONG_COLUMNS + LONG_EXTRA + PAPER_COLUMNS, rows)


# -- per-case rows ---------------------------------------------------------------------


def case_columns(scores: Sequence[RunScores]) -> list[str]:
    k = max((g.k for s in scores for g in s.groups), default=0)
    samples = max(
        (
            d.sample + 1
            for s in scores
            for g in s.groups
            for ds in g.encoded.samples.values()
            for d in ds
        ),
        default=k,
    )
    columns = ["run", "model", "domain", "mode", "stage", "case_id", "gold"]
    for j in range(max(k, samples)):
        columns += [f"answer_{j}", f"outcome_{j}", f"reason_{j}"]
    return columns


def case_rows(scores: Sequence[RunScores]) -> list[dict[str, Any]]:
    """One row per case: gold and each sample's answer, outcome and abstention reason.

    Sample ``j`` goes in columns ``*_j`` by its sample number; a missing sample is blank.
    """
    rows: list[dict[str, Any]] = []
    for s in scores:
        for g in s.groups:
            for case_id in g.encoded.outcomes.case_ids:
                row: dict[str, Any] = {
                    "run": g.run,
                    "model": g.model,
                    "domain": g.domain,
                    "mode": g.mode,
                    "stage": g.stage,
                    "case_id": case_id,
                    "gold": g.encoded.gold[case_id],
                }
                for d in g.encoded.samples[case_id]:
                    row[f"answer_{d.sample}"] = "" if d.answer is None else d.answer
                    row[f"outcome_{d.sample}"] = d.outcome
                    row[f"reason_{d.sample}"] = d.reason or ""
                rows.append(row)
    return rows


def cases_csv(scores: Sequence[RunScores]) -> str:
    return render_csv(case_columns(scores), case_rows(scores))


# -- comparisons -----------------------------------------------------------------------

COMPARISON_COLUMNS = (
    "run_a",
    "run_b",
    "domain",
    "mode",
    "stage",
    "metric",
    "n_common",
    "only_a",
    "only_b",
    "point_a",
    "point_b",
    "diff_mean",
    "diff_low",
    "diff_high",
    "diff_point",
    "protocol_a",
    "protocol_b",
)


def comparison_rows(comparisons: Sequence[Comparison]) -> list[dict[str, Any]]:
    return [
        {
            "run_a": c.run_a,
            "run_b": c.run_b,
            "domain": c.domain,
            "mode": c.mode,
            "stage": c.stage,
            "metric": c.metric,
            "n_common": c.n_common,
            "only_a": c.only_a,
            "only_b": c.only_b,
            "point_a": c.point_a,
            "point_b": c.point_b,
            "diff_mean": c.difference.mean,
            "diff_low": c.difference.low,
            "diff_high": c.difference.high,
            "diff_point": c.difference.point,
            "protocol_a": c.protocol_a,
            "protocol_b": c.protocol_b,
        }
        for c in comparisons
    ]


def comparison_table(comparisons: Sequence[Comparison]) -> Table:
    # Two modes of one run folder (score --pair-modes, --pair) are told apart by the
    # Setting column; "run - run" would say nothing, so such rows name their one run.
    within = bool(comparisons) and all(c.run_a == c.run_b for c in comparisons)
    first = "Run" if within else "B - A"
    headers = [first, "Protocols", "Domain", "Setting", "Stage", "A", "B", "B - A [95% CI]"]
    headers.append("Cases")
    rows = []
    for c in comparisons:
        dropped = c.only_a + c.only_b
        cases = f"{c.n_common}" + (
            f" ({dropped} dropped: {c.only_a} A-only, {c.only_b} B-only)" if dropped else ""
        )
        diff = c.difference
        rows.append(
            [
                c.run_a if within else f"{c.run_b} - {c.run_a}",
                c.protocol_b
                if c.protocol_a == c.protocol_b
                else f"{c.protocol_b} - {c.protocol_a}",
                DOMAINS[c.domain].display_name,
                MODE_TITLES.get(c.mode, c.mode),
                c.stage,
                pct(c.point_a) if c.n_common else MISSING,
                pct(c.point_b) if c.n_common else MISSING,
                f"{signed_points(diff.mean)} "
                f"[{signed_points(diff.low)}, {signed_points(diff.high)}]"
                if c.n_common
                else "no common cases",
                cases,
            ]
        )
    return Table(
        headers,
        rows,
        title=f"Paired bootstrap differences over the cases both {'modes' if within else 'runs'}"
        " scored, %: A and B are point values on those cases, B - A the bootstrap mean "
        "[95% interval]",
    )


# -- upstream's statistics ---------------------------------------------------------------


def upstream_bootstrap_table(scores: Sequence[RunScores]) -> Table:
    """Each run's ``upstream_bootstrap`` (results.json), as upstream's
    ``bootstrap_outputs.py`` prints it: accuracy, abstention and wrong rates, bootstrap
    mean [95% interval], %, in Table 2's domain order."""
    headers = ["Run", "Domain", "Setting", "Accuracy", "Abstain", "Wrong", "Cases"]
    rows: list[list[str]] = []
    for label, s in zip(run_labels(scores), scores, strict=True):
        block, _ = upstream_bootstrap(s.run)
        for domain in TABLE_DOMAINS:
            for mode in TABLE_MODE_ORDER:
                stats = block.get(domain, {}).get(mode)
                if stats is None:
                    continue
                rows.append(
                    [
                        label,
                        DOMAINS[domain].display_name,
                        MODE_TITLES[mode],
                        *(
                            f"{100 * stats[f'mean_{key}']:.1f} "
                            f"[{100 * stats[f'{short}_ci_low_95']:.1f}, "
                            f"{100 * stats[f'{short}_ci_high_95']:.1f}]"
                            for key, short in (
                                ("accuracy", "acc"),
                                ("abstain_rate", "abstain"),
                                ("wrong_rate", "wrong"),
                            )
                        ),
                        str(stats["n_items"]),
                    ]
                )
    return Table(
        headers,
        rows,
        title="Upstream's statistics (scripts/bootstrap_outputs.py), %: the bootstrap mean "
        "[95% interval] of 1,000 replicates, seed 42, first attempts",
    )


# -- the paper side by side ------------------------------------------------------------


def _paper_text(c: PaperCell | None) -> str:
    if c is None:
        return MISSING
    text = f"{c.mean:.1f}"
    if c.upper is not None:
        text += f" +{c.upper:.1f}"
    if c.lower is not None:
        text += f" -{c.lower:.1f}"
    if any(u.startswith("mean") for u in c.uncertain):
        text += " (?)"
    return text


def against_paper(scores: Sequence[RunScores]) -> Table:
    """The runs' rows (stage ``first``) above the published rows of the same modes.

    A run whose model spec names a paper model is shown beside that model only;
    otherwise beside every published model.
    """
    headers = ["Source", "Model", "Protocol", "Setting"]
    headers += [DOMAINS[d].display_name for d in TABLE_DOMAINS]
    rows: list[list[str]] = []
    for label, s in zip(run_labels(scores), scores, strict=True):
        matched = match_model(s.run.model)
        for mode in TABLE_MODE_ORDER:
            if mode not in s.modes:
                continue
            protocol = protocol_of(s, mode)
            row = ["this run", label, protocol, MODE_TITLES[mode]]
            for domain in TABLE_DOMAINS:
                g = s.group(domain, mode, "first")
                row.append(_marked(estimate_text(g.estimate), s, domain, mode) if g else MISSING)
            rows.append(row)
            cells = paper_cells(model=matched, setting=mode)
            for model in dict.fromkeys(c.model for c in cells):
                by_domain = {c.domain: c for c in cells if c.model == model}
                table_no = next(iter(by_domain.values())).table
                # The published cells came from upstream's scripts: beside another
                # protocol's figures they are shown, but marked as not comparable.
                source = f"paper T{table_no}" + ("" if protocol == "paper" else " (not comparable)")
                rows.append(
                    [source, model, "paper", MODE_TITLES[mode]]
                    + [_paper_text(by_domain.get(d)) for d in TABLE_DOMAINS]
                )
    return Table(
        headers,
        rows,
        title=(
            "This run beside the paper (%); the paper's intervals are mostly illegible in"
            " its source, (?) marks an uncertain mean"
        ),
    )


# -- JSON ------------------------------------------------------------------------------


def _clean(x: Any) -> Any:
    # JSON has no NaN: an empty group's score is null.
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def to_json(scores: Sequence[RunScores], comparisons: Sequence[Comparison] = ()) -> dict[str, Any]:
    return {
        "runs": [
            {
                "run": s.run.name,
                "path": str(s.run.path),
                "model": s.run.model,
                "split": s.run.split,
                "protocol": s.run.protocol,
                "upstream_bootstrap": upstream_bootstrap(s.run)[0],
                "stages": list(s.stages),
                "bootstrap": s.bootstrap,
                "seed": s.seed,
                "notes": s.notes,
                "scores": [{k: _clean(v) for k, v in _long_row(g, s).items()} for g in s.groups],
                **_dar_json(s),
            }
            for s in scores
        ],
        "comparisons": [{k: _clean(v) for k, v in r.items()} for r in comparison_rows(comparisons)],
    }


def _dar_json(s: RunScores) -> dict[str, Any]:
    """A run's DAR readings of its final states beside the harness reader's, for a run
    that holds DAR's view (dar-protocol and Harbor-imported runs); nothing for others."""
    dar = readings_json(s)
    return {} if dar is None else {"dar_readings": dar}


__all__ = [
    "LONG_COLUMNS",
    "Table",
    "against_paper",
    "cases_csv",
    "comparison_table",
    "long_csv",
    "render",
    "table2",
    "to_json",
]
