"""What an ``eval --batch`` run says it cost, against what the batch fakes bill: the
fakes read and write the providers' prompt caches and report them in the usage fields
each provider documents (``fake_prompt_cache``), as the synchronous fakes do.

The goal, on smoke (airline + SARA numeric, direct and zero-shot, K 2): an OpenAI batch
run's results.json is the bill within 1 % (the batch reader keeps
``prompt_tokens_details.cached_tokens``; without it results.json says $0.1286 for a bill
of $0.0472), and a batch and a synchronous run of the same selection read the same share
of their input from the cache (within the fakes' rules)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cost_runs import DATA, KEY, Bill, claude_stand_in, eval_at, o200k, price_bill, results_of
from fake_batches import FakeBatches
from fakeproviders import FakeProvider

pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)
SMOKE = (
    "--split", "smoke", "--domains", "sara_numeric,airline", "--modes", "direct,zero-shot",
    "-k", "2", "--attempts", "1", "--param", "batch_poll_s=0.05",
)  # fmt: skip


def answer(body: object, choice: int) -> str:
    return f"Answer: {choice}"


@pytest.fixture
def batches() -> Iterator[FakeBatches]:
    with FakeBatches(answer, tokenizer=o200k(), claude_tokenizer=claude_stand_in()) as server:
        yield server


def score_usage_usd(home: Path, run_dir: Path) -> float:
    """What ``score --json``'s usage rows (the cost of each setting, which the
    report prints too) add up to."""
    import json
    import os

    env = {**os.environ, "DEONTICBENCH_DATA": DATA}
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "score", str(run_dir), "--json"],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return float(sum(row["cost_usd"] for row in json.loads(done.stdout)["usage"]))


def dry_run(env_urls: dict[str, str], home: Path, *args: str) -> dict[str, Any]:
    import json

    done = eval_at(env_urls, home, *args, "--out", str(home / "dry"), "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert isinstance(doc, dict)
    return doc


def batch_urls(fake: FakeBatches) -> dict[str, str]:
    return {"OPENAI_BASE_URL": fake.openai_url, "ANTHROPIC_BASE_URL": fake.url}


def batch_run(batches: FakeBatches, home: Path, spec: str) -> tuple[dict[str, Any], Path, Bill]:
    """A dry run and then the run of SMOKE by batch; the fake's bill.  The run's
    results.json is the bill within 1 %, and so is what ``score``'s usage rows add up to
    (one run, one dollar figure); the dry run priced the batches' input within 5 %."""
    out = home / "batch"
    urls = batch_urls(batches)
    dry = dry_run(urls, home, "--model", spec, *SMOKE, "--batch")
    done = eval_at(urls, home, "--model", spec, *SMOKE, "--batch", "--out", str(out))
    assert done.returncode == 0, done.stderr
    bill = price_bill([b.billed for b in batches.bill], spec)
    results = results_of(out)
    assert results["totals"]["cache_read_tokens_paid"] == bill.cache_read
    assert results["estimated_cost"]["usd"] == pytest.approx(bill.usd, rel=0.01)
    assert score_usage_usd(home, out) == pytest.approx(bill.usd, rel=0.01)
    assert dry["usd_input"] == pytest.approx(bill.input_usd, rel=0.05)
    return dry, out, bill


@pytest.mark.slow
def test_an_openai_batch_run_prices_its_cache_reads_as_the_bill_does(
    batches: FakeBatches, tmp_path: Path
) -> None:
    spec = "openai:gpt-4.1"
    _, _, bill = batch_run(batches, tmp_path, spec)
    assert bill.cache_read > 0, "the fake read nothing from the cache: no test"
    # Every line routes to the cache its synchronous call would: the key is sent.
    lines = [item["body"] for batch in batches.batches for item in batch.items]
    assert lines and all(line.get("prompt_cache_key") for line in lines)

    # The same selection, synchronous: the same share of the input read from the cache.
    with FakeProvider(api_key=KEY, tokenizer=o200k(), claude_tokenizer=claude_stand_in()) as sync:
        urls = {"OPENAI_BASE_URL": sync.openai_url, "ANTHROPIC_BASE_URL": sync.url}
        done = eval_at(
            urls, tmp_path, "--model", spec, *SMOKE, "--no-cache", "--out", str(tmp_path / "s")
        )
        assert done.returncode == 0, done.stderr
        sync_bill = price_bill(sync.bill, spec)
    assert bill.read_share == pytest.approx(sync_bill.read_share, abs=0.02)


@pytest.mark.slow
def test_an_anthropic_batch_run_prices_its_cache_reads_and_writes_as_the_bill_does(
    batches: FakeBatches, tmp_path: Path
) -> None:
    spec = "anthropic:claude-sonnet-4-5"
    dry, _, bill = batch_run(batches, tmp_path, spec)
    assert bill.cache_read > 0 and bill.cache_write > 0, bill
    # The dry run asked the batch API its cache lifetime (1 h): 1-hour writes, priced at
    # list price in the parts (the batch discount is a part of its own).
    written = sum(b.billed.cache_write_1h for b in batches.bill)
    assert written and sum(b.billed.cache_write_5m for b in batches.bill) == 0
    assert dry["usd_input_parts"]["cache_writes"] == pytest.approx(written * 6.00 / 1e6, rel=0.05)
