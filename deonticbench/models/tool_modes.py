"""The tool modes' options: which protocol a backend's options ask for
(``--param tool_mode=native|text|constrained``) and a constrained turn's own output
limit (``--param constrained_max_tokens=N``).  What the constrained tool mode is:
``models.constrained``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigError

TOOL_MODE_PARAM = "tool_mode"
"""``--param tool_mode=native|text|constrained``."""
REPLY_SHAPE_KEY = "tool_protocol"
"""The key a constrained turn's ``reply_shape`` is marked with.  The shape is part of the
response cache's key, so it keeps the old spelling: existing caches still answer."""
NATIVE, TEXT, CONSTRAINED = "native", "text", "constrained"
TOOL_MODES = (NATIVE, TEXT, CONSTRAINED)
"""The three protocols an agentic trial can use (docs/agents.md)."""
CONSTRAINED_MAX_TOKENS_PARAM = "constrained_max_tokens"
"""``--param constrained_max_tokens=N``: the output limit of a constrained turn, which may
need more room than a text turn for a ``write_file`` of a whole program.  It changes
what comes back, so a backend puts it in its identity (the cache key)."""


def decoded_under_schema(constrained: bool, native: bool) -> bool:
    """Whether an agent turn is decoded under the call schema (its reply text is the
    call): the constrained tool mode on a backend that does not force a native call.  The
    one statement of it, for the backends (``models.base.decodes_under_schema``) and the loop
    (``TrialSetup.schema_decoded``)."""
    return constrained and not native


def tool_mode(
    options: Mapping[str, Any] | None,
    *,
    default: str = NATIVE,
    offered: Sequence[str] = TOOL_MODES,
    backend: str = "this backend",
) -> str:
    """The protocol the backend's options ask for (``default`` when they name none); one
    that the backend does not offer is one sentence naming those it does."""
    value = str((options or {}).get(TOOL_MODE_PARAM) or default).strip().lower()
    if value not in TOOL_MODES:
        raise ConfigError(f"tool_mode should be one of {', '.join(TOOL_MODES)}, not {value!r}.")
    if value not in offered:
        raise ConfigError(
            f"{backend} has no {value} tool mode; use tool_mode={' or '.join(offered)}."
        )
    return value


def constrained_max_tokens(options: Mapping[str, Any] | None, default: int | None) -> int | None:
    """The output limit of a constrained turn: the option when set, else ``default``."""
    value = (options or {}).get(CONSTRAINED_MAX_TOKENS_PARAM)
    if value is None:
        return default
    limit = int(value)
    if limit < 1:
        raise ConfigError(f"{CONSTRAINED_MAX_TOKENS_PARAM} should be at least 1, not {limit}.")
    return limit
