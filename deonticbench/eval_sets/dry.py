"""A set's dry run: every run's ``eval --dry-run`` figures (calls, prompt tokens and
dollars, counted and priced exactly as ``eval --dry-run`` does for that run alone) and
the set's totals, as text or one JSON document.  Nothing is sent and nothing written.

A run whose model has no price in the registry (a local server) counts as zero dollars,
and the set names it; output tokens cannot be known beforehand, so dollars of output
appear only for a stated ``assume_output_tokens`` per sample."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..api import dry_run
from ..errors import DeonticBenchError
from ..models.base import cacheable
from .plan import PlannedRun, SetPlan

__all__ = ["SetDryRun", "set_dry_run"]


@dataclass(frozen=True)
class RunEstimate:
    run: PlannedRun
    doc: dict[str, Any]
    """``eval --dry-run --json``'s object for this run."""

    @property
    def usd(self) -> float | None:
        """The run's dollars: input and, when assumed, output; None when unpriced."""
        return self._dollars(self.doc.get("usd_total", self.doc.get("usd_input")))

    @property
    def usd_input(self) -> float | None:
        """The first attempts' input in dollars; None when unpriced."""
        return self._dollars(self.doc.get("usd_input"))

    def _dollars(self, figure: Any) -> float | None:
        if not cacheable(self.run.prepared.model):  # reference, replay: nothing is billed
            return 0.0
        return None if figure is None else float(figure)


@dataclass(frozen=True)
class SetDryRun:
    runs: tuple[RunEstimate, ...]
    assume_output_tokens: int | None
    max_usd: float | None
    spent_usd: float
    """What the set's ledger says was spent already (a resumed set)."""

    @property
    def unpriced(self) -> list[str]:
        return [r.run.name for r in self.runs if r.usd is None]

    def total(self, key: str) -> float:
        return sum(float(r.doc.get(key) or 0) for r in self.runs)

    @property
    def usd(self) -> float:
        return sum(r.usd or 0.0 for r in self.runs)

    def to_json(self) -> dict[str, Any]:
        runs = []
        for r in self.runs:
            runs.append(
                {
                    "name": r.run.name,
                    "model": r.run.prepared.model.spec,
                    "lane": r.run.lane,
                    "folder": str(r.run.prepared.out),
                    "usd": None if r.usd is None else round(r.usd, 6),
                    **r.doc,
                }
            )
        total: dict[str, Any] = {
            "calls": int(self.total("calls")),
            "prompt_tokens": int(self.total("prompt_tokens")),
            "samples_left": int(self.total("samples_left")),
            "usd_input": round(self.total("usd_input"), 6),
            "usd": round(self.usd, 6),
        }
        if self.assume_output_tokens is not None:
            total["usd_output"] = round(self.total("usd_output"), 6)
        return {
            "runs": runs,
            "total": total,
            "assume_output_tokens": self.assume_output_tokens,
            "unpriced_runs": self.unpriced,
            "unpriced_counted_as": 0.0,
            "spent_usd": round(self.spent_usd, 6),
            "max_usd": self.max_usd,
        }

    def text(self) -> str:
        wide = max([4, *(len(r.run.name) for r in self.runs)])
        lines = [
            f"{'run':<{wide}}  {'calls':>7}  {'prompt tokens':>13}  {'samples':>7}  "
            f"{'usd input':>10}  {'usd':>10}  model"
        ]
        for r in self.runs:
            usd_in = r.usd_input
            lines.append(
                f"{r.run.name:<{wide}}  {r.doc['calls']:>7,}  {r.doc['prompt_tokens']:>13,}  "
                f"{r.doc['samples_left']:>7,}  {_usd(usd_in):>10}  {_usd(r.usd):>10}  "
                f"{r.run.prepared.model.spec}"
            )
        lines.append(
            f"{'set':<{wide}}  {int(self.total('calls')):>7,}  "
            f"{int(self.total('prompt_tokens')):>13,}  {int(self.total('samples_left')):>7,}  "
            f"{_usd(self.total('usd_input')):>10}  {_usd(self.usd):>10}"
        )
        if self.assume_output_tokens is None:
            lines.append(
                "dollars are the first attempts' input; give --assume-output-tokens N for "
                "output too (retries and agentic turns after the first cannot be known)."
            )
        else:
            lines.append(
                f"dollars include {self.assume_output_tokens:,} output tokens per sample "
                "(an assumption); retries and agentic turns after the first are not counted."
            )
        if self.unpriced:
            lines.append(
                f"no prices for {', '.join(self.unpriced)}: counted as $0 (eval/models.yaml "
                "has none for their models)."
            )
        if self.spent_usd:
            lines.append(f"spent by this set already: {_usd(self.spent_usd)}.")
        if self.max_usd is not None:
            fits = self.spent_usd + self.usd <= self.max_usd
            lines.append(
                f"--max-usd {self.max_usd:g}: the estimate "
                + ("fits." if fits else "does not fit; the set would stop at the cap.")
            )
        return "\n".join(lines)

    def render(self, *, as_json: bool) -> str:
        return json.dumps(self.to_json(), indent=2) if as_json else self.text()


def _usd(value: float | None) -> str:
    return "unpriced" if value is None else f"${value:,.4f}"


def set_dry_run(
    plan: SetPlan, *, assume_output_tokens: int | None, max_usd: float | None, spent_usd: float
) -> SetDryRun:
    """Every run's dry run, as ``eval --dry-run`` makes it, and the set's sums."""
    estimates = []
    for run in plan.runs:
        try:
            est = dry_run(run.prepared)
        except DeonticBenchError as exc:  # a backend's extra, say: name the entry
            raise type(exc)(f"{run.entry.where}: {exc}") from None
        doc = est.to_json(
            batch=run.prepared.options.batch, assume_output_tokens=assume_output_tokens
        )
        estimates.append(RunEstimate(run, doc))
    return SetDryRun(tuple(estimates), assume_output_tokens, max_usd, spent_usd)
