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

from .errors import ConfigError

__all__ = [
    "CACHE_ENV",
    "DATA",
    "EVAL",
    "PROLOG",
    "PROMPTS",
    "RESOURCES",
    "RESPONSES_FILE",
    "ROOT",
    "cache_root",
]

_PACKAGE = Path(__file__).resolve().parent
_INSTALLED = _PACKAGE / "_share"


def _resource_root() -> Path:
    override = os.environ.get("DEONTICBENCH_HOME")
    if override:
        return Path(override)
    if (_INSTALLED / "prompts").is_dir():
        return _INSTALLED
    return _PACKAGE.parent


CACHE_ENV = "DEONTICBENCH_CACHE"
RESPONSES_FILE = "responses.sqlite"


def cache_root() -> Path:
    """The one deonticbench cache folder: ``$DEONTICBENCH_CACHE``, else the platform's user
    cache folder (``~/.cache/deonticbench`` on Linux).  It holds the response cache
    (``responses.sqlite``), the checksummed statute files (``statutes/``), the hub
    revision pins (``hub-revisions.json``) and assembled local weights (``models/``)."""
    chosen = os.environ.get(CACHE_ENV, "").strip()
    if chosen:
        path = Path(chosen).expanduser()
        if path.is_file():
            raise ConfigError(
                f"{CACHE_ENV} names a folder (for {RESPONSES_FILE}, the statutes and the hub "
                f"pins), but {path} is a file: set it to a folder, or name a response cache "
                "file with --cache."
            )
        return path
    import platformdirs  # start-up: only when $DEONTICBENCH_CACHE names no folder

    return Path(platformdirs.user_cache_dir("deonticbench"))


ROOT = _resource_root()
PROMPTS = ROOT / "prompts"
PROLOG = ROOT / "prolog"
DATA = ROOT / "data"
EVAL = ROOT / "eval"
RESOURCES = _PACKAGE / "resources"
"""Package data shipped inside the package itself: the report's page assets and the
paper's published scores."""
