"""Benchmark cases: what a case is, and loading a domain's split from a data source.

Two sources give the same cases:

* a local folder in the upstream repository layout (``data/<dir>/<split>.json`` and
  ``statutes/...``), chosen by ``--data-dir`` or ``DEONTICBENCH_DATA``;
* the Hugging Face hub dataset ``gydou/DeonticBench`` (``deonticbench.data.hub``), whose
  shared statute files are fetched and checksummed by ``deonticbench.data.statutes``.

``smoke`` is the first five cases of ``hard``, as upstream derives it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DataError
from .domains import Domain, UnknownDomainError, get_domain
from .hub import load_hub_rows, resolve_revision  # datasets itself is imported on demand
from .sources import SPLITS, DataSource, resolve_source
from .statutes import describe_statutes, shared_statutes

SMOKE_SIZE = 5
VARIANT_MARK = "~cf"
"""Between an original case id and a counterfactual variant's number: ``tax_case_10~cf2``
is the second variant of ``tax_case_10`` (``deonticbench perturb``, docs/robustness.md)."""


def original_case_id(case_id: str) -> str:
    """The case a counterfactual variant was made from (an original case is its own)."""
    return case_id.split(VARIANT_MARK, 1)[0]


def variant_case_id(case_id: str, number: int) -> str:
    return f"{case_id}{VARIANT_MARK}{number}"


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
    """Domain-specific fields kept verbatim: ``state`` (housing), ``case_number`` (uscis),
    ``original_id`` (a counterfactual variant, ``deonticbench perturb``)."""


def pin_source(source: DataSource) -> DataSource:
    """The source with its hub revision resolved to a commit sha (a local one as it is).

    Pin once and load every split from the pinned copy: all domains of a run then read
    the same snapshot even if the dataset is updated meanwhile, and the commit is known.
    """
    if source.pinned:
        return source
    return resolve_revision(source)


def describe_source(source: DataSource) -> dict[str, Any]:
    """What a run folder records about its data.

    Pin a hub source first so that this holds its commit.  It holds no machine-specific
    fact other than a local folder's path (which run folders ignore when resuming):
    which domains were loaded, or whether the hub was reachable, does not change it.
    """
    out: dict[str, Any]
    if source.kind == "local":
        out = {"kind": "local", "path": str(source.path)}
    else:
        out = {"kind": "hub", "repo": source.repo, "revision": source.revision}
        if source.commit:
            out["commit"] = source.commit
        endpoint = os.environ.get("HF_ENDPOINT")
        if endpoint:
            out["endpoint"] = endpoint
    out["statutes"] = describe_statutes(source)
    return out


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
        rows, origin = local_rows(dom, split, src.path)
    else:
        rows, origin = load_hub_rows(dom, "hard" if split == "smoke" else split, pin_source(src))
        if split == "smoke":
            rows = rows[:SMOKE_SIZE]
    statutes = shared_statutes(dom, src) if dom.statute_source == "shared" else None
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
        extra = {
            k: row[k] for k in ("state", "case_number", "original_id") if row.get(k) is not None
        }
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


def local_rows(dom: Domain, split: str, root: Path) -> tuple[list[Any], str]:
    """The raw rows of ``split`` in a local data folder ``root`` (the smoke split is the
    first rows of hard), and the file they came from; the catalog counts them offline."""
    folder = root / "data" / dom.mirror_dir
    path = folder / f"{split}.json"
    if split == "smoke" and not path.exists():
        rows, _ = local_rows(dom, "hard", root)
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
