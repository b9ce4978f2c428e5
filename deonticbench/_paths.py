"""Where the project's non-Python resources live.

The design card keeps prompts, the data manifest and the model registry
in top-level folders beside the package, so the harness runs from a checkout (``make``
installs it in editable mode).  ``DEONTICBENCH_HOME`` overrides the root for unusual
installs.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(os.environ.get("DEONTICBENCH_HOME") or Path(__file__).resolve().parent.parent)
PROMPTS = ROOT / "prompts"
DATA = ROOT / "data"
EVAL = ROOT / "eval"
