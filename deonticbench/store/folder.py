"""An open run folder: config.json, records.jsonl and the lock, for one writing process.

``RunFolder.open`` creates a folder or resumes it (refusing another configuration,
cutting a crash's truncated last line), holds an advisory lock so that two processes
never append to one run, and appends each record durably.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from typing import IO, Any

from ..errors import ConfigError, DeonticBenchError
from .config import CONFIG_NAME, check_resumable, merge_config
from .record import Record, RecordKey
from .records_file import RECORDS_NAME, LoadedRecords, drop_error_records, read_records, record_line

LOCK_NAME = ".lock"


class RunFolderError(DeonticBenchError):
    """A path given as a run folder is not one (``require_run_folder``)."""


def require_run_folder(path: str | os.PathLike[str]) -> Path:
    """The path as a run folder, or ``RunFolderError`` with the one sentence every
    command (score, report, analyze, batches, cascade) gives for a path that is not one."""
    folder = Path(path)
    if not folder.exists():
        raise RunFolderError(f"{folder} is not a run folder: no such directory.")
    if not folder.is_dir():
        raise RunFolderError(f"{folder} is not a run folder: it is a file.")
    if not is_run_folder(folder):
        raise RunFolderError(
            f"{folder} is not a run folder: it has neither {CONFIG_NAME} nor {RECORDS_NAME}."
        )
    return folder


class RunFolder:
    """An open run folder.  Use ``RunFolder.open(path, config)`` as a context manager."""

    def __init__(self, path: Path, config: dict[str, Any], loaded: LoadedRecords) -> None:
        self.path = path
        self.config = config
        self.loaded = loaded
        self._lock: IO[str] | None = None
        self._records: IO[bytes] | None = None

    @property
    def records_path(self) -> Path:
        return self.path / RECORDS_NAME

    @property
    def done(self) -> dict[RecordKey, Record]:
        return self.loaded.records

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], config: dict[str, Any], *, retry_errors: bool = False
    ) -> RunFolder:
        """Create the folder or resume it; raises ConfigError on a mismatched config.

        With ``retry_errors``, records whose last attempt is a failed request (an outage,
        a spent quota) are taken out of records.jsonl, so that those samples are done
        again; the file is rewritten atomically and keeps one line per sample."""
        folder = Path(path)
        # A refused start leaves every file as it was: everything that can refuse (another
        # configuration, a damaged records.jsonl) is checked read-only before anything is
        # written, first without the lock (so a refusal creates no lock file either),
        # then again under it, where another process can no longer change the answer.
        if (folder / CONFIG_NAME).exists():
            check_resumable(folder, config)
            read_records(folder / RECORDS_NAME)
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create the run folder {folder} ({exc.strerror}).") from None
        lock = _take_lock(folder)
        try:
            loaded = read_records(folder / RECORDS_NAME)
            merged = merge_config(folder, config)
            if loaded.truncated:
                loaded = read_records(folder / RECORDS_NAME, repair=True)
            if retry_errors:
                drop_error_records(folder / RECORDS_NAME, loaded)
        except BaseException:
            lock.close()
            raise
        run = cls(folder, merged, loaded)
        run._lock = lock
        run._records = open(folder / RECORDS_NAME, "ab")  # noqa: SIM115 - closed in close()
        return run

    def append(self, record: Record) -> None:
        """Append one record and make it durable before returning."""
        assert self._records is not None, "run folder is closed"
        # One write of the whole line: a crash leaves at most a truncated last line.
        self._records.write(record_line(record))
        self._records.flush()
        os.fsync(self._records.fileno())
        self.loaded.records.setdefault(record.key, record)

    def close(self) -> None:
        if self._records is not None:
            self._records.close()
            self._records = None
        if self._lock is not None:
            self._lock.close()  # closing the descriptor releases the flock
            self._lock = None

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _take_lock(folder: Path) -> IO[str]:
    lock = open(folder / LOCK_NAME, "w")  # noqa: SIM115 - held for the run's lifetime
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        raise ConfigError(
            f"another deonticbench process is writing to {folder}; wait for it or use --out."
        ) from None
    return lock


def set_aside(folder: Path) -> Path:
    """Move a run folder out of the way for ``--fresh``: renamed beside itself to
    ``<name>.replaced-<time>``, nothing deleted.  Refused while another process writes it."""
    lock = _take_lock(folder)
    try:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = folder.with_name(f"{folder.name}.replaced-{stamp}")
        number = 1
        while target.exists():
            number += 1
            target = folder.with_name(f"{folder.name}.replaced-{stamp}-{number}")
        try:
            folder.rename(target)
        except OSError as exc:
            raise ConfigError(f"cannot move {folder} aside for --fresh ({exc.strerror}).") from None
        return target
    finally:
        lock.close()


def is_run_folder(folder: Path) -> bool:
    return (folder / CONFIG_NAME).exists() or (folder / RECORDS_NAME).exists()
