"""The paper's RL reward (B.5.2) and the benchmark's own, with adapters for trainers.

    from deonticbench.rewards import RewardTarget, score, score_batch

Front doors, each a documented import path (see docs/training.md):

* verl: ``deonticbench/rewards/verl.py``, functions ``compute_score`` and
  ``compute_score_batch`` (``custom_reward_function.path`` / ``.name``);
* TRL: ``deonticbench.rewards.trl.deonticbench_reward`` (and ``..._async``) in
  ``GRPOTrainer(reward_funcs=[...])``;
* OpenRLHF: ``deonticbench/rewards/openrlhf.py`` (``--remote_rm_url``, function
  ``reward_func``) or ``deonticbench serve-reward`` (``--remote_rm_url
  http://HOST:PORT/get_reward``).
"""

from .core import (
    PAPER_TIMEOUT_S,
    PARTIAL_CREDIT,
    REWARD_MODES,
    RewardCache,
    RewardInputError,
    RewardMode,
    RewardResult,
    RewardTarget,
    reward_cache,
    score,
    score_batch,
)
from .pool import close_process_solver, process_solver

__all__ = [
    "PAPER_TIMEOUT_S",
    "PARTIAL_CREDIT",
    "REWARD_MODES",
    "RewardCache",
    "RewardInputError",
    "RewardMode",
    "RewardResult",
    "RewardTarget",
    "close_process_solver",
    "process_solver",
    "reward_cache",
    "score",
    "score_batch",
]
