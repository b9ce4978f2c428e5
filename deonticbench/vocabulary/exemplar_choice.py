"""How a run's few-shot exemplars are chosen: a word the plan, the spec and the CLI share."""

from __future__ import annotations

from typing import Literal

ExemplarChoice = Literal["seeded", "retrieved"]
EXEMPLAR_CHOICES: tuple[ExemplarChoice, ...] = ("seeded", "retrieved")
"""``seeded``: the harness's seeded choice (``--exemplar-seed``); ``retrieved``: the most
similar pool cases by BM25 over the case text (docs/settings.md)."""

DEFAULT_EXEMPLARS: ExemplarChoice = "seeded"

OLD_SEEDED_SPELLING = "paper"
"""How an older run's config.json or spec spells the seeded choice ("paper" names only
the paper's protocol, its reader and its numbers).  Read as ``seeded`` from that data
(``current_exemplar_choice``); a spec or the command line made now refuses it."""


def current_exemplar_choice(value: str | None) -> str | None:
    """``value`` as recorded by a run, with the older spelling of the seeded choice read
    as ``seeded``."""
    return DEFAULT_EXEMPLARS if value == OLD_SEEDED_SPELLING else value
