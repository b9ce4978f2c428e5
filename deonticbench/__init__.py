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
import warnings
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
    "DataSource": "data",
    "resolve_source": "data",
    "Domain": "data",
    "DOMAINS": "data",
    "get_domain": "data",
    "Mode": "vocabulary",
    "MODES": "vocabulary",
    # the pipeline's stages
    "Solver": "solver",
    "Limits": "solver",
    "Execution": "solver",
    "judge_attempt": "reading",
    "JudgedAttempt": "reading",
    "Program": "reading",
    "Reply": "reading",
    "Answer": "reading",
    "answer_from_execution": "reading",
    "Outcome": "reading",
    "judge_answer": "reading",
    "Record": "store",
    "Attempt": "store",
    "load_model": "models",
    "Model": "models",
    "DeonticBenchError": "errors",
}

__all__ = [
    "DOMAINS",
    "MODES",
    "Answer",
    "Attempt",
    "Case",
    "DataSource",
    "DeonticBenchError",
    "Domain",
    "Execution",
    "JudgedAttempt",
    "Limits",
    "Mode",
    "Model",
    "Outcome",
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
    "answer_from_execution",
    "evaluate",
    "get_domain",
    "judge_answer",
    "judge_attempt",
    "load_cases",
    "load_model",
    "read_run",
    "resolve_source",
    "score",
]


_RETIRED = {
    "prepare_program": "deonticbench.judge_attempt(Program(text), domain, gold, run=...) "
    "prepares, runs and judges a program",
}
"""Public names that still answer for a release, with a DeprecationWarning saying what
replaces them (their value comes from the same stage)."""


def __getattr__(name: str) -> Any:
    if name in _RETIRED:
        warnings.warn(
            f"deonticbench.{name} is retired: {_RETIRED[name]}.", DeprecationWarning, stacklevel=2
        )
        return getattr(importlib.import_module(f"{__name__}.reading"), name)
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
    from .data.domains import DOMAINS, Domain, get_domain
    from .data.sources import DataSource, resolve_source
    from .errors import DeonticBenchError
    from .evaluation.run_options import RunOptions
    from .models import Model, load_model
    from .reading.answers import Answer, answer_from_execution
    from .reading.judging import JudgedAttempt, Program, Reply, judge_attempt
    from .reading.outcomes import Outcome, judge_answer
    from .solver import Execution, Limits, Solver
    from .store.record import Attempt, Record
    from .store.run import Run, read_run
    from .store.spec import RunSpec
    from .vocabulary.modes import MODES, Mode
