"""Scoring, reading the store: the paper's numbers from a run folder.

Metrics and the bootstrap of paper B.3 (``metrics``), scoring run folders and comparing
them (``scores``), the Table 2 layout and other tables (``tables``), results.json
(``results``), token usage and its estimated cost (``usage``), the format of agentic
trials (``agent_format``), the caveats of a run's numbers (``notes``), Figure 2
(``figures``) and the paper's published scores (``paper``).  Hands score rows and tables
to analysis, the report and the command line.
"""

from __future__ import annotations

from . import _store_names
from .agent_format import FormatRow, first_turn_stop, format_rows, format_table
from .comparisons import (
    Comparison,
    compare,
    compare_modes,
    comparisons_note,
    pair_modes,
    requested_comparisons,
)
from .dar_published import DarFigures, against_dar, dar_runs
from .encoding import STAGES, Stage, encode, stage_attempt
from .figures import build_figure, draw_figure, figure_modes, figure_png, figure_png_and_modes
from .metrics import (
    DEFAULT_BOOTSTRAP,
    NEGATIVE,
    POSITIVE,
    Outcomes,
    bootstrap,
    bootstrap_replicates,
    correct_matrix,
    effective_class,
    iter_draws,
    macro_f1_from_counts,
    numeric_correct,
    paired_difference,
    point_metric,
    rates,
    replicate_metric,
)
from .notes import (
    against_paper_notes,
    closing_notes,
    cross_protocol_note,
    protocol_notes,
    run_notes,
)
from .paper import load_paper_results, match_model
from .rereading import (
    Reread,
    SensitivityRow,
    labelled_sensitivity,
    reader_sensitivity,
    reread_run,
    reread_scores,
    sensitivity_lines,
    sensitivity_table,
)
from .results import (
    PRICE_IN,
    PRICE_OUT,
    RESULTS_FILE,
    attempts_cost,
    estimated_cost,
    model_prices,
    run_totals,
    write_results,
)
from .rows import NothingToScoreError, ScoreRow, require_scorable, score_rows
from .scores import RunScores, score_run, score_runs, scores_of
from .seeds import domain_rng
from .stdout import stdout_text
from .tables import (
    COMPARISON_COLUMNS,
    LONG_COLUMNS,
    MODE_TITLES,
    TABLE_DOMAINS,
    TABLE_FORMATS,
    TERMINAL_WIDTH,
    Table,
    against_paper,
    cases_csv,
    comparison_rows,
    comparison_table,
    long_csv,
    long_csv_with_paper,
    render,
    render_csv,
    render_markdown,
    render_text,
    table2,
    terminal_width,
    to_json,
    upstream_bootstrap_table,
)
from .usage import UsageRow, usage_rows, usage_table

# The store's names this face once handed on too: found in the store, with a warning.
__getattr__ = _store_names.store_name

__all__ = [
    "COMPARISON_COLUMNS",
    "DEFAULT_BOOTSTRAP",
    "LONG_COLUMNS",
    "MODE_TITLES",
    "NEGATIVE",
    "POSITIVE",
    "PRICE_IN",
    "PRICE_OUT",
    "RESULTS_FILE",
    "STAGES",
    "TABLE_DOMAINS",
    "TABLE_FORMATS",
    "TERMINAL_WIDTH",
    "Comparison",
    "DarFigures",
    "FormatRow",
    "NothingToScoreError",
    "Outcomes",
    "Reread",
    "RunScores",
    "ScoreRow",
    "SensitivityRow",
    "Stage",
    "Table",
    "UsageRow",
    "against_dar",
    "against_paper",
    "against_paper_notes",
    "attempts_cost",
    "bootstrap",
    "bootstrap_replicates",
    "build_figure",
    "cases_csv",
    "closing_notes",
    "compare",
    "compare_modes",
    "comparison_rows",
    "comparison_table",
    "comparisons_note",
    "correct_matrix",
    "cross_protocol_note",
    "dar_runs",
    "domain_rng",
    "draw_figure",
    "effective_class",
    "encode",
    "estimated_cost",
    "figure_modes",
    "figure_png",
    "figure_png_and_modes",
    "first_turn_stop",
    "format_rows",
    "format_table",
    "iter_draws",
    "labelled_sensitivity",
    "load_paper_results",
    "long_csv",
    "long_csv_with_paper",
    "macro_f1_from_counts",
    "match_model",
    "model_prices",
    "numeric_correct",
    "pair_modes",
    "paired_difference",
    "point_metric",
    "protocol_notes",
    "rates",
    "reader_sensitivity",
    "render",
    "render_csv",
    "render_markdown",
    "render_text",
    "replicate_metric",
    "requested_comparisons",
    "require_scorable",
    "reread_run",
    "reread_scores",
    "run_notes",
    "run_totals",
    "score_rows",
    "score_run",
    "score_runs",
    "scores_of",
    "sensitivity_lines",
    "sensitivity_table",
    "stage_attempt",
    "stdout_text",
    "table2",
    "terminal_width",
    "to_json",
    "upstream_bootstrap_table",
    "usage_rows",
    "usage_table",
    "write_results",
]
