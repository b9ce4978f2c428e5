"""``results.json``: one file that says what a run scored and what it cost.

Written into the run folder at the end of every ``eval`` and by ``score --out``.  It is
the machine-readable summary a researcher keeps next to a paper's numbers: the long
table (one row per domain x mode x stage), the run's totals (requests, tokens, wall
time, an estimated cost when ``eval/models.yaml`` knows the model's prices), the command
line, the versions and the data revision.  The schema is documented field by field in
docs/schemas.md; ``RESULTS_SCHEMA`` is bumped whenever a field changes meaning.

Everything here is read from the records and the run's config.json; nothing is
re-scored differently from ``deonticbench score`` (the rows are ``tables.long_rows``).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..models.registry import ZERO_COST, Cost, Prices, billed_split, model_prices, price_split
from ..store.environment import environment_facts
from ..store.record import Attempt
from ..store.run import Run
from .dar_readings import readings_json
from .scores import RunScores
from .tables import long_rows
from .upstream_bootstrap import upstream_bootstrap

RESULTS_FILE = "results.json"
RESULTS_SCHEMA = 1
PRICE_IN = "usd_per_mtok_in"
PRICE_OUT = "usd_per_mtok_out"
"""Registry keys (eval/models.yaml) of a model's list price per million tokens."""


@dataclass(frozen=True)
class Totals:
    """What a run consumed, summed over its records."""

    samples: int
    attempts: int
    requests: int
    """Requests sent (not answered from the cache).  The K samples of a case share their
    first request (``n=K``), so those count once; an agentic trial sends one per turn."""
    response_hits: int
    """Attempts answered from the response cache (not sent; unlike prompt-cache reads,
    which were sent and billed at the cache-read price)."""
    failed_requests: int
    tokens_in: int
    tokens_out: int
    tokens_in_paid: int
    tokens_out_paid: int
    """Tokens of the responses that were requested, not read from the cache."""
    model_latency_s: float
    program_wall_s: float
    cache_read_paid: int = 0
    cache_write_paid: int = 0
    """Of ``tokens_in_paid``, those the provider read from / wrote to its prompt cache."""
    paid_use: Mapping[bool, tuple[int, int, int, int, int]] | None = None
    """Paid tokens by whether they went through a provider batch: (uncached input,
    5-minute cache writes, 1-hour cache writes, cache reads, output), for the cost."""

    def to_json(self) -> dict[str, Any]:
        # The prompt-cache counts only when a provider reported caching: runs without it
        # (reference, replay, local) keep the totals they always had.
        cache = (
            {
                "cache_read_tokens_paid": self.cache_read_paid,
                "cache_write_tokens_paid": self.cache_write_paid,
            }
            if self.cache_read_paid or self.cache_write_paid
            else {}
        )
        return {
            "samples": self.samples,
            "attempts": self.attempts,
            "requests": self.requests,
            "cached_responses": self.response_hits,
            "failed_requests": self.failed_requests,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "tokens_in_paid": self.tokens_in_paid,
            "tokens_out_paid": self.tokens_out_paid,
            **cache,
            "model_latency_s": round(self.model_latency_s, 3),
            "program_wall_s": round(self.program_wall_s, 3),
        }


PaidUse = Mapping[bool, tuple[int, int, int, int, int]]
"""Paid tokens by whether they went through a provider batch: (uncached input, 5-minute
cache writes, 1-hour cache writes, cache reads, output)."""


def paid_use(attempts: Iterable[Attempt]) -> dict[bool, tuple[int, int, int, int, int]]:
    """What the attempts were billed for, by provider batch or not.  A response-cache
    hit was not sent, so it is not billed; the rest is split the way providers bill it
    (``tokens_in`` counts the cache reads and writes too)."""
    use: dict[bool, list[int]] = {}
    for attempt in attempts:
        if attempt.cached:
            continue
        parts = use.setdefault(attempt.batch, [0, 0, 0, 0, 0])
        split = billed_split(
            attempt.tokens_in,
            attempt.cache_read_tokens,
            attempt.cache_write_tokens,
            attempt.cache_write_1h_tokens,
            attempt.tokens_out,
        )
        for i, count in enumerate(split):
            parts[i] += count
    return {batch: (p[0], p[1], p[2], p[3], p[4]) for batch, p in use.items()}


def price_paid(prices: Prices, use: PaidUse) -> Cost | None:
    """``price_tokens`` over ``paid_use``: each batch flag at its own rates.  None when
    a figure the tokens need is not in the registry."""
    total: Cost | None = ZERO_COST
    for batch, split in sorted(use.items()):
        cost = price_split(prices, split, batch=batch)
        total = None if cost is None or total is None else total + cost
    return total


def attempts_cost(spec: str, attempts: Iterable[Attempt]) -> Cost | None:
    """The one price of some attempts of a run of ``spec``: what the provider billed for
    them at eval/models.yaml's prices (response-cache hits free, prompt-cache reads and
    writes and batches at their own rates).  results.json, ``score``'s usage rows, the
    report and the dry run (through ``price_tokens``) all price with this rule; None for
    a model without prices or tokens without a price."""
    prices = model_prices(spec)
    return None if prices is None else price_paid(prices, paid_use(attempts))


def run_totals(run: Run) -> Totals:
    first_draws: set[tuple[str, str, str]] = set()
    requests = attempts = cached = failed = 0
    tin = tout = tin_paid = tout_paid = 0
    latency = program = 0.0
    for record in run.records:
        for attempt in record.attempts:
            attempts += 1
            tin += attempt.tokens_in
            tout += attempt.tokens_out
            latency += attempt.latency_s
            if attempt.execution:
                program += float(attempt.execution.get("wall_s") or 0.0)
            if attempt.error:
                failed += 1
            if attempt.cached:
                cached += 1
                continue
            tin_paid += attempt.tokens_in
            tout_paid += attempt.tokens_out
            if record.agent is not None:
                requests += record.agent.turns  # a trial's turns are its requests
                continue
            if attempt.index == 0:
                key = (record.domain, record.case_id, record.mode)
                if key in first_draws:
                    continue
                first_draws.add(key)
            requests += 1
    use = paid_use(a for r in run.records for a in r.attempts)
    return Totals(
        samples=len(run.records),
        attempts=attempts,
        requests=requests,
        response_hits=cached,
        failed_requests=failed,
        tokens_in=tin,
        tokens_out=tout,
        tokens_in_paid=tin_paid,
        tokens_out_paid=tout_paid,
        model_latency_s=latency,
        program_wall_s=program,
        cache_read_paid=sum(p[3] for p in use.values()),
        cache_write_paid=sum(p[1] + p[2] for p in use.values()),
        paid_use=use,
    )


def estimated_cost(spec: str, totals: Totals) -> dict[str, Any] | None:
    """What the paid tokens cost at eval/models.yaml's list prices, in parts (uncached
    input, cache writes, cache reads, output, and what batches took off); None for a
    model without prices, and ``usd`` None when a figure the tokens need is unknown."""
    prices = model_prices(spec)
    if prices is None:
        return None
    total = price_paid(prices, totals.paid_use or {})
    doc: dict[str, Any] = {
        PRICE_IN: prices.input,
        PRICE_OUT: prices.output,
        "prices": prices.to_json(),
        "basis": "paid tokens (response-cache hits excluded) at the list prices in "
        "eval/models.yaml, prompt-cache reads and writes and batches at their own prices",
    }
    if total is None:
        doc["usd"] = None
        doc["missing"] = (
            f"eval/models.yaml has no price for some of these tokens ({prices.entry}: "
            "cache reads, cache writes or the batch discount): tokens only, no dollar figure"
        )
        return doc
    return {**total.to_json(4), **doc}


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _previous_wall_time(path: Path) -> float | None:
    try:
        old = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    value = old.get("totals", {}).get("wall_time_s") if isinstance(old, dict) else None
    return float(value) if isinstance(value, int | float) else None


def build_results(
    scores: RunScores,
    *,
    command: Sequence[str] | None = None,
    wall_time_s: float | None = None,
    sections: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The results.json document of one scored run; ``sections`` adds optional top-level
    sections computed by later stages (``reliability``, ``costs``: docs/schemas.md)."""
    run = scores.run
    config = run.config
    totals = run_totals(run)
    total_json = totals.to_json()
    total_json["wall_time_s"] = None if wall_time_s is None else round(wall_time_s, 3)
    cost = estimated_cost(run.model, totals)
    upstream, upstream_notes = upstream_bootstrap(run)
    # DAR's scorer's figures of the same final states, beside the harness reader's: only
    # for a run that holds DAR's view (--protocol dar, import-harbor); any other run's
    # file holds no such key.
    dar = readings_json(scores)
    return {
        "schema": RESULTS_SCHEMA,
        "harness": "deonticbench",
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "run": run.name,
        "model": run.model,
        "split": config.get("split"),
        "k": config.get("k"),
        "attempts": config.get("attempts"),
        "seed": config.get("seed"),
        "bootstrap": scores.bootstrap,
        "bootstrap_seed": scores.seed,
        "stages": list(scores.stages),
        "results": [
            {key: _clean(value) for key, value in row.items() if key not in ("model", "run")}
            for row in long_rows([scores])
        ],
        # Upstream's script's figures for the same replies (scoring.upstream_bootstrap):
        # beside the paper's B.3 figures above, never instead of them.
        "upstream_bootstrap": upstream,
        **({"dar_readings": dar} if dar is not None else {}),
        "totals": total_json,
        "estimated_cost": cost,
        "command": list(sys.argv if command is None else command),
        "run_commands": [s.get("argv") for s in config.get("sessions", []) if s.get("argv")],
        "versions": config.get("environment") or environment_facts(),
        "report_versions": environment_facts() if config.get("environment") else None,
        "data": config.get("data"),
        "notes": [*scores.notes, *upstream_notes],
        **(sections or {}),
    }


def write_results(
    scores: RunScores,
    path: str | os.PathLike[str] | None = None,
    *,
    command: Sequence[str] | None = None,
    wall_time_s: float | None = None,
    sections: Mapping[str, Any] | None = None,
) -> Path:
    """Write results.json (default: into the run folder) atomically; returns its path.

    A run resumed over several sessions adds up their wall times: the previous file's
    ``wall_time_s`` is carried forward when this call knows the time of its own session;
    without one (``score --out``) the previous value is kept as it was.
    """
    target = Path(path) if path is not None else scores.run.path / RESULTS_FILE
    previous = _previous_wall_time(scores.run.path / RESULTS_FILE)
    wall = previous if wall_time_s is None else wall_time_s + (previous or 0.0)
    doc = build_results(scores, command=command, wall_time_s=wall, sections=sections)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return target
