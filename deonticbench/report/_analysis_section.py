"""Read a run's ``analysis.jsonl`` (written by ``deonticbench analyze``) for the report.

One line per domain x case x mode x sample x stage with the failure category and the
proof summary.  The report only shows these rows; it never computes them.  A missing
file is normal (the run was not analysed); an unreadable line is skipped and counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ANALYSIS_FILE = "analysis.jsonl"
ANALYSIS_FIELDS = (
    "stage",
    "category",
    "derivation",
    "signature_jaccard",
    "undefined",
    "fact_coverage",
    "value_recall",
    "first_divergence",
    "hallucinated_constants",
    "proof_summary",
)
"""What the sample browser shows of each row, in this order."""

Key = tuple[str, str, str, int]


@dataclass
class Analysis:
    rows: dict[Key, list[dict[str, Any]]] = field(default_factory=dict)
    problem: str | None = None


def load_analysis(path: Path) -> Analysis:
    if not path.is_file():
        return Analysis()
    out = Analysis()
    bad = 0
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as exc:
        return Analysis(problem=f"{path.name} is unreadable ({exc.strerror or exc})")
    for line in lines:
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            key = (str(obj["domain"]), str(obj["case_id"]), str(obj["mode"]), int(obj["sample"]))
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        row = {name: obj.get(name) for name in ANALYSIS_FIELDS if name in obj}
        out.rows.setdefault(key, []).append(row)
    if bad:
        out.problem = f"{path.name}: skipped {bad} unreadable line(s)"
    return out
