"""Front doors into other people's tools: inspect_ai (``integrations.inspect``) and Harbor
(``integrations.harbor``).

Each integration is a subpackage that only calls the library (prompting, the runner's
attempt, the agents' loop rules and judging, the scorer) and hands back what the other
tool expects: inspect's tasks, solver steps, agent, scorer and metric, and a log imported
back into a run folder; Harbor's tasks with their shipped verifier, a jobs folder
imported back, DAR's scoring rules and a Harbor environment on bubblewrap.  Nothing in
the package below the command line and the public API depends on these modules.  A tool
finds its integration by the subpackage's import path (``inspect eval deonticbench/...``,
``-e deonticbench.integrations.harbor:BwrapEnvironment``); the names the command line
calls are offered here too, each loaded on first use, because each subpackage needs its
own extra (``inspect``, ``harbor``) for the parts that import the tool.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .harbor.dar_scoring import (
        against_dar_text,
        dar_rules_text,
        jobs_folders_report,
        require_dar_views,
    )
    from .harbor.exports import export_harbor_tasks
    from .harbor.importer import import_jobs
    from .inspect.importer import import_log
    from .upstream_outputs import import_upstream

_HOME = {
    "against_dar_text": ".harbor.dar_scoring",
    "dar_rules_text": ".harbor.dar_scoring",
    "jobs_folders_report": ".harbor.dar_scoring",
    "require_dar_views": ".harbor.dar_scoring",
    "export_harbor_tasks": ".harbor.exports",
    "import_jobs": ".harbor.importer",
    "import_log": ".inspect.importer",
    "import_upstream": ".upstream_outputs",
}
"""Each name's module, imported on first use: ``import_log`` needs inspect_ai installed,
and none of them is needed to start the command line."""

__all__ = [
    "against_dar_text",
    "dar_rules_text",
    "export_harbor_tasks",
    "import_jobs",
    "import_log",
    "import_upstream",
    "jobs_folders_report",
    "require_dar_views",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_HOME[name], __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value
