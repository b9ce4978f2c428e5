"""What every export states about itself in ``manifest.json``: the harness's version, the
data source and its revision (hub commit, or the sha256 of the local files read), the
template hashes, the counts per domain and the sha256 of every file written."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..data.cases import DataSource, describe_source
from ..data.domains import Domain
from ..prompting import template_hashes
from ..vocabulary.modes import Mode
from .examples import DomainCounts
from .lengths import LengthReport

MANIFEST = "manifest.json"


@dataclass
class ExportReport:
    """What one export wrote, as its manifest states it (``write_manifest``)."""

    format: str
    split: str
    out: Path
    counts: dict[str, DomainCounts] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    """File name -> sha256."""
    rows: int = 0
    lengths: LengthReport | None = None
    """Completion lengths in the named tokenizer's tokens (``tokenizer``)."""

    def lines(self) -> list[str]:
        """What the export read, kept and wrote, per domain, then in all."""
        out = [counts.line(self.split) for counts in self.counts.values()]
        out += self.lengths.lines() if self.lengths is not None else []
        out.append(f"wrote {self.rows} rows to {self.out} ({', '.join(self.files)}, {MANIFEST})")
        dropped = sum(c.dropped for c in self.counts.values() if not c.skipped)
        if dropped:
            # A row count below the cases read is the data's doing, not a lost row: say so.
            out.append(
                f"note: {dropped} case(s) left out because their reference program does not "
                f"reproduce the gold label (their ids are in {MANIFEST}; docs/data-audit.md)."
            )
        return out


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def data_revision(source: DataSource, domains: Sequence[Domain], split: str) -> dict[str, Any]:
    """Which data an export was made from: the source, and for a local folder the sha256
    of every split file read (``train`` reads whole and hard, ``smoke`` reads hard)."""
    described = describe_source(source)
    if source.kind == "local" and source.path is not None:
        # A local folder has no commit to name: the files read say which data it was.
        files: dict[str, str] = {}
        read = {"train": ("whole", "hard"), "smoke": ("hard",)}.get(split, (split,))
        for domain in domains:
            for name in read:
                path = source.path / "data" / domain.mirror_dir / f"{name}.json"
                if path.exists():
                    files[f"data/{domain.mirror_dir}/{name}.json"] = sha256_file(path)
        described["files_sha256"] = files
    return described


def harness_version() -> str:
    """The installed deonticbench's version, as every export's manifest states it."""
    try:
        return version("deonticbench")
    except PackageNotFoundError:
        return "unknown"


def write_manifest(
    report: ExportReport,
    source: DataSource,
    domains: Sequence[Domain],
    mode: Mode,
    seed: int,
    rejected_from: str | None,
    timeout_s: float | None,
) -> None:
    manifest = {
        "harness": "deonticbench",
        "version": harness_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "format": report.format,
        "split": "whole minus hard" if report.split == "train" else "hard (test only)",
        "prompt_mode": mode,
        "seed": seed,
        "verification": {
            "judge": "eval (the benchmark's: within $1 / class match)",
            "timeout_s": timeout_s if timeout_s is not None else 20.0,
        },
        "rejected_from": str(Path(rejected_from).resolve()) if rejected_from else None,
        "data": data_revision(source, domains, report.split),
        "templates": {k: v for k, v in template_hashes(domains).items() if mode in k},
        "domains": {name: counts.to_json() for name, counts in report.counts.items()},
        "rows": report.rows,
        "completion_tokens": report.lengths.to_json() if report.lengths else None,
        "files": dict(report.files),
    }
    (report.out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
