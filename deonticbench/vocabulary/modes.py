"""The ways a model answers a case, named once for every stage.

The paper's three (3.1): ``direct``: the model answers in prose; ``zero-shot``: it writes
a Prolog program; ``few-shot``: it writes one after solved examples.  The agentic three
(``agent-direct``, ``agent-zero-shot``, ``agent-few-shot``, docs/agents.md) give a model
the same material as files in a workspace and tools to read them, write and run its
program, and repair it in a loop; each is judged like its prompted counterpart.  A leaf
module: prompting, the backends, the runner, records and scoring all import the names
from here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, cast

from ..errors import ConfigError

Mode = Literal[
    "direct",
    "zero-shot",
    "few-shot",
    "direct-verbal",
    "agent-direct",
    "agent-zero-shot",
    "agent-few-shot",
    "rules-given",
    "facts-given",
]
PromptedMode = Literal["direct", "zero-shot", "few-shot"]
MODES: tuple[Mode, ...] = ("direct", "zero-shot", "few-shot")
"""The paper's modes, in the order a run does them: the default of ``--modes`` and what
``--modes all`` means."""
VERBAL_MODE: Mode = "direct-verbal"
"""Opt-in (``eval --confidence verbal``): the direct prompt with a last line
``Confidence: NN%``.  Its own template and hash, so it is never mixed with the paper's
direct numbers (docs/reliability.md)."""
DIRECT_MODES: frozenset[str] = frozenset({"direct", VERBAL_MODE})
"""Prompted modes answered in prose: no program is extracted or run."""
AGENT_MODES: tuple[Mode, ...] = ("agent-direct", "agent-zero-shot", "agent-few-shot")
"""The agentic modes, each the counterpart of one of ``MODES`` (same order)."""
SETTINGS: tuple[Mode, ...] = ("rules-given", "facts-given")
"""The diagnostic settings (docs/settings.md): a prompt that also shows one part of the
case's reference program (its rules, or its case facts), which the harness adds to the
model's program before running it.  Chosen only by name, never by ``all``; each is
compared with zero-shot (its ``prompted_counterpart``)."""
ALL_MODES: tuple[Mode, ...] = (*MODES, VERBAL_MODE, *AGENT_MODES, *SETTINGS)
"""Every mode a run may hold and ``--modes`` accepts, in the order a run does them (and the
progress summary shows them); the tables and the figure use ``MODE_ORDER``."""
MODE_ORDER: tuple[Mode, ...] = (
    "few-shot",
    "zero-shot",
    "direct",
    VERBAL_MODE,
    "agent-few-shot",
    "agent-zero-shot",
    "agent-direct",
    *SETTINGS,
)
"""The one order in which the tables and the figure show modes: the paper's Table 2 rows
(few-shot, zero-shot, direct), the verbal variant after its direct, the agentic rows in
the paper's order, the settings last.  It names every mode (checked below), so a mode a
run holds always has a place, in the figure as in the tables."""
if sorted(MODE_ORDER) != sorted(ALL_MODES):  # a mode added to ALL_MODES must be placed here
    raise AssertionError("MODE_ORDER must list every mode of ALL_MODES once")
TABLE_MODE_ORDER: tuple[Mode, ...] = tuple(m for m in MODE_ORDER if m != VERBAL_MODE)
"""Row order of the paper's tables: ``MODE_ORDER`` without the verbal variant (it is in
the long and reliability tables only)."""
MODE_TITLES: dict[str, str] = {
    "direct": "Direct",
    "zero-shot": "Zero-Shot",
    "few-shot": "Few-Shot",
    VERBAL_MODE: "Direct (verbal confidence)",
    "agent-direct": "Agent Direct",
    "agent-zero-shot": "Agent Zero-Shot",
    "agent-few-shot": "Agent Few-Shot",
    "rules-given": "Rules Given",
    "facts-given": "Facts Given",
}
"""How the tables and the figure name each mode."""
_AGENT_PREFIX = "agent-"


def mode_rank(mode: str) -> int:
    """Sort key: a mode's place in ``ALL_MODES`` (an unknown one goes last)."""
    return ALL_MODES.index(mode) if mode in ALL_MODES else len(ALL_MODES)


def is_agentic(mode: str) -> bool:
    """Whether ``mode`` is one of the agentic modes."""
    return mode in AGENT_MODES


def prompted_counterpart(mode: str) -> PromptedMode:
    """The paper's mode a mode is compared with ("agent-zero-shot" -> "zero-shot", a
    setting -> "zero-shot"); a prompted mode is its own counterpart."""
    if mode in SETTINGS:
        return "zero-shot"
    if mode == VERBAL_MODE:
        return "direct"
    base = mode.removeprefix(_AGENT_PREFIX)
    if base not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(ALL_MODES)}")
    return base  # type: ignore[return-value]


def agentic_counterpart(mode: str) -> Mode:
    """The agentic mode of a prompted one ("zero-shot" -> "agent-zero-shot")."""
    agentic = _AGENT_PREFIX + prompted_counterpart(mode)
    return agentic  # type: ignore[return-value]


def writes_program(mode: str) -> bool:
    """Whether the mode's answer is a program's output (zero-/few-shot, prompted or not,
    and the settings)."""
    return prompted_counterpart(mode) != "direct"


def parse_modes(modes: Iterable[str] | str) -> tuple[Mode, ...]:
    """``--modes``: a comma-separated list (or names) of modes, each once in the order
    given; ``all`` is the paper's three.  An unknown name is one sentence (ConfigError)."""
    if isinstance(modes, str):
        if modes.strip().lower() == "all":
            return MODES
        modes = [m for m in modes.split(",") if m.strip()]
    chosen = [m.strip().lower() for m in modes]
    unknown = [m for m in chosen if m not in ALL_MODES]
    if unknown or not chosen:
        raise ConfigError(
            f"unknown mode {', '.join(unknown) or repr('')}; choose from "
            f"{', '.join(ALL_MODES)} (comma-separated) or all."
        )
    return tuple(cast(Mode, m) for m in dict.fromkeys(chosen))
