"""The three ways a model answers a case (paper 3.1), named once for every stage.

``direct``: the model answers in prose; ``zero-shot``: it writes a Prolog program;
``few-shot``: it writes one after solved examples.  A leaf module: prompting, the
backends, the runner, records and scoring all import the names from here.
"""

from __future__ import annotations

from typing import Literal

Mode = Literal["direct", "zero-shot", "few-shot", "direct-verbal"]
MODES: tuple[Mode, ...] = ("direct", "zero-shot", "few-shot")
"""The paper's modes, in the order a run does them (and the progress summary and the
figure show them): what a run does unless told otherwise."""
VERBAL_MODE: Mode = "direct-verbal"
"""Opt-in (``eval --confidence verbal``): the direct prompt with a last line
``Confidence: NN%``.  Its own template and hash, so it is never mixed with the paper's
direct numbers (docs/reliability.md)."""
ALL_MODES: tuple[Mode, ...] = (*MODES, VERBAL_MODE)
"""Every mode a run may hold."""
DIRECT_MODES: frozenset[str] = frozenset({"direct", VERBAL_MODE})
"""Modes answered in prose: no program is extracted or run."""
TABLE_MODE_ORDER: tuple[Mode, ...] = ("few-shot", "zero-shot", "direct")
"""Row order of the paper's tables."""
MODE_TITLES: dict[str, str] = {
    "direct": "Direct",
    "zero-shot": "Zero-Shot",
    "few-shot": "Few-Shot",
    VERBAL_MODE: "Direct (verbal confidence)",
}
"""How the paper's tables and figure name each mode."""


def mode_rank(mode: str) -> int:
    """Sort key: a mode's place in ``MODES`` (an unknown one goes last)."""
    return ALL_MODES.index(mode) if mode in ALL_MODES else len(ALL_MODES)
