"""The rlimits of a job: one table for both executors."""

from __future__ import annotations

import resource

TYPE_CHECKING = False  # typing costs its import; mypy reads the names below all the same
if TYPE_CHECKING:
    from typing import Any


def job_rlimits(job: dict[str, Any], program_uid: int) -> list[tuple[int, tuple[int, int]]]:
    """The job's rlimits, as (resource, (soft, hard)): one table for both executors."""
    mb = 1024 * 1024
    cpu = int(job["cpu_s"])
    mem = int(job["memory_mb"]) * mb
    fsize = int(job["file_size_mb"]) * mb
    limits = [
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (mem, mem)),
        (resource.RLIMIT_FSIZE, (fsize, fsize)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NOFILE, (256, 256)),
    ]
    if program_uid != 0:  # root is not bound by RLIMIT_NPROC
        nproc = int(job["processes"])
        limits.append((resource.RLIMIT_NPROC, (nproc, nproc)))
    return limits
