"""The OpenAI and OpenAI-compatible backends: the real ``openai`` client against a real
HTTP server on loopback (tests/fakeproviders.py), with injected faults."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fakeproviders import FakeProvider, FakeRequest

from deonticbench.data.cases import Case
from deonticbench.errors import ConfigError
from deonticbench.models import Completion, Model, Request, load_model
from deonticbench.models.base import cacheable, limit_in_flight
from deonticbench.vocabulary.chat import Message

FAST = {"backoff_base_s": 0.01, "backoff_cap_s": 0.05, "timeout_s": 5}
KEY = "sk-test-not-a-real-key"
CASE = Case(
    domain="sara_numeric",
    id="tax_case_1",
    question="How much tax?",
    gold=1166,
    reference_prolog="main :- format('Tax result: ~w~n', [1166]).",
    statutes="§1 ...",
)
MESSAGES = (
    Message("system", "You are a helpful assistant trained to conduct deontic reasoning."),
    Message("user", "Compute the tax for Alice."),
)


def request(n: int = 1, *, sample_start: int = 0) -> Request:
    return Request(
        messages=MESSAGES,
        n=n,
        domain=CASE.domain,
        case_id=CASE.id,
        mode="direct",
        sample_start=sample_start,
        attempt=0,
    )


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with FakeProvider(api_key=KEY) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
        yield server


async def run(model: Model, req: Request) -> list[Completion]:
    try:
        return await model.generate(req)
    finally:
        await model.aclose()


# --- success paths ---------------------------------------------------------------------


async def test_one_completion_with_usage_and_wire_format(fake: FakeProvider) -> None:
    model = load_model("openai:gpt-4.1", overrides=FAST)
    (completion,) = await run(model, request())
    assert completion.error is None
    assert completion.text == "reply 0 to: Compute the tax for Alice."
    assert completion.finish_reason == "stop"
    assert completion.tokens_in == 15  # the fake counts words of both messages
    assert completion.tokens_out == 8
    assert completion.latency_s > 0
    (sent,) = fake.generation_requests()
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.body["model"] == "gpt-4.1"
    assert [m["role"] for m in sent.body["messages"]] == ["system", "user"]
    assert "n" not in sent.body


async def test_n_greater_than_one_is_one_call(fake: FakeProvider) -> None:
    model = load_model("openai:gpt-4.1", overrides=FAST)
    completions = await run(model, request(3))
    assert [c.text for c in completions] == [
        f"reply {i} to: Compute the tax for Alice." for i in range(3)
    ]
    (sent,) = fake.generation_requests()
    assert sent.body["n"] == 3
    # The prompt was billed once: it is carried by the first completion only.
    assert [c.tokens_in for c in completions] == [15, 0, 0]
    assert sum(c.tokens_out for c in completions) == 24


async def test_compatible_server_ignoring_n_is_emulated(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    fake.max_choices = 1  # like llama.cpp's server
    model = load_model(f"openai-compatible:llama@{fake.openai_url}", overrides=FAST)
    first = await model.generate(request(3))
    assert len(first) == 3 and all(c.error is None for c in first)
    sent = fake.generation_requests()
    assert len(sent) == 3
    assert sent[0].body["n"] == 3 and all("n" not in r.body for r in sent[1:])
    # Having learnt that n is ignored, the next request goes straight to single calls.
    second = await run(model, request(2))
    assert len(second) == 2 and all(c.text for c in second)
    later = fake.generation_requests()[3:]
    assert len(later) == 2 and all("n" not in r.body for r in later)


async def test_reasoning_model_gets_effort_and_no_temperature(fake: FakeProvider) -> None:
    model = load_model("openai:o3", overrides=FAST)
    await run(model, request())
    body = fake.generation_requests()[0].body
    assert body["reasoning_effort"] == "medium"
    assert body["max_completion_tokens"] == 32768
    assert "temperature" not in body and "top_p" not in body and "max_tokens" not in body
    assert model.identity()["temperature"] is None


async def test_plain_model_gets_temperature(fake: FakeProvider) -> None:
    model = load_model("openai:gpt-4.1", overrides={**FAST, "temperature": "0.3", "seed": "7"})
    await run(model, request())
    body = fake.generation_requests()[0].body
    assert body["temperature"] == 0.3 and body["seed"] == 7
    assert body["max_completion_tokens"] == 16384
    assert "reasoning_effort" not in body


def test_reasoning_model_refuses_temperature() -> None:
    with pytest.raises(ConfigError, match="reasoning model"):
        load_model("openai:o3", overrides={"temperature": 0.5})


async def test_compatible_uses_max_tokens_extra_fields_and_no_openai_key(
    fake: FakeProvider,
) -> None:
    overrides = {**FAST, "max_tokens": 99, "extra": {"top_k": 20}}
    model = load_model(
        f"openai-compatible:qwen/qwen3-235b-a22b@{fake.openai_url}", overrides=overrides
    )
    completions = await run(model, request())
    # The fake requires KEY; the compatible backend must not borrow OPENAI_API_KEY.
    assert completions[0].error is not None and completions[0].error.startswith("HTTP 401")
    body = fake.generation_requests()[0].body
    assert body["max_tokens"] == 99 and body["top_k"] == 20
    assert body["temperature"] == 0.7 and body["top_p"] == 0.8  # from eval/models.yaml
    assert fake.generation_requests()[0].headers["authorization"] == "Bearer EMPTY"


# --- retries -----------------------------------------------------------------------------


async def test_429_retry_after_is_honoured(fake: FakeProvider) -> None:
    fake.fail_next(status=429, retry_after="1")
    model = load_model("openai:gpt-4.1", overrides=FAST)
    (completion,) = await run(model, request())
    assert completion.error is None and completion.text
    first, second = fake.generation_requests()
    # Our own backoff would be at most 0.05 s: the gap proves the header was obeyed.
    assert second.received_at - first.received_at >= 0.9


async def test_500_then_success_is_retried(fake: FakeProvider) -> None:
    fake.fail_next(status=500, times=2)
    model = load_model("openai:gpt-4.1", overrides=FAST)
    (completion,) = await run(model, request())
    assert completion.error is None
    assert len(fake.generation_requests()) == 3


@pytest.mark.parametrize(
    "fault",
    [{"malformed": True}, {"drop": True}, {"delay_s": 1.5}],
    ids=["malformed-json", "connection-dropped", "timeout"],
)
async def test_transient_transport_faults_are_retried(
    fake: FakeProvider, fault: dict[str, object]
) -> None:
    fake.fail_next(**fault)  # type: ignore[arg-type]
    model = load_model("openai:gpt-4.1", overrides={**FAST, "timeout_s": 0.5})
    (completion,) = await run(model, request())
    assert completion.error is None and completion.text
    assert len(fake.generation_requests()) == 2


async def test_final_failure_is_an_error_completion_per_sample(fake: FakeProvider) -> None:
    fake.fail_next(status=500, times=10)
    model = load_model("openai:gpt-4.1", overrides={**FAST, "max_tries": 3})
    completions = await run(model, request(2))
    assert len(completions) == 2
    for completion in completions:
        assert completion.text is None
        assert completion.error == "HTTP 500 after 3 tries: injected 500"
    assert len(fake.generation_requests()) == 3


async def test_unauthorised_is_not_retried(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    model = load_model("openai:gpt-4.1", overrides=FAST)
    (completion,) = await run(model, request())
    assert completion.text is None
    assert completion.error == "HTTP 401: invalid x-api-key / bearer token"
    assert len(fake.generation_requests()) == 1


async def test_bad_request_is_not_retried(fake: FakeProvider) -> None:
    fake.fail_next(status=400, message="max_tokens is too large", times=3)
    model = load_model("openai:gpt-4.1", overrides=FAST)
    (completion,) = await run(model, request())
    assert completion.error == "HTTP 400: max_tokens is too large"
    assert len(fake.generation_requests()) == 1


# --- pre-flight ----------------------------------------------------------------------------


async def test_check_passes_against_a_live_server(fake: FakeProvider) -> None:
    model = load_model("openai:gpt-4.1")
    await model.check()
    await model.aclose()
    assert [r.api for r in fake.log] == ["models"]


async def test_a_model_checked_once_is_not_asked_again(fake: FakeProvider) -> None:
    """eval-set checks every model at its start and each run's pre-flight checks it
    again: the server hears one models call, not two."""
    model = load_model("openai:gpt-4.1")
    await model.check()
    await model.check()
    await model.aclose()
    assert [r.api for r in fake.log] == ["models"]


async def test_a_failed_check_is_asked_again(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    model = load_model("openai:gpt-4.1")
    for _ in range(2):
        with pytest.raises(ConfigError, match="rejected the key"):
            await model.check()
    await model.aclose()
    assert [r.api for r in fake.log] == ["models", "models"]


async def test_check_missing_key(fake: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    model = load_model("openai:gpt-4.1")
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        await model.check()
    assert fake.log == []


async def test_check_rejected_key(fake: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    model = load_model("openai:gpt-4.1")
    with pytest.raises(ConfigError, match="rejected the key in OPENAI_API_KEY"):
        await model.check()
    await model.aclose()


async def test_check_unreachable_server() -> None:
    with FakeProvider() as gone:
        url = gone.openai_url
    model = load_model(f"openai-compatible:m@{url}", overrides={"check_timeout_s": 2})
    start = time.monotonic()
    with pytest.raises(ConfigError, match=r"cannot reach http://127\.0\.0\.1:"):
        await model.check()
    assert time.monotonic() - start < 10
    await model.aclose()


def test_identity_has_sampling_parameters_and_never_the_key(fake: FakeProvider) -> None:
    model = load_model("openai:gpt-4.1", overrides={"seed": 3})
    ident = model.identity()
    assert ident["backend"] == "openai" and ident["model"] == "gpt-4.1"
    assert ident["base_url"] == fake.openai_url
    assert ident["seed"] == 3 and ident["temperature"] == 1.0 and ident["max_tokens"] == 16384
    assert KEY not in json.dumps(ident)
    assert cacheable(model)


def test_url_credentials_are_not_in_identity() -> None:
    model = load_model("openai-compatible:m@http://user:secret@127.0.0.1:9/v1?key=abc")
    assert model.identity()["base_url"] == "http://127.0.0.1:9/v1"


async def test_responder_hook_scripts_answers_per_request(fake: FakeProvider) -> None:
    def answer(req: FakeRequest) -> str:
        return "Answer: 1166" if "Alice" in req.last_user else "Answer: 0"

    fake.responder = answer
    model = load_model("openai:gpt-4.1", overrides=FAST)
    (completion,) = await run(model, request())
    assert completion.text == "Answer: 1166"


# --- replies of the wrong shape -------------------------------------------------------


Reshape = Callable[[dict[str, Any]], dict[str, Any]]


def _content(value: object) -> Reshape:
    def reshape(reply: dict[str, Any]) -> dict[str, Any]:
        for choice in reply["choices"]:
            choice["message"]["content"] = value
        return reply

    return reshape


def _field(name: str, value: object) -> Reshape:
    def reshape(reply: dict[str, Any]) -> dict[str, Any]:
        reply[name] = value
        return reply

    return reshape


async def test_content_as_a_list_of_parts_is_joined(fake: FakeProvider) -> None:
    from fakeproviders import Fault

    parts = [
        {"type": "text", "text": "Answer: "},
        {"type": "reasoning", "reasoning": "scratch"},
        {"type": "text", "text": "1166"},
    ]
    fake.fail_next(Fault(reshape=_content(parts)))
    model = load_model("openai:gpt-4.1", overrides=FAST)
    (completion,) = await run(model, request())
    assert completion.error is None and completion.text == "Answer: 1166"
    assert len(fake.generation_requests()) == 1


@pytest.mark.parametrize(
    "reshape",
    [
        _content(1166),
        _content({"text": 5}),
        _content([{"type": "text", "text": 5}]),
        _field("choices", "Answer: 1166"),
        _field("choices", ["Answer: 1166"]),
        _field("choices", []),
        _field("choices", [{"index": 0, "message": "Answer: 1166", "finish_reason": "stop"}]),
        _field("usage", {"prompt_tokens": "many", "completion_tokens": 3}),
        _field("usage", {"prompt_tokens": 3, "completion_tokens": [1]}),
    ],
    ids=[
        "content-number",
        "content-object",
        "part-text-number",
        "choices-string",
        "choices-of-strings",
        "choices-empty",
        "message-string",
        "usage-word",
        "usage-list",
    ],
)
async def test_a_malformed_reply_is_retried_then_an_error(
    fake: FakeProvider, reshape: Reshape
) -> None:
    from fakeproviders import Fault

    # Once malformed, then fine: retried like a 5xx, and the second reply is the answer.
    fake.fail_next(Fault(reshape=reshape))
    model = load_model("openai:gpt-4.1", overrides=FAST)
    (completion,) = await run(model, request())
    assert completion.error is None and isinstance(completion.text, str)
    assert len(fake.generation_requests()) == 2
    # Malformed every time: an error completion per sample, never an exception.
    fake.fail_next(Fault(reshape=reshape), times=10)
    model = load_model("openai:gpt-4.1", overrides={**FAST, "max_tries": 3})
    completions = await run(model, request(2))
    assert len(completions) == 2
    for completion in completions:
        assert completion.text is None
        assert (completion.error or "").startswith("malformed response after 3 tries")


# --- --concurrency bounds HTTP requests in flight -------------------------------------


async def test_calls_in_flight_stay_within_the_limit_when_n_is_emulated(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
    fake.max_choices = 1  # the server ignores n: K samples become K calls
    fake.latency_s = 0.15
    model = load_model(f"openai-compatible:llama@{fake.openai_url}", overrides=FAST)
    limit_in_flight(model, 3)
    try:
        batches = await asyncio.gather(*(model.generate(request(4)) for _ in range(4)))
    finally:
        await model.aclose()
    assert all(len(b) == 4 and all(c.error is None for c in b) for b in batches)
    assert len(fake.generation_requests()) >= 16
    assert fake.max_in_flight == 3
