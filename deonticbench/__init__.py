"""DeonticBench: deontic reasoning over statutes, scored with SWI-Prolog.

The public API is the short list in ``__all__``; every other module is internal and may
change between releases.  A run is a ``RunSpec`` (what it does) and ``RunOptions`` (how
it is carried out).  An evaluation in three lines::

    from deonticbench import RunSpec, evaluate, score
    run = evaluate(RunSpec(model="reference", domains=("airline",), split="smoke"))
    print(score(run).to_frame())

A finished run folder opens one way, ``read_run(path)``, into the ``Run`` that
``evaluate`` returns too and every reader of a run takes.

Names are imported on first use (PEP 562), so ``import deonticbench`` and the command
line stay fast: ``deonticbench exec`` never pays for numpy or the model backends.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING, Any

# The package's modules log to ``logging.getLogger(__name__)``; a library prints nothing
# unless its user configures logging, so the root of its loggers gets a handler that
# drops records (without one, Python's last-resort handler would print warnings).
logging.getLogger(__name__).addHandler(logging.NullHandler())

__version__ = "0.1.0"

# public name -> module (under deonticbench) that owns it
_PUBLIC = {
    # what a run is, the two entry points, and the one way to open a run
    "RunSpec": "store",
    "RunOptions": "evaluation",
    "evaluate": "api",
    "Run": "store",
    "read_run": "store",
    "score": "api",
    "ScoreResult": "api",
    "ScoreRow": "api",
    # the data
    "Case": "data",
    "load_cases": "data",
    "resolve_source": "data",
    "Domain": "data",
    "get_domain": "data",
    # the pipeline's stages
    "Solver": "solver",
    "Limits": "solver",
    "Execution": "solver",
    "judge_attempt": "reading",
    "JudgedAttempt": "reading",
    "Program": "reading",
    "Reply": "reading",
    "Record": "store",
    "DeonticBenchError": "errors",
}

__all__ = [
    "Case",
    "DeonticBenchError",
    "Domain",
    "Execution",
    "JudgedAttempt",
    "Limits",
    "Program",
    "Record",
    "Reply",
    "Run",
    "RunOptions",
    "RunSpec",
    "ScoreResult",
    "ScoreRow",
    "Solver",
    "__version__",
    "evaluate",
    "get_domain",
    "judge_attempt",
    "load_cases",
    "read_run",
    "resolve_source",
    "score",
]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'deonticbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # the type checker sees the names as plain imports
    from .api import ScoreResult, ScoreRow, evaluate, score
    from .data.cases import Case, load_cases
    from .data.domains import Domain, get_domain
    from .data.sources import resolve_source
    from .errors import DeonticBenchError
    from .evaluation.run_options import RunOptions
    from .reading.judging import JudgedAttempt, Program, Reply, judge_attempt
    from .solver import Execution, Limits, Solver
    from .store.record import Record
    from .store.run import Run, read_run
    from .store.spec import RunSpec
