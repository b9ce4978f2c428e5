"""DeonticBench as inspect_ai tasks: ``deonticbench eval``'s runs, carried out by ``inspect eval``.

    inspect eval deonticbench/deonticbench -T domain=airline -T mode=few-shot \\
        --model openai/gpt-4.1

The dataset, the prompts (the task's protocol's, as ``eval`` renders them), the retry
with feedback, the sandboxed execution, the answer reading, the judging and the metrics
are the harness's own: this package only adapts them to inspect's Task (``tasks``),
Solver (``steps``), Scorer (``scorer``) and Metric (``paper_metric``).  In an agentic mode the
task runs inspect's ``react()`` agent with the harness's tool table, stop rules and trial
record (``agent``).  ``importer.import_log`` turns an inspect log of these tasks back into
a run folder.  Needs the ``inspect`` extra (``pip install 'deonticbench[inspect]'``); see
docs/inspect.md.
"""

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
