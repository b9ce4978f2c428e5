"""Reliability: how far a confidence can be trusted, and what trusting it buys.

Reads scored run folders (the store, via ``scoring``) and ``analyze``'s analysis.jsonl,
and computes per sample the confidence signals (``signals``: consistency, cross-mode
agreement, execution, derivation, verbal, log-probability, and a cross-fitted
combination), then per domain x mode x signal the calibration, ranking and selective
metrics with a cluster bootstrap over cases, each replicate taking every sample of the
cases it draws (``confidence_metrics``, ``evaluate``); cascades of a small and a large run
(``cascade``) and the expected cost of errors (``costs``).  Hands data frames to the
library user (``api``), tables and results.json's ``reliability`` section (``signal_tables``) and
figures (``figures``) to the command line, and the Reliability page (``page``) to the
HTML report.  docs/reliability.md.

Data frames need pandas and the combined signal needs scikit-learn: both come with the
``reliability`` extra (``pip install 'deonticbench[reliability]'``).
"""

from __future__ import annotations

from .api import (
    ScoreExtras,
    cascade_folders,
    cascade_frame,
    cascade_text,
    cost_frame,
    reliability_frame,
    score_extras,
    write_cascade,
)
from .cascade import cascade
from .costs import load_costs
from .evaluate import SignalReport
from .page import reliability_html
from .signals import SIGNALS, check_signal

__all__ = [
    "SIGNALS",
    "ScoreExtras",
    "SignalReport",
    "cascade",
    "cascade_folders",
    "cascade_frame",
    "cascade_text",
    "check_signal",
    "cost_frame",
    "load_costs",
    "reliability_frame",
    "reliability_html",
    "score_extras",
    "write_cascade",
]
