"""TRL reward functions for DeonticBench (``GRPOTrainer(reward_funcs=[...])``).

TRL calls a reward function with keyword arguments: ``prompts``, ``completions``,
``completion_ids``, ``trainer_state`` and every other column of the dataset, one list
entry per completion; it wants ``list[float]`` back.  The columns this reward reads are
those of ``deonticbench export --format trl-grpo``: ``domain``, ``gold``, ``case_id``
and ``reference_signatures`` (and ``case_constants`` for the grounded mode).  Completions
may be plain strings or, for a conversational dataset, lists of messages (the last
assistant message is scored).

    from deonticbench.rewards.trl import deonticbench_reward
    trainer = GRPOTrainer(model=..., reward_funcs=[deonticbench_reward], train_dataset=ds)

``deonticbench_reward_async`` is the same reward as a coroutine (TRL runs async reward
functions concurrently with each other); ``make_reward(mode="eval", timeout_s=5)`` gives
either with other settings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from deonticbench.rewards.core import RewardInputError, RewardMode, RewardTarget, score_batch


def completion_text(completion: Any) -> str | None:
    """The text of one TRL completion: a string, or the last assistant message's content."""
    if completion is None or isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        return str(completion.get("content") or "")
    messages = [m for m in completion if isinstance(m, dict)]
    assistant = [m for m in messages if m.get("role", "assistant") == "assistant"]
    chosen = assistant or messages
    return str(chosen[-1].get("content") or "") if chosen else None


def _rewards(
    completions: Sequence[Any],
    domain: Sequence[str],
    gold: Sequence[Any],
    case_id: Sequence[Any] | None,
    reference_signatures: Sequence[Any] | None,
    mode: RewardMode,
    timeout_s: float | None,
    case_constants: Sequence[Any] | None = None,
) -> list[float]:
    count = len(completions)
    for name, column in (("domain", domain), ("gold", gold)):
        if len(column) != count:
            # zip(strict=True) would say only "argument 2 is shorter than argument 1".
            raise RewardInputError(
                f"the TRL reward got {count} completions but {len(column)} values of the "
                f"'{name}' column: the dataset needs the columns domain and gold, as "
                "'deonticbench export --format trl-grpo' writes them."
            )
    for name, optional in (
        ("case_id", case_id),
        ("reference_signatures", reference_signatures),
        ("case_constants", case_constants),
    ):
        if optional is not None and len(optional) != count:
            raise RewardInputError(
                f"the TRL reward got {count} completions but {len(optional)} values of "
                f"the '{name}' column."
            )
    ids = list(case_id) if case_id is not None else [""] * count
    signatures = list(reference_signatures) if reference_signatures is not None else [None] * count
    constants = list(case_constants) if case_constants is not None else [None] * count
    targets = [
        RewardTarget.from_fields(d, g, i, s, c)
        for d, g, i, s, c in zip(domain, gold, ids, signatures, constants, strict=True)
    ]
    texts = [completion_text(c) for c in completions]
    return [r.reward for r in score_batch(texts, targets, mode=mode, timeout_s=timeout_s)]


def make_reward(
    mode: RewardMode = "paper", timeout_s: float | None = None
) -> Callable[..., list[float]]:
    """A synchronous TRL reward function with these settings."""

    def deonticbench_reward(
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        domain: Sequence[str] = (),
        gold: Sequence[Any] = (),
        case_id: Sequence[Any] | None = None,
        reference_signatures: Sequence[Any] | None = None,
        case_constants: Sequence[Any] | None = None,
        **_: Any,
    ) -> list[float]:
        return _rewards(
            completions,
            domain,
            gold,
            case_id,
            reference_signatures,
            mode,
            timeout_s,
            case_constants,
        )

    deonticbench_reward.__name__ = f"deonticbench_{mode}"
    return deonticbench_reward


def make_async_reward(
    mode: RewardMode = "paper", timeout_s: float | None = None
) -> Callable[..., Awaitable[list[float]]]:
    """The same reward as a coroutine function (the sandbox work runs in a thread)."""
    sync = make_reward(mode, timeout_s)

    async def deonticbench_reward_async(**kwargs: Any) -> list[float]:
        return await asyncio.to_thread(sync, **kwargs)

    deonticbench_reward_async.__name__ = f"deonticbench_{mode}_async"
    return deonticbench_reward_async


deonticbench_reward = make_reward("paper")
deonticbench_reward_async = make_async_reward("paper")
