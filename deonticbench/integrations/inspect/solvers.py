"""Moved: inspect's solver step is ``deonticbench.integrations.inspect.steps`` (this name
said "solver" beside our ``solver`` package, the Prolog sandbox).  The old import path
keeps working, with a ``DeprecationWarning`` naming the new one."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

from . import steps

if TYPE_CHECKING:  # the type checker sees the moved names where they now live
    from .steps import ATTEMPTS_KEY, PENDING_KEY, deonticbench_solver

__all__ = ["ATTEMPTS_KEY", "PENDING_KEY", "deonticbench_solver"]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    warnings.warn(
        f"{__name__}.{name} is now deonticbench.integrations.inspect.steps.{name}.",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(steps, name)
