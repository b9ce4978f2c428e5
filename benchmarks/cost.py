"""Cost benchmark: what the hard protocol's first attempts cost in input, per
priced model, and how much of the input the providers' prompt caches serve.

Part 1, the hard protocol (all five domains, the paper's three modes, each domain's K,
first attempts): for every model eval/models.yaml prices, the dry run's first-attempt
input dollars uncached / with prompt caching / with caching and batches (no call is
sent; tokens are cl100k, the dry run's unit).  Output, reasoning tokens, retries and
agentic turns after the first cannot be known beforehand and are not in it.

Part 2, measured on the loopback fakes that bill as the providers document
(tests/support/fakeproviders.py), through ``deonticbench eval`` and the real clients:
smoke SARA numeric + airline, three modes, K = 3, attempts 1: the share of input tokens
read from the cache for claude-sonnet-4-5 (with and without --no-prompt-cache) and
gpt-4.1; agentic trials (airline agent-zero-shot, a scripted agent of 10 turns); and the
wall time the order of sending adds at a fixed latency per call.

Usage: python benchmarks/cost.py [--skip-hard] [--skip-fakes] [--latency S]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from cost_runs import DATA, KEY, claude_stand_in, eval_cli, o200k, price_bill, reading_agent  # noqa: E402
from fakeproviders import FakeProvider  # noqa: E402

from deonticbench import RunOptions  # noqa: E402
from deonticbench.api import prepare  # noqa: E402
from deonticbench.data.cases import resolve_source  # noqa: E402
from deonticbench.evaluation.dryrun import estimate  # noqa: E402
from deonticbench.models.base import Model  # noqa: E402
from deonticbench.models.registry import load_registry, prices_of  # noqa: E402
from deonticbench.models.tokens import count_prompt_tokens  # noqa: E402
from deonticbench.store.spec import RunSpec  # noqa: E402
from deonticbench.vocabulary.chat import Message  # noqa: E402
from deonticbench.vocabulary.modes import MODES  # noqa: E402

# A registry key is a glob: the model each priced entry is shown with.
SHOWN = {
    "gpt-4.1-mini*": "openai:gpt-4.1-mini",
    "gpt-4.1*": "openai:gpt-4.1",
    "o4-mini*": "openai:o4-mini",
    "claude-sonnet-4-5*": "anthropic:claude-sonnet-4-5",
    "claude-sonnet-4-6*": "anthropic:claude-sonnet-4-6",
    "claude-opus-4-7*": "anthropic:claude-opus-4-7",
    "claude-opus-4-[56]*": "anthropic:claude-opus-4-6",
    "claude-haiku-4-5*": "anthropic:claude-haiku-4-5",
}
SMOKE = (
    "--split", "smoke", "--domains", "sara_numeric,airline", "--modes",
    "direct,zero-shot,few-shot", "-k", "3", "--attempts", "1",
)  # fmt: skip


def priced_models() -> list[str]:
    models = load_registry().get("models") or {}
    out = []
    for key, entry in models.items():
        if prices_of(entry, str(key)) is None:
            continue
        out.append(SHOWN.get(str(key), f"openai:{key}"))
    return out


def hard_protocol(models: Sequence[str]) -> None:
    os.environ.setdefault("ANTHROPIC_API_KEY", KEY)  # never sent: nothing is sent
    os.environ.setdefault("OPENAI_API_KEY", KEY)

    counts: dict[str, int] = {}

    def count(model: Model, messages: Sequence[Message]) -> int:
        # Every priced model is counted in cl100k: count each prompt once for all of them.
        text = "\x00".join(f"{m.role}\x01{m.content}" for m in messages)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        if digest not in counts:
            counts[digest] = count_prompt_tokens(model, messages)
        return counts[digest]

    print("hard protocol, first attempts, input only (dry run; cl100k tokens):")
    print(f"{'model':<30} {'calls':>6} {'prompt tokens':>14} {'uncached':>10} "
          f"{'cached':>10} {'cached+batch':>13} {'read share':>10}")  # fmt: skip
    source = resolve_source(DATA)
    with tempfile.TemporaryDirectory() as tmp:
        for spec_text in models:
            spec = RunSpec(model=spec_text, split="hard", modes=tuple(MODES), data=source)
            prepared = prepare(spec, RunOptions(out=Path(tmp) / "run", fresh=True))
            est = estimate(
                prepared.model,
                prepared.plan,
                count_tokens=count,
                attempts=1,
                sampling=prepared.sampling,
            )

            def usd(caching: bool, batch: bool, est=est) -> str:  # type: ignore[no-untyped-def]
                cost = est.input_cost(caching=caching, batch=batch)
                return "n/a" if cost is None else f"${cost.usd:,.2f}"

            use = est.expected
            share = use.cache_read / use.input if use.input else 0.0
            print(f"{spec_text:<30} {est.calls:>6} {est.prompt_tokens:>14,} "
                  f"{usd(False, False):>10} {usd(True, False):>10} {usd(True, True):>13} "
                  f"{share:>10.1%}")  # fmt: skip


def measured(latency: float) -> None:
    print("\nmeasured on the billing fakes (smoke SARA numeric + airline, 3 modes, K = 3):")
    print(f"{'run':<48} {'calls':>5} {'read share':>10} {'input $':>9} {'uncached $':>10} "
          f"{'wall s':>7}")  # fmt: skip
    runs = [
        ("claude-sonnet-4-5, prompt caching", "anthropic:claude-sonnet-4-5", SMOKE, None),
        ("claude-sonnet-4-5, --no-prompt-cache", "anthropic:claude-sonnet-4-5",
         (*SMOKE, "--no-prompt-cache"), None),
        ("gpt-4.1 (OpenAI caches by itself)", "openai:gpt-4.1", SMOKE, None),
        ("claude-sonnet-4-5, agent-zero-shot, 10 turns", "anthropic:claude-sonnet-4-5",
         ("--split", "smoke", "--domains", "airline", "--modes", "agent-zero-shot", "-k", "2",
          "--limit", "2", "--no-cache"), 10),
    ]  # fmt: skip
    for label, spec, args, turns in runs:
        with (
            tempfile.TemporaryDirectory() as tmp,
            FakeProvider(
                api_key=KEY, tokenizer=o200k(), claude_tokenizer=claude_stand_in()
            ) as fake,
        ):
            if turns is not None:
                fake.responder = reading_agent(turns)
            start = time.monotonic()
            done = eval_cli(fake, Path(tmp), "--model", spec, *args, "--out", str(Path(tmp) / "r"))
            wall = time.monotonic() - start
            assert done.returncode == 0, done.stderr
            bill = price_bill(fake.bill, spec)
            dollars = f"{bill.input_usd:>9.4f} {bill.input_usd_uncached:>10.4f}"
            print(f"{label:<48} {bill.calls:>5} {bill.read_share:>10.1%} {dollars} {wall:>7.1f}")
    print(f"\norder of sending at {latency:.1f} s a call (claude-sonnet-4-5, smoke, as above):")
    pairs = [
        (f"{cache}, --concurrency {c}", (*flag, "--concurrency", str(c)))
        for c in (8, 64)
        for cache, flag in (("prompt caching", ()), ("--no-prompt-cache", ("--no-prompt-cache",)))
    ]
    for label, extra in pairs:
        with (
            tempfile.TemporaryDirectory() as tmp,
            FakeProvider(
                api_key=KEY,
                tokenizer=o200k(),
                claude_tokenizer=claude_stand_in(),
                latency_s=latency,
            ) as fake,
        ):
            start = time.monotonic()
            done = eval_cli(fake, Path(tmp), "--model", "anthropic:claude-sonnet-4-5", *SMOKE,
                            *extra, "--out", str(Path(tmp) / "r"))  # fmt: skip
            wall = time.monotonic() - start
            assert done.returncode == 0, done.stderr
            print(f"  {label:<36} wall {wall:6.1f} s for {len(fake.bill)} calls")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-hard", action="store_true")
    parser.add_argument("--skip-fakes", action="store_true")
    parser.add_argument("--latency", type=float, default=1.0)
    args = parser.parse_args()
    if not args.skip_hard:
        hard_protocol(priced_models())
    if not args.skip_fakes:
        measured(args.latency)


if __name__ == "__main__":
    main()
