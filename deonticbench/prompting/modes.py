"""The three ways a model answers a case (paper 3.1), named once for every stage.

``direct``: the model answers in prose; ``zero-shot``: it writes a Prolog program;
``few-shot``: it writes one after solved examples.  A leaf module: prompting, the
backends, the runner, records and scoring all import the names from here.
"""

from __future__ import annotations

from typing import Literal

Mode = Literal["direct", "zero-shot", "few-shot", "rules-given", "facts-given"]
MODES: tuple[Mode, ...] = ("direct", "zero-shot", "few-shot")
"""Every mode of the paper, in the order a run does them (and the progress summary and the
figure show them); ``all`` means these."""
SETTINGS: tuple[Mode, ...] = ("rules-given", "facts-given")
"""The diagnostic settings (docs/settings.md): a zero-shot prompt that also shows one part
of the case's reference program (its rules, or its case facts), which the harness adds to
the model's program before running it.  Chosen only by name, never by ``all``."""
SELECTABLE_MODES: tuple[Mode, ...] = MODES + SETTINGS
"""Every name ``--modes`` accepts."""
TABLE_MODE_ORDER: tuple[Mode, ...] = ("few-shot", "zero-shot", "direct", *SETTINGS)
"""Row order of the paper's tables (the settings, which the paper lacks, last)."""
MODE_TITLES: dict[str, str] = {
    "direct": "Direct",
    "zero-shot": "Zero-Shot",
    "few-shot": "Few-Shot",
    "rules-given": "Rules Given",
    "facts-given": "Facts Given",
}
"""How the paper's tables and figure name each mode."""


def mode_rank(mode: str) -> int:
    """Sort key: a mode's place in ``SELECTABLE_MODES`` (an unknown one goes last)."""
    return SELECTABLE_MODES.index(mode) if mode in SELECTABLE_MODES else len(SELECTABLE_MODES)
