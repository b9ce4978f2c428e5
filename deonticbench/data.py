"""Benchmark cases: what a case is, and loading a domain's split from a data source.

Two sources give the same cases:

* a local folder in the upstream repository layout (``data/<dir>/<split>.json`` and
  ``statutes/...``), chosen by ``--data-dir`` or ``DEONTICBENCH_DATA``;
* the Hugging Face hub dataset ``gydou/DeonticBench`` (``deonticbench.hub``), whose
  shared statute files are fetched and checksummed by ``deonticbench.statutes``.

``smoke`` is the first five cases of ``hard``, as upstream derives it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .domains import Domain, UnknownDomainError, get_domain
from .errors import DataError

SPLITS = ("smoke", "hard", "whole")
SMOKE_SIZE = 5
DATA_ENV = "DEONTICBENCH_DATA"

Gold = int | str
"""A normalised gold label: an int for numeric domains, the canonical class otherwise."""


@dataclass(frozen=True)
class Case:
    domain: str
    id: str
    question: str
    gold: Gold
    reference_prolog: str
    statutes: str
    text: str = ""
    """The case narrative (empty for housing, whose facts are in the question)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Domain-specific fields kept verbatim: ``state`` (housing), ``case_number`` (uscis)."""


@dataclass(frozen=True)
class DataSource:
    """Where cases come from; ``describe()`` is what a run folder records.

    ``pins`` is filled while loading: ``commit`` is the hub commit sha that
    ``revision`` resolved to (every split of one source is read at that commit), and
    ``offline`` is set when the rows came from the ``datasets`` cache without asking the
    hub.  Call ``describe()`` after loading so that it holds the commit.  It holds no
    machine-specific fact other than a local folder's path (which run folders ignore
    when resuming): which domains were loaded, or whether the hub was reachable, does
    not change it.
    """

    kind: Literal["local", "hub"]
    path: Path | None = None
    repo: str = "gydou/DeonticBench"
    revision: str = "main"
    pins: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def commit(self) -> str | None:
        """The hub commit sha actually read, once a hub split has been loaded."""
        return self.pins.get("commit")

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any]
        if self.kind == "local":
            out = {"kind": "local", "path": str(self.path)}
        else:
            out = {"kind": "hub", "repo": self.repo, "revision": self.revision}
            if self.commit:
                out["commit"] = self.commit
            endpoint = os.environ.get("HF_ENDPOINT")
            if endpoint:
                out["endpoint"] = endpoint
        from .statutes import describe_statutes

        out["statutes"] = describe_statutes(self)
        return out


def resolve_source(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    hub: bool = False,
    revision: str | None = None,
) -> DataSource:
    """Choose a data source: an explicit folder, then ``DEONTICBENCH_DATA``, else the hub."""
    if hub:
        return DataSource(kind="hub", revision=revision or "main")
    chosen = data_dir or os.environ.get(DATA_ENV)
    if chosen:
        path = Path(chosen).expanduser().resolve()
        if not (path / "data").is_dir():
            raise DataError(
                f"{path} is not a DeonticBench data folder: it has no data/ subfolder "
                "(expected the upstream layout data/<domain>/<split>.json)."
            )
        return DataSource(kind="local", path=path)
    return DataSource(kind="hub", revision=revision or "main")


def load_cases(
    domain: str | Domain, split: str = "hard", source: DataSource | None = None
) -> list[Case]:
    """Load one domain's split as normalised cases, in the published order."""
    try:
        dom = domain if isinstance(domain, Domain) else get_domain(domain)
    except UnknownDomainError as exc:
        raise DataError(f"{exc}.") from None
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}.")
    src = source or resolve_source()
    if src.kind == "local":
        assert src.path is not None
        rows, origin = _local_rows(dom, split, src.path)
    else:
        from .hub import load_hub_rows  # the datasets library is heavy: import on demand

        rows, origin = load_hub_rows(dom, "hard" if split == "smoke" else split, src)
        if split == "smoke":
            rows = rows[:SMOKE_SIZE]
    statutes = _shared_statutes(dom, src) if dom.statute_source == "shared" else None
    return cases_from_rows(dom, rows, origin, statutes)


def cases_from_rows(
    dom: Domain, rows: Sequence[Any], origin: str, shared_statutes: str | None
) -> list[Case]:
    """Validate raw JSON rows and turn them into cases; errors name the file and case."""
    cases: list[Case] = []
    seen: set[str] = set()
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise DataError(f"{origin}: entry {index} is not a JSON object.")
        case_id = str(row.get("id", f"#{index}"))
        missing = [f for f in dom.required_fields if row.get(f) in (None, "")]
        if missing:
            raise DataError(
                f"{origin}: case {case_id} lacks required field(s) {', '.join(missing)}."
            )
        if case_id in seen:
            raise DataError(f"{origin}: case id {case_id} appears twice.")
        seen.add(case_id)
        gold = normalise_gold(dom, row["label"], where=f"{origin}: case {case_id}")
        statutes = shared_statutes if shared_statutes is not None else str(row["statutes"])
        extra = {k: row[k] for k in ("state", "case_number") if row.get(k) is not None}
        cases.append(
            Case(
                domain=dom.name,
                id=case_id,
                question=str(row["question"]),
                gold=gold,
                reference_prolog=str(row["reference_prolog"]),
                statutes=statutes,
                text=str(row.get("text") or ""),
                extra=extra,
            )
        )
    return cases


def normalise_gold(dom: Domain, raw: object, *, where: str = "label") -> Gold:
    """Numeric labels become ints (the paper's int(gold)); binary ones a canonical class."""
    if dom.label_kind == "numeric":
        try:
            return int(float(str(raw).replace(",", "")))
        except ValueError:
            raise DataError(f"{where} has a non-numeric label {raw!r}.") from None
    label = dom.canonical_label(raw)
    if label is None:
        raise DataError(f"{where} has label {raw!r}, which is not one of {', '.join(dom.classes)}.")
    return label


def _local_rows(dom: Domain, split: str, root: Path) -> tuple[list[Any], str]:
    folder = root / "data" / dom.mirror_dir
    path = folder / f"{split}.json"
    if split == "smoke" and not path.exists():
        rows, _ = _local_rows(dom, "hard", root)
        return rows[:SMOKE_SIZE], str(folder / "hard.json")
    if not path.exists():
        hint = ""
        if split in dom.hub_only_splits:
            hint = f" The full {dom.name} split is published only on the hub: use --hub."
        raise DataError(f"{path} does not exist.{hint}")
    return _read_json_list(path), str(path)


def _read_json_list(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}).") from None
    except OSError as exc:
        raise DataError(f"{path} cannot be read ({exc.strerror}).") from None
    if not isinstance(data, list):
        raise DataError(f"{path} should hold a JSON list of cases.")
    return data


def _shared_statutes(dom: Domain, src: DataSource) -> str:
    from .statutes import shared_statutes

    return shared_statutes(dom, src)


def natural_key(name: str) -> list[Any]:
    """Sort key that orders section2 before section10."""
    import re

    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]
