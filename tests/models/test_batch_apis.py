"""The provider batch APIs (``models.batch``) through the real ``openai`` and
``anthropic`` clients against the loopback batch fake: what a result line means, and
finding a batch in the account's list."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from fake_batches import FakeBatches

from deonticbench.models import load_model
from deonticbench.models.base import Request, config_of
from deonticbench.models.batch import BatchAPI, BatchItem, ItemResult, batch_api
from deonticbench.vocabulary.chat import Message


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBatches]:
    with FakeBatches(lambda body, choice: f"text {choice}") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield server


def items(count: int, n: int = 1) -> list[BatchItem]:
    return [
        BatchItem(
            f"item{i}",
            Request(
                messages=(Message("user", f"question number {i}"),),
                n=n,
                domain="airline",
                case_id=str(i),
                mode="direct",
                sample_start=0,
            ),
        )
        for i in range(count)
    ]


async def submit_and_read(api: BatchAPI, batch: list[BatchItem]) -> dict[str, ItemResult]:
    batch_id = await api.submit(batch, {"deonticbench_run": "r", "deonticbench_chunk": "c0000"})
    state = await api.retrieve(batch_id)
    assert state.ended
    results = {r.custom_id: r async for r in api.results(state)}
    await api.model.aclose()
    return results


def test_an_openai_line_with_a_null_error_and_status_500_is_a_failure(
    fake: FakeBatches,
) -> None:
    fake.set_item_fault(lambda custom_id, tries: "http_500" if custom_id == "item1" else None)
    api = batch_api(load_model("openai:gpt-4.1"))
    results = asyncio.run(submit_and_read(api, items(3, n=2)))
    failed = results["item1"]
    assert failed.completions is None and failed.retryable
    assert (failed.error or "").startswith("HTTP 500"), failed.error
    ok = results["item0"].completions
    assert ok is not None and [c.text for c in ok] == ["text 0", "text 1"]
    assert all(c.batch for c in ok) and ok[0].tokens_in == 3 and ok[1].tokens_in == 0


@pytest.mark.parametrize("model", ["openai:gpt-4.1", "anthropic:claude-sonnet-4-5"])
def test_a_malformed_request_is_final_an_expired_one_is_sent_again(
    fake: FakeBatches, model: str
) -> None:
    faults = {"item0": "http_400", "item1": "expired"}
    fake.set_item_fault(lambda custom_id, tries: faults.get(custom_id))
    api = batch_api(load_model(model))
    results = asyncio.run(submit_and_read(api, items(3)))
    assert not results["item0"].retryable and results["item0"].error
    assert results["item1"].retryable and results["item1"].completions is None
    assert results["item2"].completions is not None


@pytest.mark.parametrize("model", ["openai:gpt-4.1", "anthropic:claude-sonnet-4-5"])
def test_the_listing_finds_a_batch_by_its_metadata_or_count_newest_first(
    fake: FakeBatches, model: str
) -> None:
    api = batch_api(load_model(model))

    async def go() -> list[tuple[str, int | None, dict[str, str]]]:
        first = await api.submit(items(2), {"deonticbench_run": "r", "deonticbench_chunk": "a"})
        second = await api.submit(items(3), {"deonticbench_run": "r", "deonticbench_chunk": "b"})
        listed = [(b.id, b.requests, dict(b.metadata)) async for b in api.listing(0.0)]
        await api.model.aclose()
        assert [b[0] for b in listed] == [second, first]
        return listed

    listed = asyncio.run(go())
    assert [b[1] for b in listed] == [3, 2]
    if model.startswith("openai"):
        assert [b[2]["deonticbench_chunk"] for b in listed] == ["b", "a"]


def test_a_backend_without_a_batch_api_says_so_in_one_sentence() -> None:
    from deonticbench.errors import ConfigError

    with pytest.raises(ConfigError, match="reference has none"):
        batch_api(load_model("reference"))


def test_anthropic_batches_ask_for_the_one_hour_cache_and_leave_interactive_calls_alone(
    fake: FakeBatches,
) -> None:
    model = load_model("anthropic:claude-sonnet-4-5")
    api = batch_api(model)
    statutes = " ".join(f"section {i} applies." for i in range(3000))
    long = BatchItem(
        "long",
        Request(
            messages=(Message("system", "You are careful."), Message("user", statutes)),
            n=1,
            domain="airline",
            case_id="1",
            mode="direct",
            sample_start=0,
        ),
    )
    asyncio.run(submit_and_read(api, [long]))
    (batch,) = fake.batches
    text = str(batch.items[0]["params"])
    assert "'cache_control'" in text and "'ttl': '1h'" in text
    assert getattr(model, "cache_ttl", None) == "5m"  # the run's interactive calls


def openai_reply_body(cached: int) -> dict[str, object]:
    """A chat-completions body as OpenAI documents it, with cached prompt tokens."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4.1",
        "choices": [
            {"index": i, "message": {"role": "assistant", "content": f"t{i}"}, "finish_reason": r}
            for i, r in enumerate(("stop", "length"))
        ],
        "usage": {
            "prompt_tokens": 2048,
            "completion_tokens": 10,
            "total_tokens": 2058,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def test_an_openai_reply_means_the_same_in_a_batch_result_and_a_synchronous_call() -> None:
    """An OpenAI reply body with 1,536 cached tokens reads as 1,536 in the batch reader and
    in the synchronous path, through their one mapping."""
    import json

    from deonticbench.models.batch.openai_batches import _item
    from deonticbench.models.openai_backend import _read_reply

    body = openai_reply_body(1536)
    line = {"custom_id": "c1", "response": {"status_code": 200, "body": body}, "error": None}
    (batched,) = [_item(json.dumps(line))]
    synchronous = _read_reply(body, 2).completions(0.0)
    assert batched.completions is not None
    assert [c.cache_read_tokens for c in batched.completions] == [1536, 0]
    for b, s in zip(batched.completions, synchronous, strict=True):
        assert (b.text, b.tokens_in, b.cache_read_tokens, b.tokens_out, b.finish_reason) == (
            s.text,
            s.tokens_in,
            s.cache_read_tokens,
            s.tokens_out,
            s.finish_reason,
        )
        assert b.batch and not s.batch


def test_an_openai_batch_line_is_the_synchronous_call_s_request(fake: FakeBatches) -> None:
    """One request builder: a line carries what ``_call`` sends, prompt_cache_key too."""
    model = load_model("openai:gpt-4.1")
    assert isinstance(model.settings.prompt_cache, bool)
    api = batch_api(model)
    (item,) = items(1, n=2)
    request = Request(**{**item.request.__dict__, "cache_group": "airline/direct/abc"})
    body = api.line(BatchItem("c", request))["body"]
    config = config_of(model, request)
    sync = model.call_fields(config, 2, (), "airline/direct/abc")  # type: ignore[attr-defined]
    assert body["prompt_cache_key"] == sync["prompt_cache_key"] == "airline/direct/abc"
    assert {k: v for k, v in body.items() if k not in ("model", "messages")} == sync
