"""Eval sets: many runs (models x protocols x splits) as one reproduction of a published
table, with one priced dry run, one budget, one resume and one comparison.

A set is a list of ``SetEntry`` (a ``RunSpec`` and ``RunOptions`` each, as ``eval``
takes them; the command reads them from a YAML file, ``eval/sets/``).  ``plan_set``
prepares and checks them (``plan``); ``set_dry_run`` prices them (``dry``);
``run_set`` carries them out, provider lanes side by side under one
``evaluation.spending.Budget`` (``execute``), drawn by one ``SetProgress``
(``progress``).  Every run is an ordinary run folder under the set's folder
(``store.sets``), so later stages read a set as they read runs.
"""

from __future__ import annotations

from .dry import set_dry_run
from .execute import SetOutcome, run_set
from .plan import SetEntry, SetPlan, plan_set
from .progress import SetProgress

__all__ = [
    "SetEntry",
    "SetOutcome",
    "SetPlan",
    "SetProgress",
    "plan_set",
    "run_set",
    "set_dry_run",
]
