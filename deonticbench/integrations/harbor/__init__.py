"""DeonticBench on Harbor: tasks out, jobs back in, and Harbor without Docker.

* ``export_tasks`` writes one Harbor task per case (``deonticbench export --format
  harbor``), with the harness's own verifier shipped in each task's ``tests/``;
* ``import_jobs`` turns a Harbor jobs folder (of these tasks or of DAR's) into a run
  folder, every answer re-judged by the harness (``deonticbench import-harbor``);
* ``dar`` scores the same trials by DAR's rules (``deonticbench score --dar-rules``);
* ``BwrapEnvironment`` is a Harbor environment on bubblewrap
  (``harbor run -e deonticbench.integrations.harbor:BwrapEnvironment``).

Only ``BwrapEnvironment`` needs the ``harbor`` extra (Python 3.12+); it is loaded on
first use, so exporting, importing and scoring work without Harbor installed.
See docs/harbor.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["BwrapEnvironment"]


def __getattr__(name: str) -> Any:
    # Harbor is imported only when its environment is asked for (``-e module:Class``).
    if name == "BwrapEnvironment":
        from .environment import BwrapEnvironment

        return BwrapEnvironment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
