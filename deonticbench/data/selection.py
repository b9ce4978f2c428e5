"""Which cases of a split a run takes: ``--limit`` (a count or a range) and
``--sample-id`` (chosen case ids), as inspect and lm-evaluation-harness users expect."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from typing import TypeVar

from ..errors import ConfigError

CaseLimit = int | tuple[int, int]
"""``N``: the first N cases; ``(a, b)``: cases a to b, counted from 1, both included."""

_RANGE = re.compile(r"^\s*(\d+)\s*-\s*(\d+)\s*$")

T = TypeVar("T")


def parse_limit(text: str | None) -> CaseLimit | None:
    """``"10"`` -> 10; ``"11-20"`` -> (11, 20); None -> None.  Bad input: ConfigError."""
    if text is None:
        return None
    value = text.strip()
    if value.isdigit():
        count = int(value)
        if count < 1:
            raise ConfigError(f"--limit must be at least 1, not {count}.")
        return count
    match = _RANGE.match(value)
    if not match:
        raise ConfigError(
            f"--limit takes a count (10) or a range of cases counted from 1 (11-20), not {text!r}."
        )
    start, end = int(match.group(1)), int(match.group(2))
    if start < 1 or end < start:
        raise ConfigError(f"--limit {text}: a range runs from 1 upwards, first <= last.")
    return start, end


def parse_ids(values: Iterable[str]) -> list[str]:
    """Case ids from repeated or comma-separated ``--sample-id`` values, each once."""
    ids = [part.strip() for value in values for part in value.split(",") if part.strip()]
    return list(dict.fromkeys(ids))


def select_cases(
    cases: Sequence[T],
    *,
    limit: CaseLimit | None = None,
    case_ids: Collection[str] | None = None,
) -> list[T]:
    """The cases a run takes, in the split's order: chosen ids, then the limit."""
    chosen = list(cases)
    if case_ids:
        wanted = set(case_ids)
        chosen = [c for c in chosen if getattr(c, "id", None) in wanted]
    if limit is None:
        return chosen
    if isinstance(limit, int):
        return chosen[:limit]
    start, end = limit
    return chosen[start - 1 : end]


def check_ids_found(case_ids: Collection[str] | None, found: Iterable[str]) -> None:
    """Every ``--sample-id`` must name a case of the chosen domains and split."""
    if not case_ids:
        return
    missing = sorted(set(case_ids) - set(found))
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise ConfigError(
            f"--sample-id {shown}: no such case in the chosen domains and split "
            "(ids are listed in records.jsonl's case_id field)."
        )
