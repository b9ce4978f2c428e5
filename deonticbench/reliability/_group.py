"""What the signals and their cross-fitted combination share: the signal names and one
group's matrices (``GroupSignals``).

Its own module so that ``signals`` (which computes every signal, the combination
included) and ``_combined`` (which reads the other signals) both import it and neither
imports the other's caller: the combination once reached back into ``signals`` from a
function, a cycle hidden from the import graph.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..scoring.encoding import Stage
from ..scoring.metrics import Outcomes
from ..vocabulary.modes import Mode

Matrix = NDArray[np.float64]

BASE_SIGNALS = ("consistency", "cross_mode", "execution", "derivation")
"""Signals computed from any finished run, no model call."""
OPT_IN_SIGNALS = ("verbal", "logprob")
"""Signals that need the model's cooperation (``eval --confidence verbal|logprob``)."""
SIGNALS = (*BASE_SIGNALS, *OPT_IN_SIGNALS, "combined")
"""Every signal, in the order tables show them."""


@dataclass
class GroupSignals:
    """One domain x mode x stage of a run: outcomes, correctness and every signal."""

    run: str
    model: str
    domain: str
    mode: Mode
    stage: Stage
    outcomes: Outcomes
    correct: NDArray[np.bool_]
    signals: dict[str, Matrix | str] = field(default_factory=dict)
    """Signal name -> (N, K) matrix (padding cells 0), or the reason it is n/a."""
    notes: list[str] = field(default_factory=list)

    @property
    def valid(self) -> NDArray[np.bool_]:
        return self.outcomes.valid

    def available(self) -> list[str]:
        return [name for name in SIGNALS if not isinstance(self.signals.get(name), str | None)]
