"""What ``deonticbench validate`` prints of its reports: a table per domain with each
disagreement and abstention under it, or one JSON document."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .validate import DomainReport


def validate_json(
    reports: Sequence[DomainReport], split: str, sandbox: str, executor: str, seconds: float
) -> dict[str, Any]:
    return {
        "split": split,
        "sandbox": sandbox,
        "executor": executor,
        "seconds": round(seconds, 3),
        "domains": {r.domain: r.to_json() for r in reports},
    }


def validate_lines(
    reports: Sequence[DomainReport], split: str, sandbox: str, executor: str, seconds: float
) -> list[str]:
    header = f"{'domain':<14}{'cases':>7}{'agree':>7}{'disagree':>10}{'abstain':>9}{'seconds':>9}"
    out = [
        f"validate: reference programs on the {split} split ({sandbox} sandbox, "
        f"{executor} executor)",
        header,
        "-" * len(header),
    ]
    for r in reports:
        out.append(
            f"{r.domain:<14}{r.cases:>7}{r.agree:>7}{r.disagree:>10}{r.abstain:>9}{r.seconds:>9.2f}"
        )
    out.append(f"total wall time {seconds:.2f} s")
    for r in reports:
        for c in r.checks:
            if c.outcome == "wrong":
                out.append(
                    f"  disagree {r.domain} {c.case_id}: program {_show(c.answer)}, gold {c.gold}"
                )
            elif c.outcome == "abstain":
                out.append(f"  abstain  {r.domain} {c.case_id}: {c.reason} [{c.status}]")
    return out


def _show(value: float | str | None) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
