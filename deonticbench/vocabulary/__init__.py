"""The words every stage shares, in a leaf below them all.

The modes a case is answered in (``modes``), the protocols a run follows and the reader
named after each (``protocols``), how few-shot exemplars are chosen (``exemplars``), and
the chat types a prompt is made of and a backend receives (``chat``: ``Message``,
``ToolCall``, ``ToolSpec``).  It imports nothing of the package but ``errors``, so data,
prompting, the backends, the solver, reading and the store can all name these words
without importing each other.
"""

from __future__ import annotations

from .chat import Message, Role, ToolCall, ToolSpec
from .exemplars import (
    DEFAULT_EXEMPLARS,
    EXEMPLAR_CHOICES,
    OLD_SEEDED_SPELLING,
    ExemplarChoice,
    current_exemplar_choice,
)
from .modes import (
    AGENT_MODES,
    ALL_MODES,
    DIRECT_MODES,
    MODE_ORDER,
    MODE_TITLES,
    MODES,
    SETTINGS,
    TABLE_MODE_ORDER,
    VERBAL_MODE,
    Mode,
    PromptedMode,
    is_agentic,
    mode_rank,
    parse_modes,
    prompted_counterpart,
    writes_program,
)
from .protocols import (
    DEFAULT_PROTOCOL,
    DEPARTURE_MARK,
    LEAK_MARK,
    LEGACY_PROTOCOL,
    PROTOCOL_MODES,
    PROTOCOLS,
    READERS,
    ProtocolName,
    ReaderName,
    check_protocol,
    departure_note,
    mode_protocol,
    recorded_protocol,
    reference_leak_note,
    sampling_departures,
    shows_reference_programs,
)

__all__ = [
    "AGENT_MODES",
    "ALL_MODES",
    "DEFAULT_EXEMPLARS",
    "DEFAULT_PROTOCOL",
    "DEPARTURE_MARK",
    "DIRECT_MODES",
    "EXEMPLAR_CHOICES",
    "LEAK_MARK",
    "LEGACY_PROTOCOL",
    "MODES",
    "MODE_ORDER",
    "MODE_TITLES",
    "OLD_SEEDED_SPELLING",
    "PROTOCOLS",
    "PROTOCOL_MODES",
    "READERS",
    "SETTINGS",
    "TABLE_MODE_ORDER",
    "VERBAL_MODE",
    "ExemplarChoice",
    "Message",
    "Mode",
    "PromptedMode",
    "ProtocolName",
    "ReaderName",
    "Role",
    "ToolCall",
    "ToolSpec",
    "check_protocol",
    "current_exemplar_choice",
    "departure_note",
    "is_agentic",
    "mode_protocol",
    "mode_rank",
    "parse_modes",
    "prompted_counterpart",
    "recorded_protocol",
    "reference_leak_note",
    "sampling_departures",
    "shows_reference_programs",
    "writes_program",
]
