"""How a run's few-shot exemplars are chosen: a word the plan, the spec and the CLI share."""

from __future__ import annotations

from typing import Literal

ExemplarChoice = Literal["paper", "retrieved"]
EXEMPLAR_CHOICES: tuple[ExemplarChoice, ...] = ("paper", "retrieved")
"""``paper``: the seeded choice of paper B.1; ``retrieved``: the most similar pool cases
by BM25 over the case text (docs/settings.md)."""
