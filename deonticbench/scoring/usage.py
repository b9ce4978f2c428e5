"""What each domain x mode cost to get its score: tokens, turns, tool calls, wall time,
estimated cost, and the score per million tokens (docs/agents.md, "Cost").

For every mode, prompted or agentic, so that the two can be set side by side: a prompted
sample's turns are its attempts (one model call each) and it calls no tool; an agentic
sample is one trial (``AgentInfo``).  Means are per sample (one trial answers one case;
K samples per case).  The cost is what the samples were billed, priced by the one rule
results.json uses (``results.attempts_cost``: response-cache hits free, prompt-cache
reads and writes and batches at their own rates), so the rows of a run add up to its
results.json figure; or the cost an imported trial reported.
``metric_per_mtok`` is the domain's metric in percent divided by the mean tokens per
sample in millions: how much score a million tokens per case buy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..data.domains import DISPLAY_ORDER
from ..store.record import Record
from ..vocabulary.modes import MODE_TITLES
from .results import attempts_cost
from .scores import GroupScore, RunScores
from .tables import Table


@dataclass(frozen=True)
class UsageRow:
    run: str
    model: str
    domain: str
    mode: str
    n_samples: int
    tokens_in: float
    """Mean prompt tokens per sample (summed over its turns or attempts)."""
    tokens_out: float
    turns: float
    tool_calls: float
    wall_s: float
    """Mean wall time per sample: the trial's, or a prompted sample's model latency plus
    program time."""
    cost_usd: float | None
    """What all the samples were billed (``results.attempts_cost``); None when no price
    is known."""
    metric: str
    point: float
    """The metric (0..1) on the final stage, the stage those tokens bought."""
    metric_per_mtok: float | None

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.columns()}


def _sample_wall(record: Record) -> float:
    if record.agent is not None:
        return record.agent.wall_s
    total = 0.0
    for attempt in record.attempts:
        total += attempt.latency_s
        if attempt.execution:
            total += float(attempt.execution.get("wall_s") or 0.0)
    return total


def _cost(model: str, records: Sequence[Record]) -> float | None:
    reported = [r.agent.cost_usd for r in records if r.agent and r.agent.cost_usd is not None]
    if reported and len(reported) == len(records):
        return float(sum(reported))
    cost = attempts_cost(model, (a for r in records for a in r.attempts))
    return None if cost is None else cost.usd


def final_group(s: RunScores, domain: str, mode: str) -> GroupScore | None:
    """The group whose score a setting's tokens bought: the run's last stage (the
    first when the group was not scored at the last)."""
    return s.group(domain, mode, s.stages[-1]) or s.group(domain, mode, "first")


def usage_rows(scores: Sequence[RunScores]) -> list[UsageRow]:
    rows: list[UsageRow] = []
    for s in scores:
        for domain in DISPLAY_ORDER:
            for mode in s.modes:
                group = final_group(s, domain, mode)
                records = [r for r in s.run.records if r.domain == domain and r.mode == mode]
                if group is None or not records:
                    continue
                n = len(records)
                turns = sum(r.agent.turns if r.agent else len(r.attempts) for r in records)
                calls = sum(sum(r.agent.tool_calls.values()) if r.agent else 0 for r in records)
                tin = sum(a.tokens_in for r in records for a in r.attempts)
                tout = sum(a.tokens_out for r in records for a in r.attempts)
                per_sample = (tin + tout) / n
                point = group.estimate.point
                rows.append(
                    UsageRow(
                        run=s.run.name,
                        model=s.run.model,
                        domain=domain,
                        mode=mode,
                        n_samples=n,
                        tokens_in=tin / n,
                        tokens_out=tout / n,
                        turns=turns / n,
                        tool_calls=calls / n,
                        wall_s=sum(_sample_wall(r) for r in records) / n,
                        cost_usd=_cost(s.run.model, records),
                        metric=group.metric,
                        point=point,
                        metric_per_mtok=(
                            100 * point / (per_sample / 1e6)
                            if per_sample > 0 and math.isfinite(point)
                            else None
                        ),
                    )
                )
    return rows


def usage_table(rows: Sequence[UsageRow]) -> Table:
    headers = ["Model", "Domain", "Setting", "n", "tok in", "tok out", "turns"]
    headers += ["tool calls", "wall s", "cost $", "score %", "score/Mtok"]
    out = []
    for r in rows:
        out.append(
            [
                r.model,
                r.domain,
                MODE_TITLES.get(r.mode, r.mode),
                str(r.n_samples),
                f"{r.tokens_in:.0f}",
                f"{r.tokens_out:.0f}",
                f"{r.turns:.1f}",
                f"{r.tool_calls:.1f}",
                f"{r.wall_s:.2f}",
                "-" if r.cost_usd is None else f"{r.cost_usd:.4f}",
                f"{100 * r.point:.1f}" if math.isfinite(r.point) else "nan",
                "-" if r.metric_per_mtok is None else f"{r.metric_per_mtok:.0f}",
            ]
        )
    return Table(
        headers,
        out,
        title="Cost of each setting, means per sample (cost $: all samples, as billed; "
        "score %: the point value, not Table 2's bootstrap mean)",
    )
