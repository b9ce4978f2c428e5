"""The ``combined`` signal: a logistic regression over the other signals, cross-fitted
by case, so no sample is scored by a model that saw its case.

The folds are scikit-learn's ``GroupKFold`` over case ids (``min(5, cases)`` folds); in
each, ``StandardScaler`` then ``LogisticRegression(C=1.0)`` is fitted on the other folds'
samples and predicts the held-out fold's.  A training fold with one outcome class only
cannot be fitted: its held-out samples get that fold's share correct (a note says so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError
from .signals import BASE_SIGNALS, OPT_IN_SIGNALS, Matrix

if TYPE_CHECKING:
    from .signals import GroupSignals

FOLDS = 5
REGULARISATION_C = 1.0
EXTRA_MESSAGE = "the combined signal needs scikit-learn: pip install 'deonticbench[reliability]'"


def require_sklearn() -> None:
    """Raise ``ConfigError`` (one sentence) when scikit-learn is not installed."""
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise ConfigError(f"{EXTRA_MESSAGE[0].upper()}{EXTRA_MESSAGE[1:]}.") from None


def combined_signal(g: GroupSignals) -> Matrix | str:
    """Out-of-fold probabilities of being correct, or the reason there are none."""
    try:
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import GroupKFold
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler
    except ImportError:
        return EXTRA_MESSAGE
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
    folds = min(FOLDS, o.n_cases)
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
