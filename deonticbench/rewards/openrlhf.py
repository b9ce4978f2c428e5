"""OpenRLHF's custom reward function for DeonticBench (``--remote_rm_url`` a .py file).

OpenRLHF loads this *file* and calls ``reward_func(queries, prompts, labels)``:
``queries`` are prompt and response together (as the policy's tokenizer decoded them),
``prompts`` the prompts alone, ``labels`` the dataset's ``--label_key`` column, here the
JSON ``label`` column of ``deonticbench export --format trl-grpo``.  It returns
``rewards`` (for the advantage), ``scores`` (0..1, for dynamic filtering) and
``extra_logs``; tensors when torch is importable (as in any OpenRLHF process), else lists.

    --remote_rm_url $(python -m deonticbench.rewards.openrlhf)
    --label_key label --input_key prompt --apply_chat_template

The reward server (``deonticbench serve-reward``) answers the same over HTTP.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from deonticbench.rewards.core import (
    RewardInputError,
    RewardMode,
    RewardResult,
    RewardTarget,
    score_batch,
)

MODE_ENV = "DEONTICBENCH_REWARD_MODE"
TIMEOUT_ENV = "DEONTICBENCH_REWARD_TIMEOUT"


def response_of(query: str, prompt: str | None) -> str | None:
    """The response part of a query: what follows the prompt.

    The prompt must not be scored with the response: a few-shot prompt holds exemplar
    programs.  When the prompt is not found in the query, there is no response to score.
    """
    if not prompt:
        return query
    if query.startswith(prompt):
        return query[len(prompt) :]
    at = query.rfind(prompt)
    if at >= 0:
        return query[at + len(prompt) :]
    return None


def score_queries(
    queries: Sequence[str],
    prompts: Sequence[str] | None,
    labels: Sequence[Any],
    *,
    mode: RewardMode = "paper",
    timeout_s: float | None = None,
) -> list[RewardResult]:
    prompt_list = list(prompts) if prompts is not None else [None] * len(queries)
    texts = [response_of(q, p) for q, p in zip(queries, prompt_list, strict=True)]
    targets = [RewardTarget.from_label(label) for label in labels]
    return score_batch(texts, targets, mode=mode, timeout_s=timeout_s)


def as_openrlhf(results: Sequence[RewardResult]) -> dict[str, Any]:
    """OpenRLHF's reply: ``rewards``, ``scores`` and per-sample ``extra_logs`` (lists)."""
    rewards = [r.reward for r in results]
    parts = [r.parts() for r in results]
    keys = parts[0].keys() if parts else ()
    return {
        "rewards": rewards,
        "scores": rewards,
        "extra_logs": {key: [p[key] for p in parts] for key in keys},
    }


def timeout_from_env() -> float | None:
    """``DEONTICBENCH_REWARD_TIMEOUT`` in seconds (None when unset)."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise RewardInputError(
            f"{TIMEOUT_ENV} should be a positive number of seconds, not {text!r}."
        )
    return value


def reward_func(
    queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **_: Any
) -> dict[str, Any]:
    """OpenRLHF's ``reward_func(queries, prompts, labels)``."""
    mode = os.environ.get(MODE_ENV, "paper")
    results = score_queries(
        queries,
        prompts,
        labels,
        mode=mode,  # type: ignore[arg-type]
        timeout_s=timeout_from_env(),
    )
    reply = as_openrlhf(results)
    try:
        # optional: torch is OpenRLHF's, only inside it
        import torch
    except ImportError:
        return reply
    return {
        "rewards": torch.tensor(reply["rewards"], dtype=torch.float),
        "scores": torch.tensor(reply["scores"], dtype=torch.float),
        "extra_logs": {
            key: torch.tensor(values, dtype=torch.float)
            for key, values in reply["extra_logs"].items()
        },
    }


if __name__ == "__main__":  # ``python -m deonticbench.rewards.openrlhf`` prints the path
    print(__file__)
