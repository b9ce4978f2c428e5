"""Writing a run brought in from another tool (inspect's logs, Harbor's jobs).

Both importers end the same way: refuse a folder that already holds a run, open it with
the config the importer built, write each record (an agentic record's trajectory as a
sidecar, as the runner writes it) and say what was written.  That step lives here,
beside the run folder it writes, so each importer keeps only what is its own: reading
its source and building the records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .folder import RunFolder, is_run_folder
from .record import Record
from .trajectory import trajectory_path, write_trajectory


@dataclass(frozen=True)
class ImportedRun:
    """What an import wrote: the folder, the records, and the run's shape (config.json's
    domains, modes and K per domain)."""

    out: Path
    records: int
    domains: tuple[str, ...]
    modes: tuple[str, ...]
    k: dict[str, int]


def refuse_existing(folder: Path) -> None:
    """An import never writes into a folder that already holds a run."""
    if is_run_folder(folder):
        raise ConfigError(f"{folder} already holds a run; import into a new --out folder.")


def write_imported_run(
    out: str | Path,
    config: Mapping[str, Any],
    entries: Sequence[tuple[Record, dict[str, Any] | None]],
) -> ImportedRun:
    """Write ``entries`` (each record with its ATIF trajectory, or None) as a new run
    folder with ``config``; an agentic record's trajectory is stored beside it and named
    with its sha256 in the record."""
    folder = Path(out)
    refuse_existing(folder)
    with RunFolder.open(folder, dict(config)) as run:
        for record, trajectory in entries:
            if trajectory is not None and record.agent is not None:
                relative = trajectory_path(*record.key)
                record.agent.trajectory = relative
                record.agent.trajectory_sha256 = write_trajectory(folder, relative, trajectory)
            run.append(record)
    return ImportedRun(
        out=folder,
        records=len(entries),
        domains=tuple(config["domains"]),
        modes=tuple(config["modes"]),
        k=dict(config["k"]),
    )
