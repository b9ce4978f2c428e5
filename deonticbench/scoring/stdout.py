"""What ``deonticbench score`` prints without --out: Table 2 and the agentic tables as
text, markdown or LaTeX, or one loadable document (CSV, JSON)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import dar_published
from .agent_format import format_rows, format_table
from .comparisons import Comparison
from .rereading import sensitivity_table
from .scores import RunScores
from .tables import (
    COMPARISON_COLUMNS,
    Table,
    against_paper,
    comparison_rows,
    comparison_table,
    long_csv,
    long_csv_with_paper,
    render,
    render_csv,
    table2,
    to_json,
)
from .usage import usage_rows, usage_table

if TYPE_CHECKING:
    from .rereading import SensitivityRow


def _tables_text(
    scores: Sequence[RunScores],
    comparisons: Sequence[Comparison],
    fmt: str,
    paper: bool,
    sensitivity: Sequence[tuple[str, SensitivityRow]] = (),
    against_dar_rows: Table | None = None,
) -> str:
    """The tables ``score`` prints without --out, in ``fmt``: one loadable document for
    json and csv (``against_dar_rows``: DAR's published table beside the dar runs, which
    the text formats print after these tables)."""
    if fmt == "json":
        doc = to_json(scores, comparisons)
        if against_dar_rows is not None:
            doc["against_dar"] = [
                dict(zip(against_dar_rows.headers, r, strict=True)) for r in against_dar_rows.rows
            ]
        if sensitivity:
            doc["reader_sensitivity"] = [
                {"run": label, **dataclasses.asdict(row), "difference": row.difference}
                for label, row in sensitivity
            ]
        doc["usage"] = [row.to_dict() for row in usage_rows(scores)]
        doc["format"] = [row.to_dict() for row in format_rows(scores)]
        if paper:
            table = against_paper(scores)
            doc["against_paper"] = [dict(zip(table.headers, r, strict=True)) for r in table.rows]
        return json.dumps(doc, indent=2) + "\n"
    if fmt == "csv":
        # One table, so that the output loads as CSV: the paired differences with
        # --compare, else the long table (with the paper's cells beside it with --against).
        if comparisons:
            return render_csv(COMPARISON_COLUMNS, comparison_rows(comparisons))
        return long_csv_with_paper(scores) if paper else long_csv(scores)
    tables: list[Table] = [table2(scores)]
    if has_agents(scores):
        tables.append(usage_table(usage_rows(scores)))
        formats = format_rows(scores)
        if formats:
            # Every run's rows, so a constrained and a text run are read one above the other.
            tables.append(format_table(formats))
    if paper:
        tables.append(against_paper(scores))
    if comparisons:
        tables.append(comparison_table(comparisons))
    if sensitivity:
        tables.append(sensitivity_table(sensitivity))
    return "\n".join(render(t, fmt) for t in tables)


def has_agents(scores: Sequence[RunScores]) -> bool:
    return any(r.agent is not None for s in scores for r in s.run.records)


def stdout_text(
    scores: Sequence[RunScores],
    comparisons: Sequence[Comparison],
    fmt: str,
    paper: bool,
    sensitivity: Sequence[tuple[str, SensitivityRow]] = (),
    extra_tables: Sequence[Table] | None = None,
    *,
    against_dar: bool = False,
) -> tuple[str, list[str]]:
    """Without --out: (the tables in ``fmt``, notes for stderr): what one loadable
    document (CSV, JSON) cannot hold is said to go to --out.

    ``extra_tables`` are the reliability and cost tables of ``score --reliability`` /
    ``--costs`` (None when neither was asked for); they arrive as plain tables so that
    scoring, a lower stage, never imports the reliability stage that reads it.
    ``against_dar``: the JSON holds DAR's published table beside the runs of the dar
    protocol (``against_dar``; each run left out is a note)."""
    notes: list[str] = []
    dar_table = None
    if against_dar and fmt == "json":
        kept, notes = dar_published.dar_runs(scores)
        dar_table = dar_published.against_dar(kept)
    text = _tables_text(scores, comparisons, fmt, paper, sensitivity, dar_table)
    if sensitivity and fmt == "csv":
        notes.append("note: the reader-sensitivity table is written with --out.")
    if extra_tables is not None and fmt in ("csv", "json"):
        # One loadable document on stdout: the extra tables go to --out.
        notes.append("note: the reliability and cost tables are written with --out.")
    elif extra_tables is not None:
        extra_fmt = fmt if fmt in ("markdown", "latex") else "table"
        text += "".join("\n" + render(table, extra_fmt) for table in extra_tables)
    return text, notes


__all__ = ["has_agents", "stdout_text"]
