"""The ``combined`` signal: a logistic regression over the other signals, cross-fitted
by case, so no sample is scored by a model that saw its case.

The folds are scikit-learn's ``GroupKFold`` over case ids (``min(GROUP_KFOLD_FOLDS,
cases)`` folds, deterministic: no seed); in each, ``StandardScaler`` then
``LogisticRegression(C=1.0)`` is fitted on the other folds' samples and predicts the
held-out fold's.  A training fold with one outcome class only cannot be fitted: its
held-out samples get that fold's share correct (a note says so).  These folds are not the
seeded case folds of ``_crossfit`` (thresholds of cascades and costs): changing either
scheme would move that feature's published numbers.
"""

from __future__ import annotations

import numpy as np

from ..errors import missing_extra
from ._group import BASE_SIGNALS, OPT_IN_SIGNALS, GroupSignals, Matrix

GROUP_KFOLD_FOLDS = 5
"""Folds of ``GroupKFold`` over case ids (all K samples of a case in one fold)."""
REGULARISATION_C = 1.0
# n/a reasons are clauses listed under the table, hence no full stop of their own.
SKLEARN_MISSING = str(missing_extra("the combined signal", "reliability")).rstrip(".")
"""The n/a reason of the combined signal without scikit-learn."""


def combined_signal(g: GroupSignals) -> Matrix | str:
    """Out-of-fold probabilities of being correct, or the reason there are none."""
    try:
        # Imported here: scikit-learn is the optional 'reliability' extra, and without it
        # the signal is n/a rather than the package failing to import.
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import GroupKFold
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
    except ImportError:
        return SKLEARN_MISSING
    names = [n for n in (*BASE_SIGNALS, *OPT_IN_SIGNALS) if not isinstance(g.signals.get(n), str)]
    if not names:
        return "no other signal to combine"
    o = g.outcomes
    if o.n_cases < 2:
        return "cross-fitting needs at least two cases"
    valid = g.valid
    x = np.stack([np.asarray(g.signals[n])[valid] for n in names], axis=1)
    y = g.correct[valid].astype(int)
    groups = np.broadcast_to(np.arange(o.n_cases)[:, None], valid.shape)[valid]
    folds = min(GROUP_KFOLD_FOLDS, o.n_cases)
    p = np.zeros(len(y))
    degenerate = 0
    for train, test in GroupKFold(n_splits=folds).split(x, y, groups):
        if len(np.unique(y[train])) < 2:
            p[test] = y[train].mean()
            degenerate += 1
            continue
        model = make_pipeline(
            StandardScaler(), LogisticRegression(C=REGULARISATION_C, max_iter=1000)
        )
        model.fit(x[train], y[train])
        p[test] = model.predict_proba(x[test])[:, 1]
    if degenerate:
        g.notes.append(
            f"combined: {degenerate} of {folds} training folds had one outcome class only; "
            "their held-out samples got the fold's share correct"
        )
    out = np.zeros(valid.shape)
    out[valid] = p
    return out
