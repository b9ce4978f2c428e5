"""The dry run asks the backend and the runner how a run will send, instead of keeping
its own copy of their rules: which requests go by batch, which options a
backend refuses, whether prompt caching is on, the batch lines' cache lifetime, and
what a first agent turn carries (its tool definitions count toward the threshold and
the bill).  Each test fails on a dry run that keeps a copy of the rule it checks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cost_runs import (
    DATA,
    KEY,
    claude_stand_in,
    dry_run_json,
    eval_at,
    eval_cli,
    o200k,
    price_bill,
    reading_agent,
)
from fakeproviders import FakeProvider

pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)
SONNET = "anthropic:claude-sonnet-4-5"
SELECTION = ("--split", "smoke", "--domains", "airline", "-k", "2", "--attempts", "1")


def dry(home: Path, *args: str, as_json: bool = True) -> subprocess.CompletedProcess[str]:
    """A dry run against a loopback provider (its ``count_tokens`` endpoint answers as
    the real one does): a test never reaches for a provider's real address."""
    extra = ("--json",) if as_json else ()
    run = ("--out", str(home / "run"))
    with FakeProvider(api_key=KEY, tokenizer=o200k(), claude_tokenizer=claude_stand_in()) as fake:
        urls = {"ANTHROPIC_BASE_URL": fake.url, "OPENAI_BASE_URL": fake.openai_url}
        return eval_at(urls, home, *args, *SELECTION, "--dry-run", *extra, *run)


def doc(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert isinstance(out, dict)
    return out


@pytest.mark.slow
def test_a_backend_that_refuses_batch_is_refused_by_its_dry_run_too(tmp_path: Path) -> None:
    done = dry(tmp_path, "--model", "reference", "--modes", "direct", "--batch")
    assert done.returncode == 2
    assert "--batch needs a provider batch API" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_agentic_trials_under_batch_are_priced_interactive(tmp_path: Path) -> None:
    args = ("--model", SONNET, "--modes", "agent-zero-shot")
    alone = doc(dry(tmp_path, *args))
    batched = doc(dry(tmp_path, *args, "--batch"))
    assert batched["usd_input"] == alone["usd_input"] > 0


@pytest.mark.slow
def test_no_prompt_cache_prices_no_caching(tmp_path: Path) -> None:
    args = ("--model", SONNET, "--modes", "direct", "--no-prompt-cache")
    out = doc(dry(tmp_path, *args))
    assert out["prompt_cache"] is False
    assert out["usd_input_cached"] is None and out["usd_input_cached_batch"] is None
    assert out["usd_input"] == out["usd_input_uncached"]
    text = dry(tmp_path, *args, as_json=False)
    assert text.returncode == 0, text.stderr
    assert "with prompt caching" not in text.stdout
    assert "prompt caching is off" in text.stdout


@pytest.mark.slow
def test_batch_lines_cache_lifetime_is_the_batch_api_s(tmp_path: Path) -> None:
    """The user's cache_ttl is kept in batches: the dry run prices 5-minute writes."""
    args = ("--model", SONNET, "--modes", "direct,zero-shot", "--batch")
    hour = doc(dry(tmp_path, *args))
    five = doc(dry(tmp_path, *args, "--param", "cache_ttl=5m"))
    assert hour["cache_write_tokens"] == five["cache_write_tokens"] > 0
    writes = five["cache_write_tokens"]
    assert five["usd_input_parts"]["cache_writes"] == pytest.approx(writes * 3.75 / 1e6, rel=1e-3)
    assert hour["usd_input_parts"]["cache_writes"] == pytest.approx(writes * 6.00 / 1e6, rel=1e-3)


@pytest.mark.slow
def test_first_agent_turns_are_priced_within_5_percent_of_the_bill(tmp_path: Path) -> None:
    """The first turns of the trials, billed by the fake, against the dry run.  The tool
    definitions are input the provider bills, and count toward the breakpoint's
    threshold, as the backend counts them."""
    with FakeProvider(api_key=KEY, tokenizer=o200k(), claude_tokenizer=claude_stand_in()) as fake:
        fake.responder = reading_agent(turns=1)
        args = ("--model", SONNET, "--split", "smoke", "--domains", "airline",
                "--modes", "agent-zero-shot", "-k", "2", "--out", str(tmp_path / "r"))  # fmt: skip
        estimate = dry_run_json(fake, tmp_path, *args)
        done = eval_cli(fake, tmp_path, *args)
        assert done.returncode == 0, done.stderr
        first = [
            r.billed
            for r in fake.generation_requests()
            if r.billed and not any(m["role"] == "assistant" for m in r.body["messages"])
        ]
        bill = price_bill(first, SONNET)
    assert bill.calls == estimate["calls"] == 10
    assert estimate["usd_input"] == pytest.approx(bill.input_usd, rel=0.05)
