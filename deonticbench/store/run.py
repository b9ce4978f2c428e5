"""A run folder opened for reading: its config.json and records, as every later stage
takes them (scoring, analysis, the report, reliability, the upstream bootstrap).

Opening is forgiving, so that a damaged or older folder still scores: a missing,
truncated or corrupt records line is skipped and counted with its reason, duplicate keys
keep the first record, and a config.json that is missing, unreadable or not an object is
left out with a note (``config.read_config_forgiving``).

The policy for older folders (docs/architecture.md), one default per field a config.json
may lack because the version that wrote it did not know the field:

- no ``protocol``: ``harness`` (``vocabulary.protocols.recorded_protocol``: the run was
  made before the paper protocol existed);
- no ``exemplars`` / ``distractors``: ``seeded`` / none (written only when not the default;
  ``paper``, the seeded choice's old name, reads as ``seeded``);
- ``agent.protocol``: the agent's tool mode, which this version keys ``agent.tool_mode``
  (``config.agent_settings``: such a run resumes); likewise a record's
  ``agent.protocol`` (``config.tool_mode_named``);
- no ``case_order``: the cases in id order (the upstream bootstrap says so in a note);
- no ``k``: no planned K, so no note about cases short of it;
- no ``model`` (or no config.json at all): the model named by the first record;
- a malformed field: ``RunSpec.from_config(strict=False)`` leaves it at its default.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..vocabulary.protocols import (
    PROTOCOL_MODES,
    ProtocolName,
    ReaderName,
    check_reader,
    mode_protocol,
    protocol_reader,
    recorded_protocol,
)
from .config import CASE_ORDER_KEY, read_config, read_config_forgiving
from .folder import require_run_folder
from .record import Record
from .records_file import RECORDS_NAME, ReadPolicy, read_records
from .spec import RunSpec


@dataclass
class LoadReport:
    """What loading a run folder skipped, and why."""

    lines: int = 0
    kept: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str | None:
        """One line for the user, or None when nothing was skipped."""
        if not self.skipped:
            return None
        reasons = ", ".join(f"{n} {why}" for why, n in self.skipped.most_common())
        return f"skipped {self.n_skipped} of {self.lines} lines ({reasons})"


@dataclass
class Run:
    path: Path
    config: dict[str, Any]
    records: list[Record]
    report: LoadReport

    @property
    def name(self) -> str:
        return self.path.name

    @cached_property
    def spec(self) -> RunSpec | None:
        """The run's spec as config.json states it (None: the config names no model)."""
        try:
            return RunSpec.from_config(self.config, strict=False)
        except ConfigError:
            return None

    @property
    def model(self) -> str:
        """The model spec from config.json, else from the records."""
        spec = self.spec
        if spec is not None:
            return spec.model
        return self.records[0].model if self.records else "?"

    @property
    def provider(self) -> str | None:
        """config.json's ``model.provider`` (``inspect``, ``harbor``, ``upstream`` for a
        run imported from another tool's outputs), if it names one."""
        model = self.config.get("model")
        provider = model.get("provider") if isinstance(model, dict) else None
        return provider if isinstance(provider, str) else None

    @property
    def protocol(self) -> ProtocolName:
        """The protocol the run followed (config.json; ``harness`` for a run made before
        protocols existed).  Every figure of the run is printed beside it."""
        return recorded_protocol(self.config)

    def reading(self, mode: str) -> ReaderName:
        """The reader the figures of ``mode`` were read with: a re-read's
        (``scoring.rereading.reread_run``), else its protocol's (``mode_protocol``)."""
        return reading_of(self, mode)

    @property
    def split(self) -> str | None:
        """The split config.json names, if it names one."""
        split = self.config.get("split")
        return split if isinstance(split, str) else None

    @property
    def case_order(self) -> dict[str, list[str]]:
        """config.json's case order per domain, in the split's file order (empty when it
        records none: a run made before it was recorded)."""
        value = self.config.get(CASE_ORDER_KEY)
        if not isinstance(value, Mapping):
            return {}
        return {str(d): [str(c) for c in ids] for d, ids in value.items() if isinstance(ids, list)}

    def planned_k(self, domain: str) -> int | None:
        """Samples per case the run asked for (``config.json`` ``k``), if it says."""
        spec = self.spec
        if spec is None or not isinstance(spec.k, tuple):
            return None
        return dict(spec.k).get(domain)

    @property
    def has_retries(self) -> bool:
        return any(len(r.attempts) > 1 for r in self.records)


READING_KEY = "reading"
"""Set (in memory only) in the config of a re-read run: the reader its figures used."""


def reading_of(run: Run, mode: str) -> ReaderName:
    """The reader a run's figures of ``mode`` were read with: a re-read's, else the
    protocol's (``mode_protocol``)."""
    reading = run.config.get(READING_KEY)
    if reading is not None and mode in PROTOCOL_MODES:
        return check_reader(reading)
    return protocol_reader(mode_protocol(run.protocol, mode))


def load_run(path: str | os.PathLike[str], *, policy: ReadPolicy = "forgiving") -> Run:
    """Open a run folder for reading; raises ``RunFolderError`` for a path that is not one.

    Forgiving (scoring, the report, reliability): the older-folder policy above, damage
    skipped and noted in ``Run.report``.  Strict (``analyze``, which re-runs programs
    against the run's data): an unreadable config.json or a bad records line is a
    ``DataError``, as when resuming."""
    folder = require_run_folder(path)
    records_path = folder / RECORDS_NAME
    report = LoadReport()
    if policy == "strict":
        config = read_config(folder)  # the config's fault is named first, as on resuming
        strict = list(read_records(records_path).records.values())
        return Run(path=folder, config=config, records=strict, report=report)
    config, problem = read_config_forgiving(folder)
    if problem is not None:
        report.notes.append(problem)
    records = _read_records(records_path, report) if records_path.is_file() else []
    if not records_path.is_file():
        report.notes.append(f"{RECORDS_NAME} is missing: nothing has been recorded yet")
    return Run(path=folder, config=config, records=records, report=report)


def _read_records(path: Path, report: LoadReport) -> list[Record]:
    loaded = read_records(path, policy="forgiving")
    report.lines = loaded.lines
    report.skipped.update(loaded.skipped)
    report.kept = len(loaded.records)
    return list(loaded.records.values())
