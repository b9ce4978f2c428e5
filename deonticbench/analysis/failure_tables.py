"""What ``analyze`` prints: the paper's Table 4 layout, the outcome × derivation table,
mean structural measures, and each measure's point-biserial correlation with
correctness (bootstrap CI), per domain × mode.

Tables are computed on one stage of the attempts: ``first`` (the first attempt, the
default) or ``final`` (after retries with feedback).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..data.domains import DOMAINS
from ..scoring.tables import MODE_TITLES, Table, render_markdown, render_text
from .diagnose import CATEGORIES, DERIVATIONS

CATEGORY_TITLES = {
    "wrong_rule": "Wrong Rule",
    "entity_fact": "Entity / Fact",
    "numerical": "Numerical",
    "impl_bug": "Impl. Bugs",
    "unknown": "Unknown",
}
MEASURES = ("signature_jaccard", "fact_coverage", "value_recall")
OUTCOME_ORDER = ("correct", "wrong", "abstain")
BOOTSTRAP = 1000
SEED = 0


def _groups(
    rows: Sequence[dict[str, Any]], stage: str
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    order = {name: i for i, name in enumerate(DOMAINS)}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("stage") == stage:
            groups.setdefault((row["domain"], row["mode"]), []).append(row)
    return dict(sorted(groups.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1])))


def _label(domain: str, mode: str) -> list[str]:
    display = DOMAINS[domain].display_name if domain in DOMAINS else domain
    return [display, MODE_TITLES.get(mode, mode)]


def _share(count: int, total: int) -> str:
    return "—" if count == 0 else f"{100 * count / total:.1f}%"


def table4(rows: Sequence[dict[str, Any]], stage: str = "first") -> Table:
    """Failure categories of wrong and abstained attempts, normalised per row."""
    headers = ["Domain", "Prompt", *(CATEGORY_TITLES[c] for c in CATEGORIES), "failures"]
    body: list[list[str]] = []
    for (domain, mode), group in _groups(rows, stage).items():
        failed = [r for r in group if r.get("category")]
        cells = [_share(sum(r["category"] == c for r in failed), len(failed)) for c in CATEGORIES]
        body.append([*_label(domain, mode), *cells, str(len(failed))])
    return Table(headers, body, f"Failure taxonomy ({stage} attempt; paper Table 4 layout)")


def derivation_table(rows: Sequence[dict[str, Any]], stage: str = "first") -> Table:
    """Outcome × derivation counts, and the share of correct answers not grounded."""
    headers = ["Domain", "Prompt", "Outcome", *DERIVATIONS, "n"]
    body: list[list[str]] = []
    for (domain, mode), group in _groups(rows, stage).items():
        for outcome in OUTCOME_ORDER:
            subset = [r for r in group if r.get("outcome") == outcome]
            if not subset:
                continue
            counts = [str(sum(r["derivation"] == d for r in subset)) for d in DERIVATIONS]
            body.append([*_label(domain, mode), outcome, *counts, str(len(subset))])
        correct = [r for r in group if r.get("outcome") == "correct"]
        if correct:
            not_grounded = sum(r["derivation"] != "grounded" for r in correct)
            body.append(
                [
                    *_label(domain, mode),
                    "correct, not grounded",
                    "",
                    "",
                    "",
                    "",
                    f"{100 * not_grounded / len(correct):.1f}%",
                ]
            )
    return Table(headers, body, f"Outcome × derivation ({stage} attempt)")


def _mean(values: list[float]) -> str:
    return f"{sum(values) / len(values):.3f}" if values else "—"


def means_table(rows: Sequence[dict[str, Any]], stage: str = "first") -> Table:
    headers = ["Domain", "Prompt", "mean Jaccard", "mean coverage", "mean value recall", "n"]
    body: list[list[str]] = []
    for (domain, mode), group in _groups(rows, stage).items():
        cells = [_mean([float(r[m]) for r in group if r.get(m) is not None]) for m in MEASURES]
        body.append([*_label(domain, mode), *cells, str(len(group))])
    return Table(headers, body, f"Structural measures ({stage} attempt)")


def point_biserial(
    measure: Sequence[float], correct: Sequence[bool], replicates: int = BOOTSTRAP, seed: int = SEED
) -> tuple[float, float, float] | None:
    """Pearson r between a measure and correctness (0/1), with a 95% percentile
    bootstrap interval over attempts; None when either side is constant."""
    x = np.asarray(measure, dtype=float)
    y = np.asarray(correct, dtype=float)
    if len(x) < 3 or x.std() == 0 or y.std() == 0:
        return None
    r = float(np.corrcoef(x, y)[0, 1])
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(x), size=(replicates, len(x)))
    xs, ys = x[idx], y[idx]
    xc = xs - xs.mean(axis=1, keepdims=True)
    yc = ys - ys.mean(axis=1, keepdims=True)
    denom = np.sqrt((xc**2).sum(axis=1) * (yc**2).sum(axis=1))
    valid = denom > 0
    if not valid.any():
        return r, math.nan, math.nan
    draws = (xc * yc).sum(axis=1)[valid] / denom[valid]
    low, high = np.percentile(draws, [2.5, 97.5])
    return r, float(low), float(high)


def correlation_table(rows: Sequence[dict[str, Any]], stage: str = "first") -> Table:
    headers = ["Domain", "Prompt", *(f"r({m})" for m in MEASURES)]
    body: list[list[str]] = []
    for (domain, mode), group in _groups(rows, stage).items():
        cells: list[str] = []
        for m in MEASURES:
            pairs = [
                (float(r[m]), r["outcome"] == "correct") for r in group if r.get(m) is not None
            ]
            found = point_biserial([p[0] for p in pairs], [p[1] for p in pairs])
            cells.append(
                "n/a" if found is None else f"{found[0]:+.2f} [{found[1]:+.2f}, {found[2]:+.2f}]"
            )
        body.append([*_label(domain, mode), *cells])
    return Table(
        headers, body, f"Point-biserial r with correctness, 95% bootstrap CI ({stage} attempt)"
    )


def all_tables(rows: Sequence[dict[str, Any]], stage: str = "first") -> list[Table]:
    return [
        table4(rows, stage),
        derivation_table(rows, stage),
        means_table(rows, stage),
        correlation_table(rows, stage),
    ]


def render_tables(tables: Sequence[Table]) -> str:
    return "\n".join(render_text(t) for t in tables)


CSV_FIELDS = (
    "domain",
    "case_id",
    "mode",
    "sample",
    "stage",
    "attempt",
    "outcome",
    "category",
    "reason",
    "derivation",
    "signature_jaccard",
    "fact_coverage",
    "value_recall",
    "first_divergence",
    "hallucinated_constants",
    "undefined",
    "proof_summary",
)


def write_outputs(rows: Sequence[dict[str, Any]], out: Path, stage: str = "first") -> list[Path]:
    """``--out``: the tables as text and markdown, and a per-sample CSV."""
    out.mkdir(parents=True, exist_ok=True)
    tables = all_tables(rows, stage)
    written = [out / "analysis-tables.txt", out / "analysis-tables.md", out / "analysis.csv"]
    written[0].write_text(render_tables(tables), encoding="utf-8")
    written[1].write_text("\n".join(render_markdown(t) for t in tables), encoding="utf-8")
    with written[2].open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            flat = dict(row)
            div = row.get("first_divergence")
            flat["first_divergence"] = (
                f"{div['value']} at line {div['line']} ({div['clause']})" if div else ""
            )
            flat["hallucinated_constants"] = " ".join(
                str(v) for v in row.get("hallucinated_constants") or []
            )
            flat["undefined"] = " ".join(row.get("undefined") or [])
            writer.writerow(flat)
    return written
