"""Prompt caching: the real ``anthropic`` and ``openai`` clients
against the loopback fakes, which bill as the providers document it (breakpoints, the
20-block lookback, minimum lengths, entries readable only after a response, TTLs, OpenAI's
128-token steps).  The published prices are the test vector."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeproviders import Billed, FakeProvider

from deonticbench.data.cases import load_cases, resolve_source
from deonticbench.data.domains import get_domain
from deonticbench.models import Request, load_model
from deonticbench.models.anthropic_backend import AnthropicModel
from deonticbench.models.base import Completion
from deonticbench.prompting.plan import plan_run
from deonticbench.prompting.render import prompt_hash
from deonticbench.vocabulary.chat import Message, ToolCall, ToolSpec

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
FAST = {"backoff_base_s": 0.01, "backoff_cap_s": 0.05, "timeout_s": 10}
KEY = "sk-test-not-a-real-key"
DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
needs_data = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)
SYSTEM = "You are a helpful assistant trained to conduct deontic reasoning."
STATUTE = " ".join(f"statute{i}" for i in range(3000))  # 3,000 words: tokens, in the fake


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with FakeProvider(api_key=KEY) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        yield server


def request(user: str, *, shared: int = 0, n: int = 1, case: str = "c1") -> Request:
    return Request(
        messages=(Message("system", SYSTEM), Message("user", user)),
        n=n, domain="sara_numeric", case_id=case, mode="zero-shot", sample_start=0,
        shared_prefix=shared, cache_group="sara_numeric/zero-shot/h",
    )  # fmt: skip


def claude(**overrides: object) -> AnthropicModel:
    model = load_model("anthropic:claude-sonnet-4-5", overrides={**FAST, **overrides})
    assert isinstance(model, AnthropicModel)
    return model


def generate(model: AnthropicModel, *requests: Request) -> list[list[Completion]]:
    async def go() -> list[list[Completion]]:
        try:
            return [await model.generate(r) for r in requests]
        finally:
            await model.aclose()

    return asyncio.run(go())


def usd(bill: list[Billed]) -> float:
    """The fake's bill at the published claude-sonnet-4-5 prices (USD per million)."""
    return sum(
        b.uncached * 3.00 + b.cache_write_5m * 3.75 + b.cache_write_1h * 6.00
        + b.cache_read * 0.30 + b.output * 15.00
        for b in bill
    ) / 1e6  # fmt: skip


def case_text(i: int) -> str:
    return f"\n\n## Case: case number {i} " + " ".join(f"fact{i}_{j}" for j in range(300))


# --- Anthropic ------------------------------------------------------------------------


def test_the_k_samples_of_a_case_read_what_its_first_sample_wrote(fake: FakeProvider) -> None:
    text = STATUTE + case_text(1)
    [completions] = generate(claude(), request(text, shared=len(STATUTE), n=3))
    first, *rest = fake.bill
    total = first.input_total
    assert first.cache_write_5m == total and first.cache_read == 0
    assert [b.cache_read for b in rest] == [total, total]  # after the first answered
    assert [c.tokens_in for c in completions] == [total] * 3  # tokens_in stays the total
    assert [c.cache_read_tokens for c in completions] == [0, total, total]
    assert completions[0].cache_write_tokens == total
    # The published prices: one write at 1.25x and two reads at 0.1x instead of 3 x 1x.
    assert usd(fake.bill) == pytest.approx(
        (total * 3.75 + 2 * total * 0.30 + sum(b.output for b in fake.bill) * 15.00) / 1e6
    )


def test_without_prompt_caching_the_k_calls_go_at_once_and_nothing_is_cached(
    fake: FakeProvider,
) -> None:
    fake.latency_s = 0.2
    [completions] = generate(
        claude(prompt_cache="false"), request(STATUTE + case_text(1), shared=len(STATUTE), n=3)
    )
    assert all(b.cache_read == b.cache_write_5m == 0 for b in fake.bill)
    assert fake.max_in_flight == 3  # full fan-out
    assert all("cache_control" not in str(r.body) for r in fake.generation_requests())
    assert len(completions) == 3


def test_another_case_reads_the_shared_statutes_and_writes_only_its_own_part(
    fake: FakeProvider,
) -> None:
    one, two = STATUTE + case_text(1), STATUTE + case_text(2)
    generate(claude(), request(one, shared=len(STATUTE)), request(two, shared=len(STATUTE)))
    first, second = fake.bill
    shared = len(SYSTEM.split()) + len(STATUTE.split())  # the fake counts words
    assert first.cache_write_5m == first.input_total
    assert second.cache_read == shared
    assert second.cache_write_5m == second.input_total - shared
    assert second.uncached == 0


def test_an_entry_is_readable_only_once_its_response_has_begun(fake: FakeProvider) -> None:
    fake.latency_s = 0.3
    model = claude()
    text = STATUTE + case_text(1)

    async def together() -> None:
        try:
            await asyncio.gather(model.generate(request(text)), model.generate(request(text)))
        finally:
            await model.aclose()

    asyncio.run(together())
    assert [b.cache_read for b in fake.bill] == [0, 0]  # both arrived before either answered
    assert all(b.cache_write_5m == b.input_total for b in fake.bill)


def test_no_breakpoint_below_the_models_minimum(fake: FakeProvider) -> None:
    short = "a short prompt " * 50  # 150 words: far below 1,024
    generate(claude(), request(short, n=2))
    assert "cache_control" not in str(fake.generation_requests()[0].body)
    assert all(b.cache_read == b.cache_write_5m == 0 for b in fake.bill)
    # A prompt of about 2,700 tokens (by the backend's 4 characters a token): above
    # Sonnet 4.5's minimum of 1,024, below Haiku 4.5's 4,096.
    medium = " ".join(f"s{i}" for i in range(2000))
    haiku = load_model("anthropic:claude-haiku-4-5", overrides=FAST)
    assert isinstance(haiku, AnthropicModel) and haiku.cache_min_tokens == 4096
    assert "cache_control" not in str(haiku.request_fields(request(medium)))
    assert "cache_control" in str(claude().request_fields(request(medium)))


def test_entries_expire_after_their_ttl_and_one_hour_entries_outlive_five_minutes(
    fake: FakeProvider,
) -> None:
    text = STATUTE + case_text(1)
    generate(claude(), request(text))
    fake.advance(301)
    generate(claude(), request(text))
    assert fake.bill[1].cache_read == 0  # expired after 5 minutes
    generate(claude(cache_ttl="1h"), request(text + " more"))
    fake.advance(1800)
    generate(claude(cache_ttl="1h"), request(text + " more"))
    assert fake.bill[2].cache_write_1h == fake.bill[2].input_total
    assert fake.bill[3].cache_read == fake.bill[2].input_total  # still there after 30 min
    sent = fake.generation_requests()[2].body
    assert '"ttl": "1h"' in str(sent).replace("'", '"')


def check_the_fakes_lookback_is_twenty_blocks(fake: FakeProvider) -> None:
    """The fake finds an entry 19 blocks back and not 20 (what the second rolling
    breakpoint is for)."""
    import anthropic

    client = anthropic.Anthropic(api_key=KEY, base_url=fake.url)
    long: dict[str, Any] = {"type": "text", "text": STATUTE, "cache_control": {"type": "ephemeral"}}
    first: Any = [{"role": "user", "content": [long]}]
    client.messages.create(model="m", max_tokens=5, messages=first)
    for extra, hit in ((19, True), (20, False)):
        plain: dict[str, Any] = {"type": "text", "text": STATUTE}
        # Blocks of their own per round, so that one round's entries cannot serve the next.
        blocks = [plain, *({"type": "text", "text": f"b{extra}_{i}"} for i in range(extra))]
        blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
        messages: Any = [{"role": "user", "content": blocks}]
        client.messages.create(model="m", max_tokens=5, messages=messages)
        assert (fake.bill[-1].cache_read > 0) is hit, extra
    client.close()


def test_an_agent_turn_past_the_lookback_gets_a_second_rolling_breakpoint(
    fake: FakeProvider,
) -> None:
    tools = (ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}}),)
    opening = (Message("system", SYSTEM), Message("user", "Solve the case. " + STATUTE))
    turn1 = (*opening, Message("assistant", "", (ToolCall("t0", "read_file", {}),)),
             Message("tool", "a file", tool_call_id="t0", name="read_file"))  # fmt: skip
    # The next turn adds 12 calls at once: 24 blocks, more than the 20-block lookback.
    calls = tuple(ToolCall(f"t{i}", "read_file", {}) for i in range(1, 13))
    results = tuple(Message("tool", f"file {i}", tool_call_id=f"t{i}", name="read_file")
                    for i in range(1, 13))  # fmt: skip
    turn2 = (*turn1, Message("assistant", "", calls), *results)

    def agent_request(messages: tuple[Message, ...], turn: int) -> Request:
        return Request(messages=messages, n=1, domain="airline", case_id="c",
                       mode="agent-zero-shot", sample_start=0, turn=turn,
                       tools=tools)  # fmt: skip

    model = claude()
    fields = model.request_fields(agent_request(turn2, 2))
    marked = str(fields).count("cache_control")
    assert marked == 3  # instruction, the previous turn's end, the rolling end (at most 4)
    generate(model, agent_request(turn1, 1), agent_request(turn2, 2))
    first, second = fake.bill
    assert second.cache_read == first.input_total  # found through the second breakpoint
    assert second.cache_write_5m == second.input_total - first.input_total
    # ... which the rolling one alone would not have found: 24 blocks is past the lookback.
    check_the_fakes_lookback_is_twenty_blocks(fake)


@needs_data
@pytest.mark.parametrize("domain", ["sara_numeric", "airline", "housing"])
def test_the_blocks_concatenate_to_todays_prompt(domain: str) -> None:
    """Caching changes no text: the blocks sent join to each prompt's messages, whose hash
    is the one the records and the response cache know."""
    plan = plan_run([get_domain(domain)], split="smoke", modes=["direct", "zero-shot", "few-shot"],
                    source=resolve_source(DATA), limit=2)  # fmt: skip
    model = claude()
    shared_seen = 0
    for unit in plan.units:
        prompt = unit.render()
        assert prompt.prompt_hash == prompt_hash(prompt.messages)
        req = Request(messages=prompt.messages, n=3, domain=domain, case_id=unit.case.id,
                      mode=unit.mode, sample_start=0,
                      shared_prefix=prompt.shared_prefix)  # fmt: skip
        fields = model.request_fields(req)
        system = fields["system"]
        joined_system = system if isinstance(system, str) else "".join(b["text"] for b in system)
        assert joined_system == prompt.messages[0].content
        (user,) = fields["messages"]
        content = user["content"]
        joined = content if isinstance(content, str) else "".join(b["text"] for b in content)
        assert joined == prompt.messages[1].content
        if prompt.shared_prefix:
            shared_seen += 1
            assert joined[: prompt.shared_prefix].rstrip().endswith(unit.case.statutes.strip())
            assert content[0]["text"] == joined[: prompt.shared_prefix]
            assert content[0].get("cache_control") and content[1].get("cache_control")
    # SARA and airline put the statutes first; housing puts the case first.
    assert (shared_seen > 0) is (domain != "housing")
    cases = load_cases(get_domain(domain), "smoke", resolve_source(DATA))
    assert cases  # the selection was not empty


# --- OpenAI ---------------------------------------------------------------------------


def test_openai_reads_cached_tokens_in_128_token_steps_and_sends_its_cache_key(
    fake: FakeProvider,
) -> None:
    model = load_model("openai:gpt-4.1", overrides=FAST)
    base = " ".join(f"w{i}" for i in range(1300))

    async def go() -> list[list[Completion]]:
        try:
            one = await model.generate(request(base + " first"))
            two = await model.generate(request(base + " second"))
            return [one, two]
        finally:
            await model.aclose()

    first, second = asyncio.run(go())
    assert first[0].cache_read_tokens == 0
    # 10 system words + 1,300 shared: the longest 1,024 + 128 k prefix within is 1,280.
    assert second[0].cache_read_tokens == 1280
    assert second[0].tokens_in == fake.bill[1].input_total
    bodies = [r.body for r in fake.generation_requests()]
    assert all(b["prompt_cache_key"] == "sara_numeric/zero-shot/h" for b in bodies)


def test_openai_compatible_servers_get_no_cache_key_but_their_cached_tokens_are_read(
    fake: FakeProvider,
) -> None:
    model = load_model(f"openai-compatible:fake@{fake.openai_url}", overrides=FAST)
    base = " ".join(f"w{i}" for i in range(1300))

    async def go() -> list[Completion]:
        try:
            await model.generate(request(base + " first"))
            return await model.generate(request(base + " second"))
        finally:
            await model.aclose()

    second = asyncio.run(go())
    assert all("prompt_cache_key" not in r.body for r in fake.generation_requests())
    assert second[0].cache_read_tokens == 1280  # the fake's cache ignores the missing key


def test_caching_is_not_part_of_a_models_identity() -> None:
    on = load_model("anthropic:claude-sonnet-4-5", overrides=FAST)
    off = load_model("anthropic:claude-sonnet-4-5", overrides={**FAST, "prompt_cache": "false",
                                                               "cache_ttl": "1h"})  # fmt: skip
    assert on.prompt_cache and not off.prompt_cache
    assert on.identity() == off.identity()
