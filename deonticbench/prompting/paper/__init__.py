"""The paper protocol's prompting: upstream's own texts, exemplars and sampling.

``texts`` reads upstream's composers, exemplar constants and model lists from its files
(``data.upstream``) without running them; ``render`` builds the messages its
generate_e2e.py sends for a case and mode; ``airline_exemplars`` is its airline leave-one-out
retrieval from the evaluated split (which shows other cases' reference programs:
``vocabulary.protocols.shows_reference_programs``); ``sampling`` the request fields it
sends for a model name.
The plan (``prompting.plan``) chooses this for direct, zero-shot and few-shot when a run
follows ``--protocol paper``.
"""

from __future__ import annotations

from .airline_exemplars import AirlinePool
from .render import UPSTREAM_DATASETS, UPSTREAM_TASKS, render_paper, upstream_case
from .sampling import UPSTREAM_FLAGS, Departures, PaperSampling, paper_sampling
from .texts import PaperTexts, load_paper_texts

__all__ = [
    "UPSTREAM_DATASETS",
    "UPSTREAM_FLAGS",
    "UPSTREAM_TASKS",
    "AirlinePool",
    "Departures",
    "PaperSampling",
    "PaperTexts",
    "load_paper_texts",
    "paper_sampling",
    "render_paper",
    "upstream_case",
]
