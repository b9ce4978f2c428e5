"""Choosing a threshold without judging it on the cases it was chosen on.

Cases are dealt into ``PERMUTED_CASE_FOLDS`` folds by a seeded permutation; for each
fold the threshold is the best one on the other folds' cases, and is then applied to the
fold's own cases.  The cascades and the best selective policy of ``--costs`` share this
rule.  (The combined signal's folds are another scheme, ``_combined.GROUP_KFOLD_FOLDS``.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

PERMUTED_CASE_FOLDS = 5
"""Folds of cases dealt by a seeded permutation (``fold_of_cases``)."""


def fold_of_cases(n_cases: int, seed: int, folds: int = PERMUTED_CASE_FOLDS) -> NDArray[np.intp]:
    """The fold of each case (``min(folds, n_cases)`` folds of near-equal size)."""
    k = max(1, min(folds, n_cases))
    order = np.random.default_rng(seed).permutation(n_cases)
    fold = np.empty(n_cases, dtype=np.intp)
    fold[order] = np.arange(n_cases) % k
    return fold


def crossfit_thresholds(
    candidates: Sequence[float],
    choose: Callable[[NDArray[np.bool_], Sequence[float]], float],
    n_cases: int,
    seed: int,
) -> tuple[NDArray[np.float64], list[float]]:
    """Per case the threshold chosen without it: ``choose(train_mask, candidates)``
    returns the best threshold on the cases where ``train_mask`` holds.  Returns the
    per-case thresholds and each fold's choice."""
    fold = fold_of_cases(n_cases, seed)
    per_case = np.zeros(n_cases)
    chosen: list[float] = []
    for f in range(int(np.max(fold)) + 1 if n_cases else 0):
        train = fold != f
        if not train.any():  # a single case: nothing else to learn from
            train = np.ones(n_cases, dtype=bool)
        tau = choose(train, candidates)
        per_case[fold == f] = tau
        chosen.append(tau)
    return per_case, chosen
