"""The two protocols a run's prompted modes can follow, and the reader that goes with each.

``paper``: what upstream's released scripts (at the commit ``data/manifest.json`` pins)
send and read: their own prompt texts and exemplars, read at run time from the pinned
upstream files, their sampling, and their reader.  Table 2 of the paper came from it.

``harness``: this project's templates (``prompts/``), leak-free seeded exemplars, the
registry's sampling (``eval/models.yaml``) and the harness's reader, which abstains on
two different answers instead of taking the first.

The protocol decides the first attempt of direct, zero-shot and few-shot; the agentic
modes and the diagnostic settings have no upstream counterpart and always use the
harness's templates.  docs/prompts.md "Protocols" sets the two side by side.
"""

from __future__ import annotations

from typing import Literal, cast

from ..errors import ConfigError

ProtocolName = Literal["paper", "harness"]
PROTOCOLS: tuple[ProtocolName, ...] = ("paper", "harness")
DEFAULT_PROTOCOL: ProtocolName = "paper"
"""What ``eval`` follows unless told otherwise: the protocol the paper's figures came from."""
LEGACY_PROTOCOL: ProtocolName = "harness"
"""What a run folder made before protocols existed followed (its config.json names none)."""

ReaderName = ProtocolName
"""A reader is named after the protocol it belongs to; any run can be re-read by either."""
READERS: tuple[ReaderName, ...] = PROTOCOLS


def check_protocol(name: object, *, what: str = "protocol") -> ProtocolName:
    """``name`` as a protocol name, or one sentence saying which names there are."""
    if name not in PROTOCOLS:
        raise ConfigError(f"unknown {what} {name!r}; choose from {', '.join(PROTOCOLS)}.")
    return cast(ProtocolName, name)


def recorded_protocol(config: object) -> ProtocolName:
    """The protocol a run folder's config.json records (``harness`` when it names none:
    it was made before the paper protocol existed)."""
    value = config.get("protocol") if isinstance(config, dict) else None
    return check_protocol(value) if value is not None else LEGACY_PROTOCOL
