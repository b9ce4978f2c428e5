"""One self-contained HTML file for one or more scored runs: ``report.html``.

No server, no network: the styles and the script are inlined from
``deonticbench/resources/report/``, the figures are embedded PNGs, and the data is in
the page.  The page has

* the paper's Table 2 layout with bootstrap intervals (first and final stage when the
  run retried), and the paper's published row beside it when the model is one the paper
  reports;
* the figures (``figures.draw_figure``: the metric with its interval beside the outcome
  decomposition, every run in one figure);
* for agentic runs, what each setting cost (the usage table) and the format of its
  trials (turns by kind, first-turn stops, programs run, answers left);
* paired differences when several runs are given;
* a sample browser: a small index (domain, case, mode, sample, outcome, abstain reason,
  failure category) that is filtered in the page, and the details of every sample
  (prompts as sent, responses, programs as run, SWI-Prolog's output, answer, verdict,
  gold, analysis) as gzip-compressed JSON that the browser inflates after first paint.

Prompt text is interned by paragraph (statutes and exemplars repeat across thousands of
prompts), so a whole-split run stays a few megabytes; see benchmarks/report.py.

Where each part lives: ``_page`` (the page's order, the template, writing the file),
``_sections`` (the tables and figures), ``_samples`` (the sample browser's data),
``_prompt_book`` (prompts rebuilt for each attempt), ``_analysis_section`` (rows read
from ``analysis.jsonl``) and ``_json`` (JSON a browser accepts); ``score_files`` writes
``score --out``'s table files and figures; ``set_outputs`` writes what an eval set
leaves in its folder when it ends (``finish_set``: results.json, report.html and the
set's one table).
"""

from __future__ import annotations

from ._page import REPORT_FILE, write_report
from .score_files import write_score_files
from .set_outputs import SetOutputs, finish_set, prescore

__all__ = [
    "REPORT_FILE",
    "SetOutputs",
    "finish_set",
    "prescore",
    "write_report",
    "write_score_files",
]
