"""Runs of ``deonticbench eval`` against the billing fakes (``fakeproviders``), and the
fakes' bills priced at the published list prices: shared by the prompt-caching tests
(tests/evaluation/test_prompt_cache_runs.py) and ``benchmarks/cost.py``.

The prices below are the providers' published figures (USD per million tokens), written
out here on purpose rather than read from eval/models.yaml: they are the test vector the
registry and results.json are checked against.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import in_process
from fakeproviders import Billed, FakeProvider, FakeRequest, ToolTurn

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
KEY = "sk-test-not-a-real-key"


@dataclass(frozen=True)
class Published:
    input: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    output: float
    batch_discount: float = 0.5


PUBLISHED = {
    # https://platform.claude.com/docs/en/about-claude/pricing
    "anthropic:claude-sonnet-4-5": Published(3.00, 3.75, 6.00, 0.30, 15.00),
    # https://openai.com/api/pricing (no cache writes: OpenAI caches for free)
    "openai:gpt-4.1": Published(2.00, 2.00, 2.00, 0.50, 8.00),
}


O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def o200k() -> Callable[[str], list[Any]]:
    """gpt-4.1's encoding as OpenAI bills in it, built by tiktoken itself, not by the
    package the dry run counts with: tiktoken is handed the ranks bpe-openai ships (it
    checks them against its own published sha256, and never downloads)."""
    import gzip
    import hashlib
    import tempfile
    from importlib.resources import files

    import tiktoken

    ranks = gzip.decompress(
        files("bpe_openai.data").joinpath("o200k_base.tiktoken.gz").read_bytes()
    )
    with tempfile.TemporaryDirectory() as cache:
        Path(cache, hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(ranks)
        before = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = cache
        try:
            encoding = tiktoken.get_encoding("o200k_base")
        finally:
            if before is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = before
    return lambda text: list(encoding.encode(text, disallowed_special=()))


def claude_stand_in() -> Callable[[str], list[Any]]:
    """The fakes' Claude tokenizer (Claude's is not published): pieces of at most four
    word characters, each punctuation mark, each run of spaces; denser than cl100k_base
    on statute text, as Claude's is, so a dry run that counted offline is seen to miss."""
    import re

    piece = re.compile(r"\w{1,4}|[^\w\s]|\s+")
    return piece.findall


@dataclass(frozen=True)
class Bill:
    """A fake's bill in tokens and in dollars at the published prices."""

    calls: int
    input_tokens: int
    cache_read: int
    cache_write: int
    input_usd: float
    input_usd_uncached: float
    """The same input tokens at the full input price: what they cost without caching."""
    output_usd: float

    @property
    def read_share(self) -> float:
        return self.cache_read / self.input_tokens if self.input_tokens else 0.0

    @property
    def usd(self) -> float:
        return self.input_usd + self.output_usd


def price_bill(bill: Sequence[Billed], spec: str) -> Bill:
    """The bill at the published prices; an item processed in a batch at the batch price
    (every figure less the batch discount, cache reads and writes included)."""
    p = PUBLISHED[spec]

    def rate(b: Billed) -> float:
        return (1.0 - p.batch_discount) if b.batch else 1.0

    return Bill(
        calls=len(bill),
        input_tokens=sum(b.input_total for b in bill),
        cache_read=sum(b.cache_read for b in bill),
        cache_write=sum(b.cache_write_5m + b.cache_write_1h for b in bill),
        input_usd=sum(
            rate(b)
            * (
                b.uncached * p.input
                + b.cache_write_5m * p.cache_write_5m
                + b.cache_write_1h * p.cache_write_1h
                + b.cache_read * p.cache_read
            )
            for b in bill
        )
        / 1e6,
        input_usd_uncached=sum(rate(b) * b.input_total for b in bill) * p.input / 1e6,
        output_usd=sum(rate(b) * b.output for b in bill) * p.output / 1e6,
    )


NOBODY = "http://127.0.0.1:9"
"""A loopback address where no server listens (the discard port)."""


def env_with(home: Path, urls: dict[str, str]) -> dict[str, str]:
    """The environment of a user run with placeholder keys, pointed at ``urls``
    (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``).  A provider not given is pointed at a
    loopback port nobody listens on, never at its real address: tests stay offline."""
    out = {k: v for k, v in os.environ.items() if "API_KEY" not in k and "BASE_URL" not in k}
    out.update(
        DEONTICBENCH_DATA=DATA,
        DEONTICBENCH_CACHE=str(home / "cache"),
        ANTHROPIC_API_KEY=KEY,
        OPENAI_API_KEY=KEY,
        **{"ANTHROPIC_BASE_URL": NOBODY, "OPENAI_BASE_URL": NOBODY, **urls},
    )
    return out


def env_for(fake: FakeProvider, home: Path) -> dict[str, str]:
    """The environment of a user run pointed at the fake: a placeholder key only."""
    return env_with(home, {"ANTHROPIC_BASE_URL": fake.url, "OPENAI_BASE_URL": fake.openai_url})


def eval_at(urls: dict[str, str], home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``deonticbench eval ARGS`` as a user runs it, against ``urls``, in this process
    (``in_process``: its start-up paid once per worker)."""
    return in_process.run(["eval", *args], env=env_with(home, urls), cwd=home)


def eval_cli(fake: FakeProvider, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``deonticbench eval ARGS`` against the fake."""
    urls = {"ANTHROPIC_BASE_URL": fake.url, "OPENAI_BASE_URL": fake.openai_url}
    return eval_at(urls, home, *args)


def dry_run_json(fake: FakeProvider, home: Path, *args: str) -> dict[str, Any]:
    done = eval_cli(fake, home, *args, "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert isinstance(doc, dict)
    return doc


def results_of(run: Path) -> dict[str, Any]:
    doc = json.loads((run / "results.json").read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def reading_agent(turns: int) -> Callable[[FakeRequest], str | ToolTurn]:
    """An agent that reads the statutes, then the case again and again, and submits at
    turn ``turns - 1``: each turn re-sends a growing conversation, as real trials do."""

    def respond(request: FakeRequest) -> str | ToolTurn:
        if not request.body.get("tools"):
            return "no tools offered"
        turn = sum(1 for m in request.body.get("messages") or [] if m.get("role") == "assistant")
        if turn == 0:
            return ToolTurn("Reading the statutes.", [("read_file", {"path": "statute.txt"})])
        if turn < turns - 1:
            # A limit that differs each turn: the same call again would meet the repeat guard.
            read = {"path": "case.txt", "limit": 400 + turn}
            return ToolTurn(f"Reading the case ({turn}).", [("read_file", read)])
        # submit needs a solution.pl first (a guard rail): an empty one, then submit.
        empty = {"path": "solution.pl", "content": "% no program\n"}
        return ToolTurn("", [("write_file", empty), ("submit", {})])

    return respond
