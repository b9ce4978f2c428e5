"""The words every stage shares, in a leaf below them all.

The modes a case is answered in (``modes``), the protocols a run follows and the reader
named after each (``protocols``), how few-shot exemplars are chosen (``exemplar_choice``), and
the chat types a prompt is made of and a backend receives (``chat``: ``Message``,
``ToolCall``, ``ToolSpec``).  It imports nothing of the package but ``errors``, so data,
prompting, the backends, the solver, reading and the store can all name these words
without importing each other.
"""

from __future__ import annotations

from .chat import Message, Role, ToolCall, ToolSpec
from .exemplar_choice import (
    DEFAULT_EXEMPLARS,
    EXEMPLAR_CHOICES,
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
    is_agentic,
    mode_rank,
    parse_modes,
    prompted_counterpart,
    writes_program,
)
from .protocols import (
    DAR_PROTOCOL,
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
    check_reader,
    default_modes,
    departure_note,
    mode_protocol,
    protocol_reader,
    recorded_protocol,
    reference_leak_note,
    sampling_departures,
    shows_reference_programs,
)

__all__ = [
    "AGENT_MODES",
    "ALL_MODES",
    "DAR_PROTOCOL",
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
    "PROTOCOLS",
    "PROTOCOL_MODES",
    "READERS",
    "SETTINGS",
    "TABLE_MODE_ORDER",
    "VERBAL_MODE",
    "ExemplarChoice",
    "Message",
    "Mode",
    "ProtocolName",
    "ReaderName",
    "Role",
    "ToolCall",
    "ToolSpec",
    "check_protocol",
    "check_reader",
    "current_exemplar_choice",
    "default_modes",
    "departure_note",
    "is_agentic",
    "mode_protocol",
    "mode_rank",
    "parse_modes",
    "prompted_counterpart",
    "protocol_reader",
    "recorded_protocol",
    "reference_leak_note",
    "sampling_departures",
    "shows_reference_programs",
    "writes_program",
]
