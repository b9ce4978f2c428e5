"""A run folder's records.jsonl: one ``Record`` per line, read strictly or forgivingly.

Lines are appended and fsync'd as samples finish, so a crash leaves at most a truncated
last line.  ``read_records`` is the one reader: strict for resuming (damage other than
a crash's tail is an error), forgiving for scoring (bad lines skipped and counted).  The
replay file (``replay:`` backend) is written from records here too.
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
    """Read a records.jsonl: the first record of each key wins.

    Strict: a last line without its newline, or that does not parse, is what a crash
    mid-write leaves: it is dropped (and with ``repair`` cut from the file so appends
    start on a clean line).  A bad line anywhere else raises DataError.

    Forgiving: every line is tried, a last one without its newline too; a line that does
    not parse, names an unknown domain, repeats a key or gives a case another gold
    label than its earlier records is skipped, its reason counted in ``skipped``.
    """
    file = Path(path)
    records: dict[RecordKey, Record] = {}
    if not file.exists():
        return LoadedRecords(records, truncated=False, duplicates=0)
    raw = file.read_bytes()
    lines = raw.split(b"\n")
    # After a final newline, split leaves an empty last piece; otherwise the last piece
    # is a line the crash cut short.
    tail = lines.pop()
    forgiving = policy == "forgiving"
    if forgiving and tail:
        lines.append(tail)  # read it too: it may be a whole record without its newline
    truncated = bool(tail.strip()) and not forgiving
    good_end = len(raw) - len(tail)
    kept = _Kept(records, forgiving)
    cut_at = _keep_lines(file, lines, kept, last_is_whole=not tail)
    if cut_at is not None:
        truncated, good_end = True, cut_at
    if truncated and repair:
        _cut_file(file, good_end)
    return LoadedRecords(
        records,
        truncated=truncated,
        duplicates=kept.duplicates,
        lines=kept.counted,
        skipped=kept.skipped if forgiving else Counter(),
    )


@dataclass
class _Kept:
    """The records read so far (the first of each key wins) and what was left out, why."""

    records: dict[RecordKey, Record]
    forgiving: bool
    duplicates: int = 0
    counted: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    gold_of: dict[tuple[str, str], Any] = field(default_factory=dict)

    def add(self, record: Record) -> None:
        self.counted += 1
        if self.forgiving and record.domain not in DOMAINS:
            self.skipped[f"unknown domain {record.domain!r}"] += 1
            return
        if record.key in self.records:
            self.duplicates += 1
            self.skipped["duplicate key (kept the first)"] += 1
            return
        case = (record.domain, record.case_id)
        if self.forgiving and case in self.gold_of and self.gold_of[case] != record.gold:
            self.skipped["gold differs from an earlier record of the case"] += 1
            return
        self.gold_of.setdefault(case, record.gold)
        self.records[record.key] = record


def _keep_lines(file: Path, lines: list[bytes], kept: _Kept, *, last_is_whole: bool) -> int | None:
    """Parse ``lines`` into ``kept``, in order (a strict read leaves the crash-cut tail out).

    A line that does not parse is counted and skipped when ``kept`` is forgiving.  When
    strict, it raises DataError, unless it is the last line and ends with its newline
    (``last_is_whole``): a crash between writes of a multi-block line on some
    filesystems leaves that, so its byte offset is returned, to be treated as the
    truncated tail.  None: every line was read."""
    offset = 0
    for number, line in enumerate(lines, start=1):
        start = offset
        offset += len(line) + 1
        try:
            record = parse_record_line(line)
        except ValueError as exc:
            if kept.forgiving:
                kept.counted += 1
                kept.skipped[str(exc)] += 1
                continue
            if number == len(lines) and last_is_whole:
                return start
            raise DataError(f"{file}: line {number} is not a valid record ({exc}).") from None
        if record is not None:  # None: a blank line
            kept.add(record)
    return None


def _cut_file(file: Path, size: int) -> None:
    """Cut ``file`` to its first ``size`` bytes, durably, so appends start on a clean line."""
    with open(file, "r+b") as fh:
        fh.truncate(size)
        fh.flush()
        os.fsync(fh.fileno())


def iter_records(path: str | os.PathLike[str]) -> Iterator[Record]:
    """The records of a run folder (or a records.jsonl path), one per sample."""
    file = Path(path)
    if file.is_dir():
        file = file / RECORDS_NAME
    yield from read_records(file).records.values()


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
