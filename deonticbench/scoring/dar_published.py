"""DAR's published results (Appendix Table 1 of DAR: models x harness x domain), shipped
as package data with their source, and the table ``score --against dar`` prints: a run
made under ``--protocol dar`` above DAR's cells for the same model.

Only a run of the DAR protocol is set beside them: DAR's cells were made with DAR's
tasks, verifier and scorer, which no other protocol reproduces.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .._paths import RESOURCES
from ..errors import ConfigError
from ..vocabulary.modes import MODE_TITLES
from ..vocabulary.protocols import DAR_PROTOCOL
from .dar_readings import scorer_rows
from .paper import normalise_model
from .scores import RunScores
from .tables import MISSING, Table, estimate_text, run_labels

DAR_RESULTS = RESOURCES / "dar_results.json"
DAR_DOMAINS = ("sara_numeric", "airline", "sara_binary", "uscis")
"""DAR's four domains in its table's column order (no housing)."""


@dataclass(frozen=True)
class DarCell:
    model: str
    harness: str
    """direct (no agent) or the agentic harness: codex, terminus-2, terminus-kira,
    claude-code."""
    domain: str
    value: str
    """The published text, a fraction with three decimals."""


@lru_cache(maxsize=1)
def load_dar_results() -> tuple[DarCell, ...]:
    doc = json.loads(DAR_RESULTS.read_text(encoding="utf-8"))
    return tuple(
        DarCell(str(c["model"]), str(c["harness"]), str(c["domain"]), str(c["value"]))
        for c in doc["results"]
    )


def _protocol(scores: RunScores) -> str:
    # read raw: the run's protocol need not be one this release can run
    return str(scores.run.config.get("protocol") or "harness")


def dar_runs(scores: Sequence[RunScores]) -> tuple[list[RunScores], list[str]]:
    """The runs of the DAR protocol, and one sentence for each run left out; none left is
    an error."""
    kept = [s for s in scores if _protocol(s) == DAR_PROTOCOL]
    notes = [
        f"{s.run.path}: note: --against dar sets DAR's published table beside runs of "
        f"the dar protocol only, and this run followed the {_protocol(s)} protocol."
        for s in scores
        if _protocol(s) != DAR_PROTOCOL
    ]
    if not kept:
        raise ConfigError(
            "--against dar needs a run made with --protocol dar; none of the given runs is."
        )
    return kept, notes


DarFigures = Mapping[tuple[str, str], tuple[float, float]]
"""A run's DAR readings per (domain, mode): (DAR's default, ``--errors-as-incorrect``),
as fractions (``dar_readings.scorer_rows``)."""


def dar_figures(scores: RunScores) -> DarFigures | None:
    """A dar-protocol run's DAR readings per cell (None for a run without them: one
    recorded as dar before its records kept DAR's verdicts)."""
    rows = scorer_rows(scores)
    if not rows:
        return None
    return {(r.domain, r.mode): (r.value(r.dar_default), r.value(r.dar_strict)) for r in rows}


def _run_rows(label: str, s: RunScores, dar: DarFigures | None) -> list[list[str]]:
    """A run's rows: with its DAR readings, DAR's default and strict figures (what DAR's
    table reports) above the harness reader's figure of the same final states."""
    rows = []
    for mode in s.modes:
        if dar is not None:
            for index, name in enumerate(("DAR", "DAR strict")):
                row = ["this run", label, f"{MODE_TITLES[mode]} ({name})"]
                for domain in DAR_DOMAINS:
                    found = dar.get((domain, mode))
                    row.append(f"{100 * found[index]:.1f}" if found else MISSING)
                rows.append(row)
        title = f"{MODE_TITLES[mode]} (harness reader)" if dar is not None else MODE_TITLES[mode]
        row = ["this run", label, title]
        for domain in DAR_DOMAINS:
            g = s.group(domain, mode, "first")
            row.append(estimate_text(g.estimate) if g else MISSING)
        rows.append(row)
    return rows


def against_dar(
    scores: Sequence[RunScores], dar: Sequence[DarFigures | None] | None = None
) -> Table:
    """Each DAR-protocol run's rows (stage ``first``, percent; each run's DAR readings
    first, ``dar`` when given, else ``dar_figures``) above DAR's cells for the same
    model, every harness (every model's when DAR did not run the run's model)."""
    headers = ["Source", "Model", "Setting", *DAR_DOMAINS]
    rows: list[list[str]] = []
    cells = load_dar_results()
    figures = list(dar) if dar is not None else [dar_figures(s) for s in scores]
    for label, s, found in zip(run_labels(scores), scores, figures, strict=True):
        wanted = normalise_model(s.run.model)
        mine = [c for c in cells if normalise_model(c.model) == wanted] or list(cells)
        rows += _run_rows(label, s, found)
        for model, harness in dict.fromkeys((c.model, c.harness) for c in mine):
            values = {c.domain: c.value for c in mine if (c.model, c.harness) == (model, harness)}
            published = [
                f"{100 * float(values[d]):.1f}" if d in values else MISSING for d in DAR_DOMAINS
            ]
            rows.append(["DAR T1", model, harness, *published])
    return Table(
        headers,
        rows,
        title="This run beside DAR's published Appendix Table 1 (%; DAR prints fractions)",
    )


__all__ = [
    "DAR_RESULTS",
    "DarCell",
    "against_dar",
    "dar_figures",
    "dar_runs",
    "load_dar_results",
]
