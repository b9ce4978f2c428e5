"""Model specs, the eval/models.yaml registry and parameter overrides."""

from __future__ import annotations

from typing import Any

import pytest

from deonticbench.errors import ConfigError
from deonticbench.models import load_model
from deonticbench.models.base import GenerationParams, cacheable
from deonticbench.models.registry import load_registry, match_entry, resolve_settings

REGISTRY: dict[str, Any] = {
    "defaults": {"temperature": 1.0, "max_tokens": 1000, "max_tries": 6},
    "backends": {"local": {"max_tokens": 50}},
    "models": {
        "o3*": {"reasoning": True, "reasoning_effort": "medium", "max_tokens": 4000},
        "gpt-4.1": {"temperature": 0.5},
        "gpt-4*": {"temperature": 0.9},
        "openai-compatible:*qwen*": {"top_p": 0.8, "extra": {"top_k": 20}},
    },
}


def test_layers_merge_in_order() -> None:
    s = resolve_settings("openai", "gpt-4.1", {"seed": "3"}, registry=REGISTRY)
    assert s.entry == "gpt-4.1"  # exact name beats the earlier-listed glob gpt-4*
    assert s.params == GenerationParams(temperature=0.5, max_tokens=1000, seed=3)
    assert s.options == {"max_tries": 6}
    local = resolve_settings("local", "gemma3-270m", None, registry=REGISTRY)
    assert local.params.max_tokens == 50 and local.entry is None


def test_provider_qualified_glob_and_extra() -> None:
    s = resolve_settings("openai-compatible", "Qwen/qwen3-235b", None, registry=REGISTRY)
    assert s.params.top_p == 0.8 and s.params.extra == {"top_k": 20}
    assert match_entry(REGISTRY["models"], "openai", "qwen3") is None


def test_extra_fields_from_the_command_line() -> None:
    overrides = {"extra.top_k": "40", "extra.provider": '{"order": ["a"]}', "extra.x": "raw"}
    s = resolve_settings("openai-compatible", "Qwen/qwen3", overrides, registry=REGISTRY)
    assert s.params.extra == {"top_k": 40, "provider": {"order": ["a"]}, "x": "raw"}


def test_reasoning_entry_drops_inherited_temperature() -> None:
    s = resolve_settings("openai", "o3-2025-04-16", None, registry=REGISTRY)
    assert s.reasoning
    assert s.params.temperature is None and s.params.reasoning_effort == "medium"
    assert s.params.max_tokens == 4000
    with pytest.raises(ConfigError, match="o3 is a reasoning model"):
        resolve_settings("openai", "o3", {"top_p": 0.9}, registry=REGISTRY)
    # 'none' removes a value, so it is not a temperature.
    assert resolve_settings("openai", "o3", {"temperature": "none"}, registry=REGISTRY).reasoning


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"temprature": 1}, "unknown model parameter 'temprature'"),
        ({"max_tokens": "lots"}, "max_tokens should be a int"),
        ({"max_tokens": 0}, "max_tokens should be a positive integer"),
        ({"reasoning_effort": "extreme"}, "reasoning_effort 'extreme'"),
        ({"stop": 5}, "stop should be a string or a list"),
        ({"reasoning": "maybe"}, "reasoning should be true or false"),
    ],
)
def test_bad_overrides_are_one_sentence(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_settings("openai", "gpt-4.1", overrides, registry=REGISTRY)


def test_to_dict_is_complete_and_stable() -> None:
    params = GenerationParams(temperature=0.2, stop=("a", "b"), extra={"z": 1, "a": 2})
    assert params.to_dict() == {
        "temperature": 0.2,
        "top_p": None,
        "max_tokens": None,
        "reasoning_effort": None,
        "seed": None,
        "stop": ["a", "b"],
        "extra": {"a": 2, "z": 1},
    }
    assert list(params.to_dict()["extra"]) == ["a", "z"]


def test_the_shipped_registry_is_valid_for_the_papers_models() -> None:
    registry = load_registry()
    assert registry["defaults"]["max_tries"] == 6
    for provider, name in [
        ("openai", "gpt-4.1"),
        ("openai", "gpt-5.1"),
        ("openai", "gpt-5.2"),
        ("openai", "o3"),
        ("anthropic", "claude-sonnet-4-5"),
        ("openai-compatible", "google/gemini-2.5-flash"),
        ("openai-compatible", "moonshotai/kimi-k2-0905"),
        ("openai-compatible", "qwen/qwen3-235b-a22b-2507"),
        ("local", "gemma3-270m"),
    ]:
        settings = resolve_settings(provider, name, None, registry=registry)
        assert settings.entry is not None, name
        assert settings.params.max_tokens
    assert resolve_settings("openai", "gpt-5.1", None).reasoning
    assert not resolve_settings("openai", "gpt-4.1", None).reasoning
    assert resolve_settings("local", "gemma3-270m", None).params.max_tokens == 512


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4", "unknown model spec 'gpt-4'"),
        ("bedrock:claude", "unknown model spec"),
        ("openai:", "lacks a model"),
        ("openai-compatible:llama", "names no server"),
        ("reference:x", "takes no model name"),
        ("local:gpt2", "unknown local model 'gpt2'"),
        ("replay:/nonexistent/file.jsonl", "does not exist; name a replay file"),
    ],
)
def test_bad_specs(spec: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_COMPATIBLE_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match=message) as info:
        load_model(spec)
    text = str(info.value)
    assert text.endswith(".") and "\n" not in text


def test_compatible_spec_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    model = load_model("openai-compatible:meta/llama-3@8b@https://example.test/v1")
    assert model.model_name == "meta/llama-3@8b"
    assert model.identity()["base_url"] == "https://example.test/v1"
    monkeypatch.setenv("OPENAI_COMPATIBLE_BASE_URL", "http://127.0.0.1:8000/v1")
    assert load_model("openai-compatible:llama").identity()["base_url"] == (
        "http://127.0.0.1:8000/v1"
    )


def test_vllm_spec_builds_without_importing_vllm() -> None:
    model = load_model("vllm:Qwen/Qwen2.5-0.5B-Instruct", overrides={"n_ctx": 4096})
    assert model.provider == "vllm" and cacheable(model)
    assert model.identity()["model"] == "Qwen/Qwen2.5-0.5B-Instruct"


# --- prices: the published figures are the test vector ---------------------------------


def test_the_registry_holds_the_published_prices() -> None:
    from deonticbench.models.registry import model_prices

    sonnet = model_prices("anthropic:claude-sonnet-4-5")
    assert sonnet is not None
    assert (sonnet.input, sonnet.cache_write_5m, sonnet.cache_write_1h) == (3.00, 3.75, 6.00)
    assert (sonnet.cache_read, sonnet.output, sonnet.batch_discount) == (0.30, 15.00, 0.5)
    gpt = model_prices("openai:gpt-4.1")
    assert gpt is not None
    assert (gpt.input, gpt.cache_read, gpt.output, gpt.batch_discount) == (2.00, 0.50, 8.00, 0.5)
    assert model_prices("openai:gpt-5.2") is None  # no published figure in the registry: none
    assert model_prices("reference") is None


def test_price_tokens_bills_each_kind_of_token_at_its_own_price() -> None:
    from deonticbench.models.registry import model_prices, price_tokens

    sonnet = model_prices("anthropic:claude-sonnet-4-5")
    assert sonnet is not None
    cost = price_tokens(
        sonnet,
        uncached=1_000_000,
        cache_write_5m=1_000_000,
        cache_write_1h=1_000_000,
        cache_read=1_000_000,
        output=1_000_000,
    )
    assert cost is not None
    assert (cost.input, cost.cache_writes, cost.cache_reads, cost.output) == pytest.approx(
        (3.00, 3.75 + 6.00, 0.30, 15.00)
    )
    assert cost.usd == pytest.approx(28.05)
    batch = price_tokens(sonnet, uncached=1_000_000, cache_read=1_000_000, output=1_000_000,
                         batch=True)  # fmt: skip
    assert batch is not None
    assert batch.batch_discount == pytest.approx((3.00 + 0.30 + 15.00) / 2)
    assert batch.usd == pytest.approx((3.00 + 0.30 + 15.00) / 2)
    gpt = model_prices("openai:gpt-4.1")
    assert gpt is not None
    cached = price_tokens(gpt, uncached=200_000, cache_read=800_000)
    assert cached is not None and cached.usd == pytest.approx(0.2 * 2.00 + 0.8 * 0.50)


def test_a_figure_the_registry_lacks_gives_no_dollar_amount() -> None:
    from deonticbench.models.registry import Prices, price_tokens

    plain = Prices(input=1.0, output=2.0)
    assert price_tokens(plain, uncached=10, output=10) is not None
    assert price_tokens(plain, uncached=10, cache_read=5) is None
    assert price_tokens(plain, uncached=10, batch=True) is None


def test_prompt_cache_and_its_ttl_are_options_never_in_the_key() -> None:
    on = resolve_settings("anthropic", "claude-sonnet-4-5", None)
    off = resolve_settings("anthropic", "claude-sonnet-4-5", {"prompt_cache": "false"})
    assert on.prompt_cache and not off.prompt_cache
    assert on.params == off.params
    assert on.option("cache_min_tokens", 0) == 1024
    assert (
        resolve_settings("anthropic", "claude-haiku-4-5", None).option("cache_min_tokens", 0)
        == 4096
    )
    with pytest.raises(ConfigError, match="cache_ttl should be one of 5m, 1h"):
        resolve_settings("anthropic", "claude-sonnet-4-5", {"cache_ttl": "2h"})
