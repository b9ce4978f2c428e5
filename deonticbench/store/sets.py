"""An eval set's folder on disk: its manifest (``set.json``), its spend ledger
(``spend.jsonl``) and one ordinary run folder per run, named by the run.

``deonticbench eval-set`` writes it; every later stage reads a set folder as the run
folders it lists, in the set's order (``expand_run_folders``), so ``score``, ``report``
and ``analyze`` take a set folder wherever they take runs.  The ledger is what makes
one budget hold across invocations: every priced request the set paid is one line,
appended as its response arrives, so a resumed or killed set knows what it has spent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import DataError

SET_MANIFEST = "set.json"
SPEND_LEDGER = "spend.jsonl"
SET_KIND = "deonticbench-eval-set"
SET_RESULTS = "results.json"
"""The set's own results.json (every run's figures and the set's comparison), beside the
runs' own results.json files."""

__all__ = [
    "SET_MANIFEST",
    "SET_RESULTS",
    "SPEND_LEDGER",
    "SetManifest",
    "SetRun",
    "SpendLedger",
    "expand_run_folders",
    "is_set_folder",
    "read_set_manifest",
    "write_set_manifest",
]


@dataclass(frozen=True)
class SetRun:
    """One run of a set: its name (its folder's, under the set folder), the model it
    runs, its protocol, and the provider lane it runs in (runs of one lane share the
    provider's limits and go one after another)."""

    name: str
    model: str
    protocol: str
    lane: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model,
            "protocol": self.protocol,
            "lane": self.lane,
        }


@dataclass(frozen=True)
class SetManifest:
    """``set.json``: where the set came from and its runs, in the file's order."""

    folder: Path
    source: str
    runs: tuple[SetRun, ...]

    def run_folder(self, run: SetRun) -> Path:
        return self.folder / run.name

    @property
    def run_folders(self) -> list[Path]:
        return [self.run_folder(r) for r in self.runs]


def is_set_folder(path: Path) -> bool:
    return (Path(path) / SET_MANIFEST).is_file()


def write_set_manifest(folder: Path, source: str, runs: Sequence[SetRun]) -> Path:
    """Write ``set.json`` (atomically: a kill leaves the old one or the new one)."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"kind": SET_KIND, "version": 1, "source": source, "runs": [r.to_json() for r in runs]}
    path = folder / SET_MANIFEST
    part = path.with_suffix(".json.part")
    part.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    os.replace(part, path)
    return path


def read_set_manifest(folder: Path) -> SetManifest:
    path = Path(folder) / SET_MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        runs = tuple(
            SetRun(str(r["name"]), str(r["model"]), str(r["protocol"]), str(r["lane"]))
            for r in doc["runs"]
        )
        if doc.get("kind") != SET_KIND:
            raise ValueError("not an eval set's manifest")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path} is not an eval set's manifest ({exc}).") from None
    return SetManifest(Path(folder), str(doc.get("source", "")), runs)


def expand_run_folders(paths: Iterable[Any]) -> list[Any]:
    """``paths`` with every set folder replaced by its run folders in the set's order
    (those not started yet left out); anything else (a run folder, a ``Run``) as it is."""
    out: list[Any] = []
    for item in paths:
        if isinstance(item, str | os.PathLike) and is_set_folder(Path(item)):
            manifest = read_set_manifest(Path(item))
            out.extend(f for f in manifest.run_folders if f.is_dir())
        else:
            out.append(item)
    return out


class SpendLedger:
    """``spend.jsonl``: one line per priced request a set paid for, ``{"run", "usd"}``,
    appended (and flushed) as its response arrives.  A line cut short by a kill is
    skipped on reading: that request may be counted once too few, never twice."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / SPEND_LEDGER

    def by_run(self) -> dict[str, float]:
        spent: dict[str, float] = {}
        if not self.path.is_file():
            return spent
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                entry = json.loads(line)
                run, usd = str(entry["run"]), float(entry["usd"])
            except (ValueError, KeyError, TypeError):
                continue
            spent[run] = spent.get(run, 0.0) + usd
        return spent

    def total(self) -> float:
        return sum(self.by_run().values())

    def append(self, run: str, usd: float) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"run": run, "usd": round(usd, 9)}) + "\n")
            f.flush()
