"""Prompt token counts for --dry-run: each OpenAI model in its own encoding (shipped,
never downloaded), cl100k_base where no encoding of its own is known, and an announced
estimate when no encoding can be loaded."""

from __future__ import annotations

import pytest

from deonticbench.models import count_prompt_tokens, load_model, token_count_method
from deonticbench.models import tokens as tokens_module
from deonticbench.vocabulary.chat import Message

MESSAGES = [
    Message("system", "You are a helpful assistant trained to conduct deontic reasoning."),
    Message("user", "hello world"),
]


def _expected(encoding: object) -> int:
    encode = encoding.encode  # type: ignore[attr-defined]
    system = len(encode(MESSAGES[0].content))
    # 3 per message + role + content, and 3 to prime the reply.
    return 3 + (3 + 1 + system) + (3 + 1 + len(encode("hello world")))


@pytest.mark.parametrize(
    ("spec", "encoding", "ids"),
    [
        # Known ids, which differ between the two encodings.
        ("openai:gpt-4.1", "o200k_base", [24912, 2375]),
        ("openai:o3-2025-04-16", "o200k_base", [24912, 2375]),
        ("openai:gpt-4-turbo", "cl100k_base", [15339, 1917]),
    ],
)
def test_an_openai_model_is_counted_in_its_own_encoding_offline(
    spec: str, encoding: str, ids: list[int]
) -> None:
    loaded = tokens_module.shipped_encoding(encoding)
    if loaded is None:
        pytest.skip("bpe-openai is not installed (it comes with the 'openai' extra)")
    assert loaded.encode("hello world") == ids
    model = load_model(spec)
    assert count_prompt_tokens(model, MESSAGES) == _expected(loaded)
    assert token_count_method(model) == f"{encoding} (the model's own encoding)"


def test_a_model_without_a_known_encoding_is_counted_in_the_papers_unit() -> None:
    cl100k = tokens_module.offline_encoding()
    if cl100k is None:
        pytest.skip("no cl100k_base ranks are installed (the 'openai' extra)")
    model = load_model("anthropic:claude-sonnet-4-5")
    assert count_prompt_tokens(model, MESSAGES) == _expected(cl100k)
    assert "count_tokens" in token_count_method(model)


def test_without_an_encoding_the_count_is_an_announced_estimate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tokens_module, "shipped_encoding", lambda name: None)
    model = load_model("anthropic:claude-sonnet-4-5")
    chars = sum(len(m.content) for m in MESSAGES)
    count = count_prompt_tokens(model, MESSAGES)
    assert chars // 4 <= count <= chars // 4 + 12
    assert token_count_method(model).startswith("an estimate of 4 characters per token")
