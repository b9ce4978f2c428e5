"""A model's end of life comes from the harness's own registry and is said in the tense of
the day: "retires on" before the date, "was retired on" from it.

Every model here is declared by the test (its own registry, or its own row in the
Anthropic SDK's table), so no assertion depends on a provider's schedule or on what an
SDK release happens to list.  The backends are the real ones, built as ``load_model``
builds them."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import pytest

from deonticbench.errors import ConfigError
from deonticbench.models import model_notes
from deonticbench.models.anthropic_backend import AnthropicModel
from deonticbench.models.base import Model, end_of_life
from deonticbench.models.loader import BACKENDS
from deonticbench.models.openai_backend import OpenAIModel
from deonticbench.models.registry import load_registry, resolve_settings

DAY = datetime.date(2031, 5, 20)
DECLARED: dict[str, Any] = {
    "retirements": {
        "anthropic:claude-test-declared": DAY,
        "openai:gpt-test-declared": DAY.isoformat(),  # a string in ISO form reads the same
    }
}


def anthropic(name: str, registry: dict[str, Any] = DECLARED) -> Model:
    settings = resolve_settings("anthropic", name, registry=registry)
    return AnthropicModel(f"anthropic:{name}", name, settings)


def openai(name: str, registry: dict[str, Any] = DECLARED) -> Model:
    settings = resolve_settings("openai", name, registry=registry)
    return OpenAIModel(f"openai:{name}", name, settings, compatible=False)


@pytest.fixture
def sdk_table(monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """Add a row the test declares to the installed Anthropic SDK's own deprecation table
    (taken out again after the test)."""
    table = pytest.importorskip("anthropic._data").DEPRECATED_MODELS
    return lambda name, date: monkeypatch.setitem(table, name, date)


@pytest.mark.parametrize("build", [anthropic, openai], ids=["anthropic", "openai"])
def test_a_model_is_said_to_retire_before_its_day_and_to_be_retired_from_it(build: Any) -> None:
    name = "claude-test-declared" if build is anthropic else "gpt-test-declared"
    model = build(name)
    before = model_notes(model, today=DAY - datetime.timedelta(days=1))
    assert before == [
        f"{name} retires on 2031-05-20 (eval/models.yaml): from that day its requests fail; "
        "choose a newer model."
    ]
    for today in (DAY, DAY + datetime.timedelta(days=400)):
        (note,) = model_notes(model, today=today)
        assert note.startswith(f"{name} was retired on 2031-05-20 (eval/models.yaml): ")
        assert "its requests fail" in note


def test_without_a_day_given_the_tense_is_todays() -> None:
    past = {"retirements": {"openai:gpt-test-past": datetime.date(2001, 1, 1)}}
    future = {"retirements": {"openai:gpt-test-future": datetime.date(2999, 1, 1)}}
    assert "was retired on 2001-01-01" in model_notes(openai("gpt-test-past", past))[0]
    assert "retires on 2999-01-01" in model_notes(openai("gpt-test-future", future))[0]


def test_a_model_the_registry_does_not_name_exactly_gets_no_date() -> None:
    # A snapshot, a sibling a glob would match, or another backend reaching the same
    # name: none is given the date of the name the registry lists.
    for name in ("gpt-test-declared-2031-01-01", "gpt-test-declared-mini", "gpt-other"):
        assert end_of_life(openai(name)) is None
        assert model_notes(openai(name)) == []
    compatible = resolve_settings("openai-compatible", "gpt-test-declared", registry=DECLARED)
    assert compatible.retirement is None


def test_the_registry_date_comes_before_the_sdk_table(
    sdk_table: Callable[[str, str], None],
) -> None:
    sdk_table("claude-test-declared", "March 3rd, 2020")
    retirement = end_of_life(anthropic("claude-test-declared"))
    assert retirement is not None and (retirement.day, retirement.source) == (
        DAY,
        "eval/models.yaml",
    )


def test_the_sdk_table_speaks_for_a_model_the_registry_does_not_list(
    sdk_table: Callable[[str, str], None],
) -> None:
    sdk_table("claude-test-sdk-only", "March 3rd, 2020")
    sdk_table("claude-test-sdk-garbled", "sometime in spring")
    (note,) = model_notes(anthropic("claude-test-sdk-only"), today=datetime.date(2026, 1, 1))
    assert note.startswith(
        "claude-test-sdk-only was retired on 2020-03-03 (the anthropic SDK's deprecation table)"
    )
    # A date the table spells otherwise is not guessed at.
    assert end_of_life(anthropic("claude-test-sdk-garbled")) is None


def test_a_retirement_that_is_not_a_date_is_refused_in_one_sentence() -> None:
    bad = {"retirements": {"openai:gpt-test-declared": "soon"}}
    with pytest.raises(ConfigError, match=r"retirements\.openai:gpt-test-declared .* a date"):
        resolve_settings("openai", "gpt-test-declared", registry=bad)
    with pytest.raises(ConfigError, match="should map provider:model to a date"):
        resolve_settings("openai", "gpt-4.1", registry={"retirements": ["gpt-4.1"]})


def test_the_shipped_retirements_name_real_backends_and_read_as_dates() -> None:
    table = load_registry()["retirements"]
    assert table, "eval/models.yaml lists no retirements"
    for key in table:
        provider, sep, name = str(key).partition(":")
        assert sep and name and provider in BACKENDS, key
        assert "*" not in name and "?" not in name and "[" not in name, key  # exact names
        assert resolve_settings(provider, name).retirement is not None, key
