"""The Anthropic backend: the real ``anthropic`` client against the loopback fake."""

from __future__ import annotations

import dataclasses
import email.utils
import time
from collections.abc import Iterator

import pytest
from fakeproviders import FakeProvider

from deonticbench.data.cases import Case
from deonticbench.errors import ConfigError
from deonticbench.models import Request, load_model
from deonticbench.models.base import limit_in_flight
from deonticbench.vocabulary.chat import Message

# The SDK warns that the paper's Claude model is nearing end of life; not our concern here.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
FAST = {"backoff_base_s": 0.01, "backoff_cap_s": 0.05, "timeout_s": 5}
KEY = "sk-ant-test-not-a-real-key"
CASE = Case(
    domain="uscis",
    id="aao_1",
    question="Should the appeal be sustained?",
    gold="Accepted",
    reference_prolog="main :- format('Decision: ~w~n', [accepted]).",
    statutes="8 CFR ...",
)
REQUEST = Request(
    messages=(
        Message("system", "You are a helpful assistant trained to conduct deontic reasoning."),
        Message("user", "Decide the appeal."),
    ),
    n=2,
    domain=CASE.domain,
    case_id=CASE.id,
    mode="zero-shot",
    sample_start=0,
    attempt=0,
)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with FakeProvider(api_key=KEY) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        yield server


async def test_system_field_and_n_emulated_by_separate_calls(fake: FakeProvider) -> None:
    model = load_model("anthropic:claude-sonnet-4-5", overrides=FAST)
    completions = await model.generate(REQUEST)
    await model.aclose()
    assert [c.text for c in completions] == ["reply 0 to: Decide the appeal."] * 2
    assert all(c.finish_reason == "end_turn" for c in completions)
    assert [c.tokens_in for c in completions] == [13, 13]  # each call billed its prompt
    assert [c.tokens_out for c in completions] == [6, 6]
    sent = fake.generation_requests()
    assert len(sent) == 2
    for call in sent:
        assert call.path == "/v1/messages"
        assert call.body["system"].startswith("You are a helpful assistant")
        assert call.body["messages"] == [{"role": "user", "content": "Decide the appeal."}]
        assert call.body["max_tokens"] == 16384 and call.body["temperature"] == 1.0
        assert "n" not in call.body


async def test_overloaded_529_is_retried(fake: FakeProvider) -> None:
    fake.fail_next(status=529, message="Overloaded")
    model = load_model("anthropic:claude-sonnet-4-5", overrides=FAST)
    completions = await model.generate(REQUEST)
    await model.aclose()
    assert all(c.error is None for c in completions)
    assert len(fake.generation_requests()) == 3


async def test_retry_after_as_an_http_date_is_honoured(fake: FakeProvider) -> None:
    fake.fail_next(status=429, retry_after=email.utils.formatdate(time.time() + 2, usegmt=True))
    model = load_model("anthropic:claude-sonnet-4-5", overrides=FAST)
    (completion,) = await model.generate(
        Request(REQUEST.messages, 1, CASE.domain, CASE.id, mode="direct", sample_start=0)
    )
    await model.aclose()
    assert completion.error is None
    first, second = fake.generation_requests()
    # The date has one-second resolution: at least one second remains of the two.
    assert second.received_at - first.received_at >= 0.9


async def test_final_failure_and_no_retry_on_401(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.fail_next(status=503, times=20)
    model = load_model("anthropic:claude-sonnet-4-5", overrides={**FAST, "max_tries": 2})
    completions = await model.generate(REQUEST)
    await model.aclose()
    assert [c.error for c in completions] == ["HTTP 503 after 2 tries: injected 503"] * 2
    assert len(fake.generation_requests()) == 4
    fake.clear_faults()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
    model = load_model("anthropic:claude-sonnet-4-5", overrides=FAST)
    completions = await model.generate(REQUEST)
    await model.aclose()
    assert {c.error for c in completions} == {"HTTP 401: invalid x-api-key / bearer token"}
    assert len(fake.generation_requests()) == 6


async def test_stop_sequences_and_extra_fields(fake: FakeProvider) -> None:
    overrides = {**FAST, "stop": ["</answer>"], "extra": {"top_k": 5}}
    model = load_model("anthropic:claude-sonnet-4-5", overrides=overrides)
    await model.generate(REQUEST)
    await model.aclose()
    body = fake.generation_requests()[0].body
    assert body["stop_sequences"] == ["</answer>"] and body["top_k"] == 5


async def test_check_missing_key_and_live_server(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = load_model("anthropic:claude-sonnet-4-5")
    await model.check()
    await model.aclose()
    assert [r.api for r in fake.log] == ["models"]
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY is not set"):
        await load_model("anthropic:claude-sonnet-4-5").check()


async def test_check_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeProvider() as gone:
        url = gone.url
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    model = load_model("anthropic:claude-sonnet-4-5", overrides={"check_timeout_s": 2})
    with pytest.raises(ConfigError, match="cannot reach"):
        await model.check()
    await model.aclose()


async def test_reasoning_effort_maps_to_output_config(fake: FakeProvider) -> None:
    overrides = {**FAST, "reasoning": True, "reasoning_effort": "high"}
    model = load_model("anthropic:claude-sonnet-4-5", overrides=overrides)
    await model.generate(REQUEST)
    await model.aclose()
    body = fake.generation_requests()[0].body
    assert body["output_config"] == {"effort": "high"}
    assert "temperature" not in body


def test_identity_has_no_key(fake: FakeProvider) -> None:
    ident = load_model("anthropic:claude-sonnet-4-5").identity()
    assert ident["backend"] == "anthropic" and ident["base_url"] == fake.url
    assert KEY not in repr(ident)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("content", "plain text"),
        ("content", [{"type": "text", "text": 7}]),
        ("usage", {"input_tokens": "lots", "output_tokens": 1}),
    ],
    ids=["content-string", "text-number", "usage-word"],
)
async def test_a_malformed_reply_is_retried_then_an_error(
    fake: FakeProvider, name: str, value: object
) -> None:
    from fakeproviders import Fault

    def reshape(reply: dict[str, object]) -> dict[str, object]:
        reply[name] = value
        return reply

    fake.fail_next(Fault(reshape=reshape), times=2)
    model = load_model("anthropic:claude-sonnet-4-5", overrides={**FAST, "max_tries": 3})
    one = dataclasses.replace(REQUEST, n=1, mode="direct", sample_start=0)
    (completion,) = await model.generate(one)
    assert completion.error is None and completion.text  # the third try was well formed
    fake.fail_next(Fault(reshape=reshape), times=3)
    (completion,) = await model.generate(one)
    await model.aclose()
    assert completion.text is None
    assert (completion.error or "").startswith("malformed response after 3 tries")


async def test_calls_in_flight_stay_within_the_limit(fake: FakeProvider) -> None:
    import asyncio

    fake.latency_s = 0.15
    model = load_model("anthropic:claude-sonnet-4-5", overrides=FAST)
    limit_in_flight(model, 2)
    four = dataclasses.replace(REQUEST, n=4, mode="direct", sample_start=0)
    batches = await asyncio.gather(*(model.generate(four) for _ in range(3)))
    await model.aclose()
    assert all(c.error is None for b in batches for c in b)
    assert fake.max_in_flight == 2
