"""Where the project's non-Python resources live.

The design card keeps prompts, the harness's own Prolog, the data manifest and the model
registry in top-level folders beside the package.  A checkout (and ``make``'s editable
install) reads them in place; a regular ``pip install .`` ships copies inside the package
as ``deonticbench/_share/`` (see setup.py), which is preferred when present.
``DEONTICBENCH_HOME`` overrides the root for unusual installs.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
_INSTALLED = _PACKAGE / "_share"


def _resource_root() -> Path:
    override = os.environ.get("DEONTICBENCH_HOME")
    if override:
        return Path(override)
    if (_INSTALLED / "prompts").is_dir():
        return _INSTALLED
    return _PACKAGE.parent


ROOT = _resource_root()
PROMPTS = ROOT / "prompts"
PROLOG = ROOT / "prolog"
DATA = ROOT / "data"
EVAL = ROOT / "eval"
