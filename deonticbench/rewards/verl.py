"""verl's custom reward function for DeonticBench.

verl loads this *file* (``custom_reward_function.path``) under a module name of its own,
so it imports the package absolutely.  Per sample (``reward_model.reward_manager=naive``)::

    custom_reward_function.path=$(python -m deonticbench.rewards.verl)
    custom_reward_function.name=compute_score

or a whole batch at once (``reward_model.reward_manager=batch``, faster: the batch is
spread over every sandbox worker)::

    custom_reward_function.name=compute_score_batch

The rows come from ``deonticbench export --format verl``: ``data_source`` is
``deonticbench/<domain>``, ``reward_model.ground_truth`` the label, ``extra_info`` holds
the case id and the reference program's predicate signatures.  ``reward_kwargs`` in the
config choose the reward (``mode``: ``paper``, ``eval`` or ``grounded``; ``timeout_s``).

Each call returns a dict with ``score`` (the reward) and the parts verl logs per sample:
``correct``, ``executable``, ``jaccard``, ``answer_read``, ``within_tolerance``, ``grounded``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deonticbench.rewards.core import (
    RewardInputError,
    RewardResult,
    RewardTarget,
    score_batch,
    score_completion,
)


def _target(
    data_source: str, ground_truth: Any, extra_info: Mapping[str, Any] | None, mode: str = "eval"
) -> RewardTarget:
    info = extra_info or {}
    needs = {"paper": "reference_signatures", "grounded": "case_constants"}.get(mode)
    if needs is not None and info.get(needs) is None:
        # Without them the partial credit (paper) or the derivation (grounded) would be
        # 0 for every row, silently: a dataset not written by our export.
        raise RewardInputError(
            f"verl passed no {needs} in extra_info for a {data_source} row: the {mode} "
            "reward needs the extra_info that 'deonticbench export --format verl' writes "
            "(or reward_kwargs mode=eval, which needs only the ground truth)."
        )
    domain = info.get("domain") or data_source
    return RewardTarget.from_fields(
        domain,
        ground_truth,
        info.get("case_id", ""),
        info.get("reference_signatures"),
        info.get("case_constants"),
    )


def _as_verl(result: RewardResult) -> dict[str, float]:
    return {"score": result.reward, **result.parts()}


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    mode: str = "paper",
    timeout_s: float | None = None,
    **_: Any,
) -> dict[str, float]:
    """verl's per-sample form: the reward and its parts for one response."""
    result = score_completion(
        solution_str,
        _target(data_source, ground_truth, extra_info, mode),
        mode=mode,  # type: ignore[arg-type]
        timeout_s=timeout_s,
    )
    return _as_verl(result)


def compute_score_batch(
    data_sources: Sequence[str],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Mapping[str, Any] | None] | None = None,
    *,
    mode: str = "paper",
    timeout_s: float | None = None,
    **_: Any,
) -> list[dict[str, float]]:
    """verl's batch form (``BatchRewardManager``): one dict per response, in order."""
    infos = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    targets = [
        _target(source, truth, info, mode)
        for source, truth, info in zip(data_sources, ground_truths, infos, strict=True)
    ]
    results = score_batch(
        list(solution_strs),
        targets,
        mode=mode,  # type: ignore[arg-type]
        timeout_s=timeout_s,
    )
    return [_as_verl(r) for r in results]


if __name__ == "__main__":  # ``python -m deonticbench.rewards.verl`` prints the path verl wants
    print(__file__)
