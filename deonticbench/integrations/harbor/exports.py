"""``deonticbench export --format harbor``: the Harbor tasks of either kind, the
harness's own (``tasks``) or DAR's, byte for byte as DAR's adapters write them
(``dar_tasks``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...data.domains import Domain
from ...data.sources import DataSource
from ...vocabulary.protocols import DAR_PROTOCOL
from .dar_tasks import export_dar_tasks
from .tasks import TaskExportReport, export_tasks


def export_harbor_tasks(
    out: str | Path,
    protocol: str,
    *,
    source: DataSource,
    domains: Sequence[Domain],
    prompt_mode: str,
    split: str,
    limit: int | None,
    seed: int,
    skip_missing: bool,
) -> TaskExportReport:
    """Write one task per case of ``domains`` on ``split``: DAR's (``protocol`` dar,
    which has no seed: DAR's few-shot examples are its own) or the harness's."""
    common: dict[str, Any] = dict(
        source=source, domains=domains, prompt_mode=prompt_mode, split=split, limit=limit
    )
    if protocol == DAR_PROTOCOL:
        return export_dar_tasks(out, **common, skip_missing=skip_missing)
    return export_tasks(out, **common, seed=seed, skip_missing=skip_missing)
