"""A run: ``read_run(path)`` opens a run folder for reading, and every later stage takes
the ``Run`` it returns (scoring, analysis, the report, reliability, the exports, the
comparisons), or a path it reads with ``read_run``.  ``evaluate`` returns one too, with
what its session did (``Run.session``), and so do the importers.

A ``Run`` holds its spec (as config.json states it), its config, its records, its
results.json and its agentic trials' trajectories.  The records are read as they are asked
for (``Records``): iterating streams records.jsonl a line at a time, so a large run is
never held in memory whole; ``len``, indexing and ``Records.load`` read it once and keep
the list.

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

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, overload

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
from .records_file import RECORDS_NAME, ReadPolicy, ReadTally, stream_records
from .spec import RunSpec
from .trajectory import read_trajectory

RESULTS_NAME = "results.json"
"""The run folder's scores, written by ``scoring.results`` after every run."""


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


class Records(Sequence[Record]):
    """A run's records, read from its records.jsonl when they are asked for.

    ``for record in run.records`` streams the file a line at a time (each pass reads it
    again, holding one record at a time).  ``len``, indexing and ``load()`` read the
    whole file once and keep the list; every later pass walks that list.  Records given
    as a list (a run made in memory) are that list."""

    def __init__(
        self,
        file: Path | None = None,
        *,
        policy: ReadPolicy = "forgiving",
        report: LoadReport | None = None,
        records: Iterable[Record] | None = None,
    ) -> None:
        self._file = file
        self._policy = policy
        self._report = report if report is not None else LoadReport()
        self._list: list[Record] | None = None if records is None else list(records)

    @property
    def loaded(self) -> bool:
        """Whether the records are held in memory (read whole, or given as a list)."""
        return self._list is not None

    def load(self) -> list[Record]:
        """Every record, read once and kept (what reading skipped goes to the run's
        ``report``)."""
        if self._list is None:
            tally = ReadTally(forgiving=self._policy == "forgiving")
            self._list = list(self._stream(tally))
            if self._policy == "forgiving":
                self._report.lines = tally.counted
                self._report.skipped.update(tally.skipped)
                self._report.kept = len(self._list)
        return self._list

    def _stream(self, tally: ReadTally) -> Iterator[Record]:
        if self._file is not None and self._file.is_file():
            yield from stream_records(self._file, tally)

    def __iter__(self) -> Iterator[Record]:
        if self._list is not None:
            return iter(self._list)
        return self._stream(ReadTally(forgiving=self._policy == "forgiving"))

    def __len__(self) -> int:
        return len(self.load())

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        return self.load()[index]

    def __repr__(self) -> str:
        held = f"{len(self._list)} records" if self._list is not None else "not read yet"
        return f"Records({self._file}, {held})"


@dataclass
class Session:
    """What one ``evaluate`` (or ``arun``) call did in its run folder: config.json's
    ``sessions`` says when and how each was started, this what it did."""

    planned: int = 0
    """Samples the spec asks for."""
    new: int = 0
    """Samples done in this session."""
    resumed: int = 0
    """Planned samples whose record was there before."""
    missing: int = 0
    """Planned samples without a record after it (a stopped run)."""
    requests: int = 0
    """Model requests actually sent (cache hits excluded); one may be several calls."""
    calls: int = 0
    """Provider calls sent, every try included: what the server received (an Anthropic
    request of K samples is K calls).  Backends without HTTP count their requests."""
    cache_hits: int = 0
    interrupted: bool = False
    truncated: bool = False
    """A crash's truncated last line was cut from records.jsonl before resuming."""
    dropped_errors: int = 0
    """Records of failed requests taken out to be redone (``retry_errors``)."""


class Run:
    """A run: its folder, config.json, records, results and trajectories (``read_run``).

    ``records`` may be any iterable of records (a run made in memory, as inspect's
    metrics make one); ``report`` is what reading the folder skipped; ``session`` what
    the ``evaluate`` call that returned it did (None for a run read from disk)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        config: dict[str, Any],
        records: Records | Iterable[Record] = (),
        report: LoadReport | None = None,
        *,
        session: Session | None = None,
    ) -> None:
        self.path = Path(path)
        self.config = config
        self._report = report if report is not None else LoadReport()
        self.records = records if isinstance(records, Records) else Records(records=records)
        self.session = session

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}, model={self.model!r}, records={self.records!r})"

    @property
    def report(self) -> LoadReport:
        """What reading the folder noticed and skipped (this reads the records, if they
        are not read yet: the skipped lines are known once every line was read)."""
        self.records.load()
        return self._report

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def records_path(self) -> Path:
        return self.path / RECORDS_NAME

    @cached_property
    def results(self) -> dict[str, Any] | None:
        """results.json, the scores written after the run (None: there is none yet, or
        it cannot be read)."""
        try:
            found = json.loads((self.path / RESULTS_NAME).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        return found if isinstance(found, dict) else None

    def trajectory(self, record: Record) -> dict[str, Any] | None:
        """An agentic record's trajectory (ATIF), checked against the hash its record
        keeps; None for a record with none (a prompted mode)."""
        agent = record.agent
        if agent is None or agent.trajectory is None:
            return None
        return read_trajectory(self.path, agent.trajectory, agent.trajectory_sha256)

    def trajectories(self) -> Iterator[tuple[Record, dict[str, Any]]]:
        """Each agentic record with its trajectory, read one at a time."""
        for record in self.records:
            atif = self.trajectory(record)
            if atif is not None:
                yield record, atif

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
        first = next(iter(self.records), None)  # the first line only, not the whole file
        return first.model if first is not None else "?"

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


RunLike = Run | str | os.PathLike[str]
"""What every reader of a run takes: a ``Run``, or the path of its folder."""


def read_run(run: RunLike, *, policy: ReadPolicy = "forgiving") -> Run:
    """Open a run folder for reading (a ``Run`` given is returned as it is); raises
    ``RunFolderError`` for a path that is not one.  config.json is read now, the records
    when they are asked for (``Records``).

    Forgiving (scoring, the report, reliability): the older-folder policy above, damage
    skipped and noted in ``Run.report``.  Strict (``analyze``, which re-runs programs
    against the run's data): an unreadable config.json is a ``DataError`` now, a bad
    records line one when it is read, as when resuming."""
    if isinstance(run, Run):
        return run
    folder = require_run_folder(run)
    records_path = folder / RECORDS_NAME
    report = LoadReport()
    if policy == "strict":
        config = read_config(folder)  # the config's fault is named first, as on resuming
        records = Records(records_path, policy="strict", report=report)
        return Run(folder, config, records, report)
    config, problem = read_config_forgiving(folder)
    if problem is not None:
        report.notes.append(problem)
    if not records_path.is_file():
        report.notes.append(f"{RECORDS_NAME} is missing: nothing has been recorded yet")
    return Run(folder, config, Records(records_path, policy="forgiving", report=report), report)
