"""Counterfactual variants (``deonticbench perturb``) paired with their original case:
a case's variants scored as one case, for the paired comparisons."""

from __future__ import annotations

import numpy as np

from ..data.cases import original_case_id
from .metrics import Outcomes, correct_matrix


def by_original_case(o: Outcomes) -> Outcomes:
    """Outcomes with each original case's counterfactual variants as one case whose
    samples are all of theirs (unchanged when there are no variants).

    The variants have different gold amounts, so their samples are kept as right or
    wrong only: gold 0, a right sample 0, a wrong one 2 (outside the $1 tolerance), an
    abstention still an abstention.  Drawing one sample per case uniformly, as the
    bootstrap does, then scores the mean over the variants."""
    if not any(original_case_id(c) != c for c in o.case_ids):
        return o
    if o.kind != "numeric":
        raise ValueError("counterfactual variants are made for numeric domains only")
    right = correct_matrix(o)
    samples: dict[str, list[tuple[bool, bool]]] = {}
    for i, case_id in enumerate(o.case_ids):
        group = samples.setdefault(original_case_id(case_id), [])
        group += [(bool(right[i, j]), bool(o.abstain[i, j])) for j in range(int(o.present[i]))]
    ids = sorted(samples)
    k = max(len(v) for v in samples.values())
    pred = np.zeros((len(ids), k))
    abstain = np.zeros((len(ids), k), dtype=bool)
    for row, case_id in enumerate(ids):
        for col, (is_right, abstained) in enumerate(samples[case_id]):
            pred[row, col] = 0.0 if is_right else 2.0
            abstain[row, col] = abstained
    return Outcomes(
        kind="numeric",
        case_ids=tuple(ids),
        gold=np.zeros(len(ids)),
        pred=pred,
        abstain=abstain,
        present=np.array([len(samples[c]) for c in ids], dtype=np.intp),
    )
