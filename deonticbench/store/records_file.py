"""A run folder's records.jsonl: one ``Record`` per line, read strictly or forgivingly.

Lines are appended and fsync'd as samples finish, so a crash leaves at most a truncated
last line.  ``stream_records`` is the one parser, reading a line at a time: strict for
resuming (damage other than a crash's tail is an error), forgiving for scoring (bad lines
skipped and counted).  ``read_records`` keeps what it yields by key, for the writer
resuming a folder; ``store.run.read_run`` hands it on to every reader of a finished run.
The replay file (``replay:`` backend) is written from records here too.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..data.domains import DOMAINS
from ..errors import DataError
from .record import Record, RecordKey, parse_record_line

RECORDS_NAME = "records.jsonl"


@dataclass
class LoadedRecords:
    records: dict[RecordKey, Record]
    truncated: bool
    """A partial last line (from a crash) was found and cut off."""
    duplicates: int
    dropped_errors: int = 0
    """Records taken out by ``retry_errors`` (their samples will be done again)."""
    lines: int = 0
    """Lines read, blank ones not counted."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Forgiving reading: lines left out, by reason."""


def drop_error_records(path: Path, loaded: LoadedRecords) -> None:
    failed = [key for key, r in loaded.records.items() if r.final.error is not None]
    if not failed:
        return
    for key in failed:
        del loaded.records[key]
    tmp = path.with_suffix(".jsonl.tmp")
    with open(tmp, "wb") as fh:
        for record in loaded.records.values():
            fh.write(record_line(record))
        fh.flush()
        os.fsync(fh.fileno())
    # Atomic: a crash leaves either the old file or the new one, never a mixture.
    os.replace(tmp, path)
    loaded.dropped_errors = len(failed)


def record_line(record: Record) -> bytes:
    return json_line(record.to_json())


def json_line(obj: Any) -> bytes:
    """One JSON line as UTF-8 bytes, lossless for any text a model can send.

    Text is written as itself (``ensure_ascii=False``) so records stay readable, except
    when it holds something UTF-8 cannot encode (a lone surrogate such as ``\\ud800``,
    valid in JSON and in a Python str): then the line is written with JSON's ``\\u``
    escapes, which are pure ASCII, and reads back to the very same string.
    """
    line = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    try:
        return line.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


ReadPolicy = Literal["strict", "forgiving"]
"""How a records.jsonl is read.  ``strict`` (resuming a run): a damaged line other than
a crash's last one is an error, since appending to it would bury the damage.
``forgiving`` (scoring): every line that is not a usable record is skipped and counted
with its reason, so that what is left can still be scored."""


def read_records(
    path: str | os.PathLike[str], *, repair: bool = False, policy: ReadPolicy = "strict"
) -> LoadedRecords:
    """Read a whole records.jsonl, as ``stream_records`` reads it, keyed: the first
    record of each key wins.  With ``repair`` (strict), a crash's cut-off last line is
    cut from the file too, so that appends start on a clean line."""
    file = Path(path)
    if not file.exists():
        return LoadedRecords({}, truncated=False, duplicates=0)
    tally = ReadTally(forgiving=policy == "forgiving")
    records = {record.key: record for record in stream_records(file, tally)}
    if tally.cut_at is not None and repair:
        _cut_file(file, tally.cut_at)
    return LoadedRecords(
        records,
        truncated=tally.cut_at is not None,
        duplicates=tally.duplicates,
        lines=tally.counted,
        skipped=tally.skipped,
    )


@dataclass
class ReadTally:
    """What one read of a records.jsonl kept and left out: the keys and gold labels seen
    (the first record of each key wins), the lines counted and, forgiving, the reasons
    lines were skipped; strict, where a crash's cut-off last line starts."""

    forgiving: bool
    duplicates: int = 0
    counted: int = 0
    """Lines read, blank ones not counted."""
    skipped: Counter[str] = field(default_factory=Counter)
    cut_at: int | None = None
    """Strict: the byte offset of a crash's cut-off last line (None: there is none)."""
    keys: set[RecordKey] = field(default_factory=set)
    gold_of: dict[tuple[str, str], Any] = field(default_factory=dict)

    def keeps(self, record: Record) -> bool:
        """Whether ``record`` is kept; when not, the reason is counted."""
        self.counted += 1
        if self.forgiving and record.domain not in DOMAINS:
            self.skipped[f"unknown domain {record.domain!r}"] += 1
            return False
        if record.key in self.keys:
            self.duplicates += 1
            if self.forgiving:
                self.skipped["duplicate key (kept the first)"] += 1
            return False
        case = (record.domain, record.case_id)
        if self.forgiving and case in self.gold_of and self.gold_of[case] != record.gold:
            self.skipped["gold differs from an earlier record of the case"] += 1
            return False
        self.gold_of.setdefault(case, record.gold)
        self.keys.add(record.key)
        return True


def stream_records(path: str | os.PathLike[str], tally: ReadTally) -> Iterator[Record]:
    """The records of a records.jsonl, one at a time as the file is read: a run of any
    size is never held whole, and ``tally`` keeps only keys and gold labels.

    Strict: a last line without its newline is what a crash mid-write leaves: it is left
    out (``tally.cut_at``).  So is a last line that does not parse though it ends with
    its newline: a crash between writes of a multi-block line on some filesystems leaves
    that.  A bad line anywhere else raises DataError.

    Forgiving: every line is tried, a last one without its newline too; a line that does
    not parse, names an unknown domain, repeats a key or gives a case another gold label
    than its earlier records is skipped, its reason counted in ``tally.skipped``.
    """
    file = Path(path)
    with open(file, "rb") as fh:
        for number, start, line, whole, last in _lines(fh):
            if not whole and not tally.forgiving:
                if line.strip():
                    tally.cut_at = start
                continue
            try:
                record = parse_record_line(line)
            except ValueError as exc:
                if tally.forgiving:
                    tally.counted += 1
                    tally.skipped[str(exc)] += 1
                    continue
                if last:
                    tally.cut_at = start
                    continue
                raise DataError(f"{file}: line {number} is not a valid record ({exc}).") from None
            if record is not None and tally.keeps(record):  # None: a blank line
                yield record


def _lines(fh: Iterable[bytes]) -> Iterator[tuple[int, int, bytes, bool, bool]]:
    """Each line of a binary file: its number (from 1), its byte offset, its bytes without
    the newline, whether it ends with one, and whether it is the file's last line."""
    offset, number = 0, 0
    lines = iter(fh)
    line = next(lines, None)
    while line is not None:
        after = next(lines, None)
        number += 1
        whole = line.endswith(b"\n")
        yield number, offset, line[:-1] if whole else line, whole, after is None
        offset += len(line)
        line = after


def _cut_file(file: Path, size: int) -> None:
    """Cut ``file`` to its first ``size`` bytes, durably, so appends start on a clean line."""
    with open(file, "r+b") as fh:
        fh.truncate(size)
        fh.flush()
        os.fsync(fh.fileno())


def write_replay_file(records: Iterable[Record], path: str | os.PathLike[str]) -> int:
    """Write every response of these records in the ``replay:`` backend's format, one
    line per sample and attempt (failed requests have no response and are left out, so
    a replay reports them as missing).  Returns the number of lines written."""
    count = 0
    with open(path, "wb") as fh:
        for record in records:
            for attempt in record.attempts:
                if attempt.response is None:
                    continue
                line = {
                    "domain": record.domain,
                    "case_id": record.case_id,
                    "mode": record.mode,
                    "sample": record.sample,
                    "attempt": attempt.index,
                    "response": attempt.response,
                }
                fh.write(json_line(line))
                count += 1
    return count
