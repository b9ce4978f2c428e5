"""Rebuild the prompts a run sent, from the templates and the cases, and check each one
against the hash its record holds.

Records keep only ``prompt_hash`` (the prompts would be most of a run's size), so the
report renders them again the way the runner did: the run's plan (cases, modes, seed and
so few-shot exemplars) gives the first prompt; a retry's prompt is the previous one plus
the model's response and the feedback on the program as it ran.  A prompt is shown as
*verified* only when its sha256 equals the recorded one, so a changed template or data
revision shows up as a mismatch rather than as a silently different prompt.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.domains import get_domain
from ..data.sources import DATA_ENV, DataSource, resolve_source
from ..errors import DataError, DeonticBenchError
from ..prompting import NO_PROGRAM_REPORT, Prompt, render_feedback, solver_report
from ..prompting.plan import Unit, plan_run
from ..settings.given import SettingParts
from ..store.record import Record
from ..store.spec import RunSpec


@dataclass
class PromptBook:
    """The first prompt of every domain x case x mode of a run, when it could be rebuilt."""

    units: dict[tuple[str, str, str], Unit] = field(default_factory=dict)
    problem: str | None = None
    """Why prompts could not be rebuilt (None: they could)."""

    def chain(self, record: Record) -> list[Prompt | None]:
        """The prompt of each attempt of ``record``, as the runner built it."""
        unit = self.units.get((record.domain, record.case_id, record.mode))
        if unit is None:
            return [None] * len(record.attempts)
        try:
            return self._chain(unit, record)
        except (DeonticBenchError, ValueError):
            return [None] * len(record.attempts)  # shown as "could not be rebuilt"

    def _chain(self, unit: Unit, record: Record) -> list[Prompt | None]:
        current: Prompt | None = unit.render()
        out: list[Prompt | None] = []
        domain = get_domain(record.domain)
        for attempt in record.attempts:
            out.append(current)
            if current is None:
                continue
            if attempt.error is not None or attempt.response is None:
                continue  # a failed request is sent again with the same prompt
            if record.mode == "direct":
                current = None
            elif attempt.program is None:
                current = render_feedback(current, attempt.response, None, NO_PROGRAM_REPORT)
            elif attempt.execution is None:
                current = None
            else:
                x = attempt.execution
                status = str(x.get("status"))
                report = solver_report(
                    domain,
                    status=status,
                    limit=x.get("limit"),
                    stdout=str(x.get("stdout") or ""),
                    stderr=str(x.get("stderr") or ""),
                    no_answer=attempt.abstain_reason if status == "ok" else None,
                )
                current = render_feedback(current, attempt.response, attempt.program, report)
        return out


def _source(config: dict[str, Any], data_dir: Path | None) -> DataSource:
    if data_dir is not None:
        return resolve_source(data_dir)
    data = config.get("data") or {}
    if data.get("kind") == "hub":
        revision = data.get("commit") or data.get("revision") or "main"
        return resolve_source(hub=True, revision=str(revision))
    recorded = data.get("path")
    if recorded and Path(recorded, "data").is_dir():
        return resolve_source(recorded)
    # The run was made on another machine: the mirror named by DEONTICBENCH_DATA, and
    # never the hub, which this run did not read from.
    if os.environ.get(DATA_ENV):
        return resolve_source()
    where = f"its data folder {recorded} is not here" if recorded else "it records no data source"
    raise DataError(f"{where}; give --data-dir or set {DATA_ENV}")


def prompt_book(
    config: dict[str, Any], records: Iterable[Record], data_dir: Path | None = None
) -> PromptBook:
    """Plan the run again (cases and exemplars) so that its prompts can be rendered."""
    records = list(records)
    if not records:
        return PromptBook()
    domains = list(dict.fromkeys(r.domain for r in records))
    modes = list(dict.fromkeys(r.mode for r in records))
    try:
        # What the run was: its split and few-shot seed, read as the library reads them.
        spec = RunSpec.from_config(config, strict=False)
        plan = plan_run(
            [get_domain(d) for d in domains],
            split=spec.split,
            modes=modes,
            source=_source(config, data_dir),
            seed=spec.exemplar_seed,
            case_ids={r.case_id for r in records},
            exemplars=spec.exemplars,
            distractors=spec.distractors,
            given_parts=SettingParts(spec.limits),
            protocol=spec.protocol,  # a paper run's prompts are upstream's
        )
    except (DeonticBenchError, OSError) as exc:
        return PromptBook(problem=f"prompts were not rebuilt: {exc}")
    units: dict[tuple[str, str, str], Unit] = {
        (u.domain.name, u.case.id, u.mode): u for u in plan.units
    }
    return PromptBook(units=units)
