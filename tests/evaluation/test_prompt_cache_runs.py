"""What prompt caching saves on a whole run, measured on the billing fakes against its
goals: ``deonticbench eval`` as a user runs it, the real ``anthropic`` and
``openai`` clients, the fakes' bills priced at the published prices.

Smoke SARA numeric + airline, three modes, K = 3, claude-sonnet-4-5: at least 80 % of the
input is read from the cache (0 % without prompt caching), at no more than 0.35x the
uncached input cost, and results.json says what the fake billed.  The dry run predicts the calls
exactly and the input bill within 2 %, having asked the API's count_tokens endpoint;
without it (offline) it counts cl100k_base and says so."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cost_runs import DATA, dry_run_json, eval_cli, price_bill, reading_agent, results_of
from fakeproviders import FakeProvider

pytestmark = [
    pytest.mark.skipif(
        not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
    ),
]
SMOKE = (
    "--split", "smoke", "--domains", "sara_numeric,airline", "--modes",
    "direct,zero-shot,few-shot", "-k", "3", "--attempts", "1",
)  # fmt: skip


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    from cost_runs import KEY, claude_stand_in, o200k

    with FakeProvider(api_key=KEY, tokenizer=o200k(), claude_tokenizer=claude_stand_in()) as server:
        yield server


@pytest.mark.slow
def test_anthropic_smoke_run_reads_most_input_from_the_cache_and_says_what_it_cost(
    fake: FakeProvider, tmp_path: Path
) -> None:
    spec = "anthropic:claude-sonnet-4-5"
    dry = dry_run_json(fake, tmp_path, "--model", spec, *SMOKE, "--out", str(tmp_path / "r"))
    # The dry run generates nothing; it asks the free count_tokens endpoint once per
    # distinct prompt (K samples of a case share one; the few-shot and zero-shot prefixes
    # are prompts of their own).
    counts = [r for r in fake.log if r.api == "anthropic-count"]
    assert fake.generation_requests() == [] and 0 < len(counts) <= 2 * 3 * 5 * 2
    assert dry["token_count_method"].startswith("Anthropic's count_tokens endpoint")
    done = eval_cli(fake, tmp_path, "--model", spec, *SMOKE, "--out", str(tmp_path / "r"))
    assert done.returncode == 0, done.stderr
    bill = price_bill(fake.bill, spec)
    assert bill.calls == len(fake.generation_requests()) == 90  # 2 x 3 modes x 5 cases x K=3
    assert bill.read_share >= 0.80, bill
    assert bill.input_usd <= 0.35 * bill.input_usd_uncached, bill
    cost = results_of(tmp_path / "r")["estimated_cost"]
    assert cost["usd"] == pytest.approx(bill.usd, rel=0.01)
    assert cost["cache_reads"] == pytest.approx(bill.cache_read * 0.30 / 1e6, rel=0.01)
    # The closing line counts what the server received, not requests of n = K.
    assert "90 calls sent" in done.stderr
    # The model registry (eval/models.yaml) retires claude-sonnet-4-5 on 2026-11-30, a day
    # that stays past: one note names it, in the past tense.
    assert done.stderr.count("claude-sonnet-4-5 was retired on 2026-11-30") == 1
    # The dry run: the calls exactly, the first attempts' input bill within 10 %.
    assert dry["calls"] == bill.calls
    # Counted as the API bills (goal: within 2 %; a cl100k count is 14.5 % low).
    assert dry["usd_input"] == pytest.approx(bill.input_usd, rel=0.02)
    assert dry["cache_read_tokens"] == pytest.approx(bill.cache_read, rel=0.10)
    assert dry["usd_input_uncached"] == pytest.approx(bill.input_usd_uncached, rel=0.10)
    assert dry["usd_input_cached_batch"] < dry["usd_input_cached"] < dry["usd_input_uncached"]


@pytest.mark.slow
def test_openai_cached_tokens_are_priced_at_the_cached_rate(
    fake: FakeProvider, tmp_path: Path
) -> None:
    spec = "openai:gpt-4.1"
    args = ("--model", spec, *SMOKE[:4], "--modes", "zero-shot,few-shot", "-k", "3",
            "--attempts", "1", "--limit", "3", "--out", str(tmp_path / "r"))  # fmt: skip
    dry = dry_run_json(fake, tmp_path, *args)
    done = eval_cli(fake, tmp_path, *args)
    assert done.returncode == 0, done.stderr
    bill = price_bill(fake.bill, spec)
    assert bill.calls == dry["calls"] == 12  # n = K: one call per case
    assert bill.cache_read > 0 and bill.input_usd < bill.input_usd_uncached
    cost = results_of(tmp_path / "r")["estimated_cost"]
    assert cost["usd"] == pytest.approx(bill.usd, rel=0.01)
    assert cost["cache_reads"] == pytest.approx(bill.cache_read * 0.50 / 1e6, rel=0.01)
    assert dry["usd_input"] == pytest.approx(bill.input_usd, rel=0.05)
    # gpt-4.1 bills in o200k_base: the dry run's prompt tokens are the bill's to within 1 %.
    assert dry["token_count_method"] == "o200k_base (the model's own encoding)"
    assert dry["prompt_tokens"] == pytest.approx(bill.input_tokens, rel=0.01)
    sent = fake.generation_requests()
    assert {r.body["prompt_cache_key"].split("/")[:2][1] for r in sent} == {
        "zero-shot",
        "few-shot",
    }


@pytest.mark.slow
def test_agentic_trials_read_most_of_their_growing_conversation_from_the_cache(
    fake: FakeProvider, tmp_path: Path
) -> None:
    spec = "anthropic:claude-sonnet-4-5"
    fake.responder = reading_agent(turns=10)
    done = eval_cli(
        fake, tmp_path, "--model", spec, "--split", "smoke", "--domains", "airline",
        "--modes", "agent-zero-shot", "-k", "2", "--limit", "2", "--out", str(tmp_path / "r"),
        # Trials of two cases open alike (the case is in the files): without the response
        # cache, every turn is a call whichever trial finishes first.
        "--no-cache",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    bill = price_bill(fake.bill, spec)
    results = results_of(tmp_path / "r")
    assert bill.calls == results["totals"]["requests"] > 4 * 5  # every turn is a call
    assert bill.read_share >= 0.60, bill
    assert results["totals"]["cache_read_tokens_paid"] == bill.cache_read
    assert results["estimated_cost"]["usd"] == pytest.approx(bill.usd, rel=0.01)
