"""DeonticBench on Harbor: tasks out, jobs back in, and Harbor without Docker.

* ``export_tasks`` writes one Harbor task per case (``deonticbench export --format
  harbor``), with the harness's own verifier shipped in each task's ``tests/``;
* ``import_jobs`` turns a Harbor jobs folder (of these tasks or of DAR's) into a run
  folder, every answer re-judged by the harness (``deonticbench import-harbor``);
* ``dar_rules`` scores the same trials by DAR's rules (``deonticbench score --dar-rules``);
* ``BwrapEnvironment`` is a Harbor environment on bubblewrap
  (``harbor run -e deonticbench.integrations.harbor:BwrapEnvironment``), built from the
  solver's one sandbox policy: the task's commands run in a cleared environment, under an
  unprivileged uid with no capability.

Only ``BwrapEnvironment`` needs the ``harbor`` extra (Python 3.12+); it is loaded on
first use, so exporting, importing and scoring work without Harbor installed.
See docs/harbor.md.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import dar_rules
    from .environment import BwrapEnvironment
    from .importer import import_jobs
    from .tasks import export_tasks

_HOME = {
    "BwrapEnvironment": "environment",
    "export_tasks": "tasks",
    "import_jobs": "importer",
}
"""Each name's module, imported on first use: Harbor itself is imported only when its
environment is asked for (``-e module:Class``), and the shipped verifier, which imports
this package inside a task, pulls in none of the rest."""

__all__ = ["BwrapEnvironment", "dar_rules", "export_tasks", "import_jobs"]


def __getattr__(name: str) -> Any:
    if name == "dar_rules":
        return import_module(".dar_rules", __name__)
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value
