"""Writing a run brought in from another tool (inspect's logs, Harbor's jobs).

Both importers end the same way: refuse a folder that already holds a run, open it with
the config the importer built, write each record (an agentic record's trajectory as a
sidecar, as the runner writes it) and hand the folder back as a ``Run``, which every
reader of a run takes.  That step lives here,
beside the run folder it writes, so each importer keeps only what is its own: reading
its source and building the records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .folder import RunFolder, is_run_folder
from .record import Record
from .run import Run, read_run
from .trajectory import trajectory_path, write_trajectory


def written_line(run: Run, *, of: str = "") -> str:
    """What an import wrote, as the import commands say it: ``N records [of ...] (modes;
    K per domain) to FOLDER``."""
    k = ", ".join(f"{d} K={n}" for d, n in (run.config.get("k") or {}).items())
    modes = ", ".join(run.config.get("modes") or [])
    return f"{len(run.records)} records{' ' + of if of else ''} ({modes}; {k}) to {run.path}"


def refuse_existing(folder: Path) -> None:
    """An import never writes into a folder that already holds a run."""
    if is_run_folder(folder):
        raise ConfigError(f"{folder} already holds a run; import into a new --out folder.")


def write_imported_run(
    out: str | Path,
    config: Mapping[str, Any],
    entries: Sequence[tuple[Record, dict[str, Any] | None]],
) -> Run:
    """Write ``entries`` (each record with its ATIF trajectory, or None) as a new run
    folder with ``config``, and read it back; an agentic record's trajectory is stored
    beside it and named with its sha256 in the record."""
    folder = Path(out)
    refuse_existing(folder)
    with RunFolder.open(folder, dict(config)) as run:
        for record, trajectory in entries:
            if trajectory is not None and record.agent is not None:
                relative = trajectory_path(*record.key)
                record.agent.trajectory = relative
                record.agent.trajectory_sha256 = write_trajectory(folder, relative, trajectory)
            run.append(record)
    return read_run(folder)
