"""DeonticBench: deontic reasoning over statutes, scored with SWI-Prolog.

The public API is the short list in ``__all__``; every other module is internal and may
change between releases.  An evaluation in three lines::

    from deonticbench import RunSpec, evaluate, score
    run = evaluate(RunSpec(model="reference", domains=("airline",), split="smoke"))
    print(score(run.path).to_frame())

Names are imported on first use (PEP 562), so ``import deonticbench`` and the command
line stay fast: ``deonticbench exec`` never pays for numpy or the model backends.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module (under deonticbench) that owns it
_PUBLIC = {
    # what a run is, and the two entry points
    "RunSpec": "spec",
    "evaluate": "api",
    "EvalResult": "api",
    "score": "api",
    "ScoreResult": "api",
    "ScoreRow": "api",
    # the data
    "Case": "data",
    "load_cases": "data",
    "DataSource": "sources",
    "resolve_source": "sources",
    "Domain": "domains",
    "DOMAINS": "domains",
    "get_domain": "domains",
    "Mode": "modes",
    "MODES": "modes",
    # the pipeline's stages
    "Solver": "solver",
    "Limits": "solver",
    "Execution": "solver",
    "prepare_program": "programs",
    "Answer": "answers",
    "answer_from_execution": "answers",
    "Outcome": "outcomes",
    "judge": "outcomes",
    "Record": "records",
    "Attempt": "records",
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
    "EvalResult",
    "Execution",
    "Limits",
    "Mode",
    "Model",
    "Outcome",
    "Record",
    "RunSpec",
    "ScoreResult",
    "ScoreRow",
    "Solver",
    "__version__",
    "answer_from_execution",
    "evaluate",
    "get_domain",
    "judge",
    "load_cases",
    "load_model",
    "prepare_program",
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
    from .answers import Answer, answer_from_execution
    from .api import EvalResult, ScoreResult, ScoreRow, evaluate, score
    from .data import Case, load_cases
    from .domains import DOMAINS, Domain, get_domain
    from .errors import DeonticBenchError
    from .models import Model, load_model
    from .modes import MODES, Mode
    from .outcomes import Outcome, judge
    from .programs import prepare_program
    from .records import Attempt, Record
    from .solver import Execution, Limits, Solver
    from .sources import DataSource, resolve_source
    from .spec import RunSpec
