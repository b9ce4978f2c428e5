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
    "direct", "zero-shot", "few-shot", "agent-direct", "agent-zero-shot", "agent-few-shot"
]
PromptedMode = Literal["direct", "zero-shot", "few-shot"]
MODES: tuple[Mode, ...] = ("direct", "zero-shot", "few-shot")
"""The paper's modes, in the order a run does them: the default of ``--modes`` and what
``--modes all`` means."""
AGENT_MODES: tuple[Mode, ...] = ("agent-direct", "agent-zero-shot", "agent-few-shot")
"""The agentic modes, each the counterpart of one of ``MODES`` (same order)."""
ALL_MODES: tuple[Mode, ...] = MODES + AGENT_MODES
"""Every mode a run may name, in the order a run does them (and the progress summary and
the figure show them)."""
TABLE_MODE_ORDER: tuple[Mode, ...] = (
    "few-shot",
    "zero-shot",
    "direct",
    "agent-few-shot",
    "agent-zero-shot",
    "agent-direct",
)
"""Row order of the paper's tables; the agentic rows follow the paper's."""
MODE_TITLES: dict[str, str] = {
    "direct": "Direct",
    "zero-shot": "Zero-Shot",
    "few-shot": "Few-Shot",
    "agent-direct": "Agent Direct",
    "agent-zero-shot": "Agent Zero-Shot",
    "agent-few-shot": "Agent Few-Shot",
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
    """The paper's mode an agentic mode is compared with ("agent-zero-shot" ->
    "zero-shot"); a prompted mode is its own counterpart."""
    base = mode.removeprefix(_AGENT_PREFIX)
    if base not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(ALL_MODES)}")
    return base  # type: ignore[return-value]


def agentic_counterpart(mode: str) -> Mode:
    """The agentic mode of a prompted one ("zero-shot" -> "agent-zero-shot")."""
    agentic = _AGENT_PREFIX + prompted_counterpart(mode)
    return agentic  # type: ignore[return-value]


def writes_program(mode: str) -> bool:
    """Whether the mode's answer is a program's output (zero-/few-shot, prompted or not)."""
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
