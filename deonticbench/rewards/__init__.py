"""The reward of one completion against its case, with adapters for trainers.

    from deonticbench.rewards import RewardTarget, score_completion, score_batch

Three modes (``core``): ``paper``, the paper's RL reward (B.5.2: exact answer, partial
credit for a program that does not execute); ``eval``, the benchmark's own judging (B.3);
``grounded``, correct as in ``eval`` and derived from the case (docs/analysis.md).  The
path is the harness's own: programs run in this process's sandbox pool
(``process_pool``), signatures come from the static analysis (``signatures``).  Reads
cases and the analysis; hands rewards to trainers and to the training export.

Front doors, each a documented import path (see docs/training.md):

* verl: ``deonticbench/rewards/verl.py``, functions ``compute_score`` and
  ``compute_score_batch`` (``custom_reward_function.path`` / ``.name``);
* TRL: ``deonticbench.rewards.trl.deonticbench_reward`` (and ``..._async``) in
  ``GRPOTrainer(reward_funcs=[...])``;
* OpenRLHF: ``deonticbench/rewards/openrlhf.py`` (``--remote_rm_url``, function
  ``reward_func``) or ``deonticbench serve-reward`` (``--remote_rm_url
  http://HOST:PORT/get_reward``, ``server``).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .core import (
    RewardInputError,
    RewardResult,
    RewardTarget,
    reward_cache,
    score_batch,
    score_completion,
)
from .process_pool import close_process_solver
from .signatures import prefetch_signatures, signatures_to_rows

if TYPE_CHECKING:
    from .server import ServerSettings, bind, serve

_HOME = {"PortError": "server", "ServerSettings": "server", "bind": "server", "serve": "server"}
"""Loaded on first use: the server needs starlette and uvicorn (the ``train`` extra),
which a trainer calling ``score_batch`` in-process does not."""

__all__ = [
    "RewardInputError",
    "RewardResult",
    "RewardTarget",
    "ServerSettings",
    "bind",
    "close_process_solver",
    "prefetch_signatures",
    "reward_cache",
    "score_batch",
    "score_completion",
    "serve",
    "signatures_to_rows",
]


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value  # later look-ups skip this function
    return value
