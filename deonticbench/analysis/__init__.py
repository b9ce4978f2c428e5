"""Why programs fail: static analysis, the proof of the answer, the comparison with the
reference program, the failure taxonomy and the derivation axis (docs/analysis.md).

``static`` reads a program's structure, ``engine`` runs the analyser (``prolog/``) in the
sandbox, ``proof`` walks the proof of the answer, ``compare`` and ``divergence`` set it
beside the reference program's, ``diagnose`` names the failure and the derivation,
``run`` writes a run's analysis.jsonl, ``failure_tables`` prints Table 4 and its companions and
``explain`` is ``deonticbench exec --explain``.  Reads records (after scoring, before
reliability); never imports the runner or the CLI.  Hands analysis.jsonl and the tables
on, and the derivation to the rewards.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .static import analyse_static, signature_jaccard, static_from_json

if TYPE_CHECKING:
    from .compare import CaseVocabulary
    from .diagnose import Derivation, Proven, derivation
    from .engine import AnalyserError, analyse_many
    from .explain import explain_program
    from .failure_tables import all_tables, render_tables, write_outputs
    from .run import ANALYSIS_FILE, analyse_run, read_analysis

_HOME = {
    "ANALYSIS_FILE": "run",
    "AnalyserError": "engine",
    "CaseVocabulary": "compare",
    "Derivation": "diagnose",
    "Proven": "diagnose",
    "all_tables": "failure_tables",
    "analyse_many": "engine",
    "analyse_run": "run",
    "derivation": "diagnose",
    "explain_program": "explain",
    "read_analysis": "run",
    "render_tables": "failure_tables",
    "write_outputs": "failure_tables",
}
"""Each lazily loaded name's module: the comparison, the diagnosis and the tables pull in
the store, scoring and numpy, which ``from deonticbench.analysis import analyse_static``
does not need."""

__all__ = [
    "ANALYSIS_FILE",
    "AnalyserError",
    "CaseVocabulary",
    "Derivation",
    "Proven",
    "all_tables",
    "analyse_many",
    "analyse_run",
    "analyse_static",
    "derivation",
    "explain_program",
    "read_analysis",
    "render_tables",
    "signature_jaccard",
    "static_from_json",
    "write_outputs",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value
