"""Harbor task names: one scheme for our exported tasks and DAR's.

DAR names a task ``deonticbench-{mode}-{source}``, where mode is ``direct``, ``zeroshot``
or ``fewshot`` and source is ``{subdomain}/{id}`` with ``/`` and ``_`` turned into ``-``
and lower-cased (``sara_numeric/tax_case_10`` -> ``deonticbench-direct-sara-numeric-
tax-case-10``); the subdomain is the dataset's configuration name (our
``Domain.hub_config``).  Our export uses the same scheme, so a task of ours and DAR's
task for the same case and framing share a name and their runs compare task by task.
A name is matched back to a case by normalising every case id the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ...data.cases import Case
from ...data.domains import DOMAINS, Domain
from ...errors import DataError
from ...vocabulary.modes import Mode

PREFIX = "deonticbench-"
FRAMINGS: Mapping[str, Mode] = {
    "direct": "agent-direct",
    "zeroshot": "agent-zero-shot",
    "fewshot": "agent-few-shot",
}
"""DAR's framing in a task name -> our agentic mode."""
PROMPT_MODES: Mapping[str, str] = {
    "direct": "direct",
    "zero-shot": "zeroshot",
    "few-shot": "fewshot",
}
"""``--prompt-mode`` of ``export --format harbor`` -> the framing in a task name."""


def normalise(text: str) -> str:
    return text.replace("/", "-").replace("_", "-").lower()


def task_name(domain: Domain, case_id: str, framing: str) -> str:
    return f"{PREFIX}{framing}-{normalise(f'{domain.hub_config}/{case_id}')}"


class TaskIndex:
    """Every case of the given domains under every framing, by task name."""

    def __init__(self, cases: Iterable[Case]) -> None:
        by_name = dict(DOMAINS)
        self._tasks: dict[str, tuple[Domain, Case, Mode]] = {}
        for case in cases:
            domain = by_name[case.domain]
            for framing, mode in FRAMINGS.items():
                name = task_name(domain, case.id, framing)
                if name in self._tasks:
                    other = self._tasks[name][1]
                    raise DataError(
                        f"cases {other.domain}/{other.id} and {case.domain}/{case.id} "
                        f"have the same Harbor task name {name!r}."
                    )
                self._tasks[name] = (domain, case, mode)

    def find(self, name: str) -> tuple[Domain, Case, Mode] | None:
        """The domain, case and mode a task name stands for (None if none here)."""
        return self._tasks.get(name.strip().lower())


def framing_of(name: str) -> str | None:
    """The framing in a task name of the ``deonticbench-{framing}-...`` shape."""
    if not name.startswith(PREFIX):
        return None
    head = name[len(PREFIX) :].split("-", 1)[0]
    return head if head in FRAMINGS else None


__all__ = ["FRAMINGS", "PROMPT_MODES", "TaskIndex", "framing_of", "normalise", "task_name"]
