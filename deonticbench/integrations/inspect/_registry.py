"""The module inspect_ai's entry point loads (``[project.entry-points.inspect_ai]``):
importing it registers the tasks, solver, scorer and metric under ``deonticbench/``."""

from .paper_metric import paper_metric
from .scorer import deonticbench_scorer
from .steps import deonticbench_solver
from .tasks import airline, deonticbench, housing, sara_binary, sara_numeric, uscis

__all__ = [
    "airline",
    "deonticbench",
    "deonticbench_scorer",
    "deonticbench_solver",
    "housing",
    "paper_metric",
    "sara_binary",
    "sara_numeric",
    "uscis",
]
