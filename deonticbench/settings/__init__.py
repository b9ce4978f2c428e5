"""The diagnostic settings and the robustness checks: reference programs taken apart.

The rule/fact split of each reference program, verified by recombining its parts in the
sandbox (``split``); the parts a ``rules-given`` or ``facts-given`` unit shows, and the
part the reference backend answers with (``given``); the statute sections a SARA case's
reference uses, for ``--distractors`` (``sections``); counterfactual cases with changed
amounts and the gold their perturbed reference prints (``perturb``).  It sits above
reading (it runs programs in the sandbox and reads their answers) and below the store;
``api.prepare`` hands its parts to the plan, so prompting never imports the solver.
Hands on ``CaseSplit`` and the given parts to the plan, and perturbed data folders.
"""

from __future__ import annotations

from .given import SettingParts
from .perturb import perturb_split
from .split import join_parts, split_cases

__all__ = [
    "SettingParts",
    "join_parts",
    "perturb_split",
    "split_cases",
]
