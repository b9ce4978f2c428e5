"""Scoring, reading the store: the paper's numbers from a run folder.

Metrics and the bootstrap of paper B.3 (``metrics``), scoring run folders and comparing
them (``scores``), the Table 2 layout and other tables (``tables``), results.json
(``results``), token usage and its estimated cost (``usage``), the format of agentic
trials (``agent_format``), the caveats of a run's numbers (``notes``), Figure 2
(``figures``), the paper's published scores (``paper``) and an eval set's one table and
results.json (``set_table``).  Hands score rows and tables
to analysis, the report and the command line.
"""

from __future__ import annotations

from .agent_format import FormatRow, format_rows, format_table
from .comparisons import Comparison, compare, comparisons_note, requested_comparisons
from .dar_published import against_dar, dar_runs
from .encoding import STAGES, Stage, encode, stage_attempt
from .figures import draw_figure, figure_png_and_modes
from .metrics import (
    DEFAULT_BOOTSTRAP,
    NEGATIVE,
    POSITIVE,
    Outcomes,
    bootstrap_replicates,
    correct_matrix,
    effective_class,
    iter_draws,
    macro_f1_from_counts,
    numeric_correct,
)
from .notes import against_paper_notes, closing_notes, protocol_notes
from .paper import match_model
from .rereading import SensitivityRow, labelled_sensitivity, reread_scores, sensitivity_table
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
from .rows import ScoreRow, require_scorable, score_rows
from .scores import RunScores, run_folders, score_run, score_runs, scores_of
from .seeds import domain_rng
from .set_table import SetComparison, set_comparison, set_comparisons, write_set_results
from .stdout import stdout_text
from .tables import (
    COMPARISON_COLUMNS,
    MODE_TITLES,
    TABLE_FORMATS,
    Table,
    against_paper,
    cases_csv,
    comparison_rows,
    comparison_table,
    long_csv,
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

__all__ = [
    "COMPARISON_COLUMNS",
    "DEFAULT_BOOTSTRAP",
    "MODE_TITLES",
    "NEGATIVE",
    "POSITIVE",
    "PRICE_IN",
    "PRICE_OUT",
    "RESULTS_FILE",
    "STAGES",
    "TABLE_FORMATS",
    "Comparison",
    "FormatRow",
    "Outcomes",
    "RunScores",
    "ScoreRow",
    "SensitivityRow",
    "SetComparison",
    "Stage",
    "Table",
    "UsageRow",
    "against_dar",
    "against_paper",
    "against_paper_notes",
    "attempts_cost",
    "bootstrap_replicates",
    "cases_csv",
    "closing_notes",
    "compare",
    "comparison_rows",
    "comparison_table",
    "comparisons_note",
    "correct_matrix",
    "dar_runs",
    "domain_rng",
    "draw_figure",
    "effective_class",
    "encode",
    "estimated_cost",
    "figure_png_and_modes",
    "format_rows",
    "format_table",
    "iter_draws",
    "labelled_sensitivity",
    "long_csv",
    "macro_f1_from_counts",
    "match_model",
    "model_prices",
    "numeric_correct",
    "protocol_notes",
    "render",
    "render_csv",
    "render_markdown",
    "render_text",
    "requested_comparisons",
    "require_scorable",
    "reread_scores",
    "run_folders",
    "run_totals",
    "score_rows",
    "score_run",
    "score_runs",
    "scores_of",
    "sensitivity_table",
    "set_comparison",
    "set_comparisons",
    "stage_attempt",
    "stdout_text",
    "table2",
    "terminal_width",
    "to_json",
    "upstream_bootstrap_table",
    "usage_rows",
    "usage_table",
    "write_results",
    "write_set_results",
]
