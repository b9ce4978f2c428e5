"""The store's names that scoring's face once handed on as well (a run folder opened for
reading, the error and the reading key that go with it).  They are the store's, and its
face hands them on; ``deonticbench.scoring.<name>`` still finds them there for a release
and says where they live."""

from __future__ import annotations

import warnings
from typing import Any

from .. import store

STORE_NAMES = ("READING_KEY", "LoadReport", "Run", "RunFolderError", "reading_of")


def store_name(name: str) -> Any:
    """The store's ``name`` for one of ``STORE_NAMES``, with a warning naming its home
    (``deonticbench.scoring``'s module ``__getattr__``)."""
    if name not in STORE_NAMES:
        raise AttributeError(f"module 'deonticbench.scoring' has no attribute {name!r}")
    warnings.warn(
        f"deonticbench.scoring.{name} is deonticbench.store.{name}.",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(store, name)
