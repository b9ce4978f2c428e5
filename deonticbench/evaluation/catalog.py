"""What there is to run: domains with their sizes per split, modes, backends, and the
models the registry (eval/models.yaml) has settings for.  ``deonticbench list`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..data.cases import SPLITS, local_rows
from ..data.domains import DISPLAY_ORDER, DOMAINS
from ..data.sources import DataSource
from ..errors import DataError
from ..models.loader import BACKENDS
from ..models.registry import load_registry
from ..vocabulary.modes import ALL_MODES


@dataclass(frozen=True)
class DomainEntry:
    name: str
    display_name: str
    metric: str
    default_k: int
    sizes: dict[str, int | None]
    """Cases per split; None when the split is not available from the source."""
    notes: dict[str, str]


@dataclass(frozen=True)
class Catalog:
    domains: list[DomainEntry]
    modes: tuple[str, ...]
    backends: list[str]
    models: list[str]
    source: str


def _size(domain_name: str, split: str, source: DataSource) -> tuple[int | None, str]:
    domain = DOMAINS[domain_name]
    if source.kind != "local" or source.path is None:
        return None, "hub: not counted offline"
    try:
        rows, _ = local_rows(domain, split, source.path)
    except DataError as exc:
        return None, str(exc)
    return len(rows), ""


def build_catalog(source: DataSource | None) -> Catalog:
    entries = []
    for name in DISPLAY_ORDER:
        domain = DOMAINS[name]
        sizes: dict[str, int | None] = {}
        notes: dict[str, str] = {}
        for split in SPLITS:
            if source is None:
                sizes[split], notes[split] = None, "no data source"
                continue
            sizes[split], note = _size(name, split, source)
            if note:
                notes[split] = "hub only" if split in domain.hub_only_splits else note
        entries.append(
            DomainEntry(
                name=name,
                display_name=domain.display_name,
                metric="accuracy" if domain.label_kind == "numeric" else "macro-F1",
                default_k=domain.default_k,
                sizes=sizes,
                notes=notes,
            )
        )
    registry = load_registry()
    described = "none" if source is None else str(source.path or f"hub {source.repo}")
    return Catalog(
        domains=entries,
        modes=tuple(ALL_MODES),
        backends=list(BACKENDS),
        models=[str(k) for k in (registry.get("models") or {})],
        source=described,
    )
