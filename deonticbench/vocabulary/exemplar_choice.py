"""How a run's few-shot exemplars are chosen: a word the plan, the spec and the CLI share."""

from __future__ import annotations

from typing import Literal

ExemplarChoice = Literal["seeded", "retrieved"]
EXEMPLAR_CHOICES: tuple[ExemplarChoice, ...] = ("seeded", "retrieved")
"""``seeded``: the harness's seeded choice (``--exemplar-seed``); ``retrieved``: the most
similar pool cases by BM25 over the case text (docs/settings.md)."""

DEFAULT_EXEMPLARS: ExemplarChoice = "seeded"

OLD_SEEDED_SPELLING = "paper"
"""An older spelling of the seeded choice, read as ``seeded`` ("paper" names only the
paper's protocol, its reader and its numbers); accepted for one release, then refused."""


def current_exemplar_choice(value: str | None) -> str | None:
    """``value`` with the old spelling of the seeded choice read as ``seeded``."""
    return DEFAULT_EXEMPLARS if value == OLD_SEEDED_SPELLING else value
