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

    def lines(self) -> list[str]:
        """The catalog as ``deonticbench list`` prints it."""
        header = f"  {'domain':<13} {'name':<11} {'metric':<9} {'K':>2} "
        out = [
            f"domains (cases per split, from {self.source}):",
            header + " ".join(f"{s:>6}" for s in SPLITS),
        ]
        for d in self.domains:
            sizes = " ".join(f"{'-' if d.sizes[s] is None else d.sizes[s]:>6}" for s in SPLITS)
            out.append(
                f"  {d.name:<13} {d.display_name:<11} {d.metric:<9} {d.default_k:>2} {sizes}"
            )
            for split, note in d.notes.items():
                if note == "hub only":
                    out.append(f"  {'':<13} {split}: published only on the hub (--hub)")
        out.append(f"modes: {', '.join(self.modes)}")
        out.append(f"backends: {', '.join(self.backends)}  (spec: <backend>:<model>)")
        out.append("models with settings in eval/models.yaml (globs):")
        out += [f"  {name}" for name in self.models]
        return out

    def unreadable(self) -> list[str]:
        """Why each split file that is there cannot be read (it shows as "-" in the
        sizes): a corrupt data folder must not pass for a smaller one."""
        return [
            note
            for d in self.domains
            for note in d.notes.values()
            if note not in ("hub only", "no data source", "hub: not counted offline")
            and "does not exist" not in note
        ]


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
