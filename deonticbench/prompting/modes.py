"""The three ways a model answers a case (paper 3.1), named once for every stage.

``direct``: the model answers in prose; ``zero-shot``: it writes a Prolog program;
``few-shot``: it writes one after solved examples.  A leaf module: prompting, the
backends, the runner, records and scoring all import the names from here.
"""

from __future__ import annotations

from typing import Literal

Mode = Literal["direct", "zero-shot", "few-shot"]
MODES: tuple[Mode, ...] = ("direct", "zero-shot", "few-shot")
"""Every mode, in the order a run does them (and the progress summary and the figure
show them)."""
TABLE_MODE_ORDER: tuple[Mode, ...] = ("few-shot", "zero-shot", "direct")
"""Row order of the paper's tables."""
MODE_TITLES: dict[str, str] = {"direct": "Direct", "zero-shot": "Zero-Shot", "few-shot": "Few-Shot"}
"""How the paper's tables and figure name each mode."""


def mode_rank(mode: str) -> int:
    """Sort key: a mode's place in ``MODES`` (an unknown one goes last)."""
    return MODES.index(mode) if mode in MODES else len(MODES)
