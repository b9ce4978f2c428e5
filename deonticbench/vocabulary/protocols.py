"""The protocols a run can follow, and the reader that goes with each.

``paper``: what upstream's released scripts (at the commit ``data/manifest.json`` pins)
send and read: their own prompt texts and exemplars, read at run time from the pinned
upstream files, their sampling, and their reader.  Table 2 of the paper came from it.

``harness``: this project's templates (``prompts/``), leak-free seeded exemplars, the
registry's sampling (``eval/models.yaml``) and the harness's reader, which abstains on
two different answers instead of taking the first.

``dar``: the agentic modes as DAR (*Deontic Reasoning with Agentic Harnesses*) framed
them: DAR's instruction and /app files (``prompting.dar_task``), judged by DAR's verifier
(``reading.dar_verifier``), the harness's reader of the same final state beside it.  A run
protocol only: it has no prompted modes and is no reader (its records are read by the
harness's judge, its DAR view by DAR's scorer).

The paper and harness protocols decide the first attempt of direct, zero-shot and
few-shot; the agentic modes and the diagnostic settings have no upstream counterpart and
use the harness's templates, except under ``dar``.  docs/prompts.md "Protocols" and
docs/agents.md "Protocols" set them side by side.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ..errors import ConfigError
from .modes import AGENT_MODES, MODES, Mode, is_agentic

ProtocolName = Literal["paper", "harness", "dar"]
PROTOCOLS: tuple[ProtocolName, ...] = ("paper", "harness", "dar")
DAR_PROTOCOL: ProtocolName = "dar"
"""DAR's framing of the agentic modes (``eval --protocol dar``); agentic modes only."""
DEFAULT_PROTOCOL: ProtocolName = "paper"
"""What ``eval`` follows unless told otherwise: the protocol the paper's figures came from."""
LEGACY_PROTOCOL: ProtocolName = "harness"
"""What a run folder made before protocols existed followed (its config.json names none)."""

PROTOCOL_MODES: tuple[Mode, ...] = MODES
"""The modes whose first attempt a protocol decides; every other mode (the agentic modes,
the diagnostic settings, the verbal-confidence variant) always uses the harness's
templates, having no counterpart in upstream's scripts."""

ReaderName = Literal["paper", "harness"]
"""A reader is named after the protocol it belongs to; any run can be re-read by either.
The dar protocol has no reader of its own: DAR judges final states, not replies."""
READERS: tuple[ReaderName, ...] = ("paper", "harness")


def check_protocol(name: object) -> ProtocolName:
    """``name`` as a protocol name, or one sentence saying which names there are."""
    for protocol in PROTOCOLS:
        if name == protocol:
            return protocol
    raise ConfigError(f"unknown protocol {name!r}; choose from {', '.join(PROTOCOLS)}.")


def check_reader(name: object) -> ReaderName:
    """``name`` as a reader name, or one sentence saying which readers there are."""
    for reader in READERS:
        if name == reader:
            return reader
    raise ConfigError(f"unknown reader {name!r}; choose from {', '.join(READERS)}.")


def protocol_reader(protocol: ProtocolName) -> ReaderName:
    """The reader of a protocol's records: the paper's for ``paper``, else the harness's
    (a dar run's records hold the harness's judgement of each final state)."""
    return "paper" if protocol == "paper" else "harness"


def recorded_protocol(config: object) -> ProtocolName:
    """The protocol a run folder's config.json records (``harness`` when it names none:
    it was made before the paper protocol existed)."""
    value = config.get("protocol") if isinstance(config, dict) else None
    return check_protocol(value) if value is not None else LEGACY_PROTOCOL


def mode_protocol(protocol: str, mode: str) -> ProtocolName:
    """The protocol a mode of a run followed: the run's for the prompted modes, the
    harness's for every other (``PROTOCOL_MODES``); under ``dar``, dar for the agentic
    modes (the only ones a dar run has)."""
    checked = check_protocol(protocol)
    if checked == DAR_PROTOCOL:
        return DAR_PROTOCOL if is_agentic(mode) else "harness"
    return checked if mode in PROTOCOL_MODES else "harness"


def default_modes(protocol: str) -> tuple[Mode, ...]:
    """The modes a run of ``protocol`` runs when none are named: the paper's three, or
    under ``dar`` (which runs nothing else) the three agentic modes."""
    return AGENT_MODES if check_protocol(protocol) == DAR_PROTOCOL else MODES


LEAK_MARK = "†"
"""Put beside a figure whose prompts showed other evaluated cases' reference programs."""


def shows_reference_programs(protocol: str, domain: str, mode: str) -> bool:
    """Whether a figure's prompts show the model other evaluated cases' reference
    programs: upstream's airline few-shot takes its exemplar from the evaluated split
    itself (the first other case of the same cabin class, leave-one-out), so under the
    paper protocol every airline few-shot prompt holds another hard case's answer key.
    The harness's exemplars come from the split's complement and never do."""
    return mode_protocol(protocol, mode) == "paper" and (domain, mode) == ("airline", "few-shot")


DEPARTURE_MARK = "‡"
"""Put beside a paper-protocol figure whose first attempts sampled with upstream's flags
(``--temperature``, ``--reasoning-effort``) set otherwise than in the published runs."""


def sampling_departures(protocol: str, mode: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The upstream flags a run's ``mode`` figures were sampled with, away from the
    published setting (config.json's ``model.identity.paper_sampling.departures``, which
    ``api.prepare`` writes); empty for the harness's figures and for published settings."""
    if mode_protocol(protocol, mode) != "paper":
        return {}
    model = config.get("model")
    identity = model.get("identity") if isinstance(model, Mapping) else None
    paper = identity.get("paper_sampling") if isinstance(identity, Mapping) else None
    departures = paper.get("departures") if isinstance(paper, Mapping) else None
    return dict(departures) if isinstance(departures, Mapping) else {}


def departure_note(departures: Mapping[str, Any]) -> str:
    """The sentence said beside such figures (the score table, results.json, the report)."""
    given = ", ".join(f"{name}={value}" for name, value in sorted(departures.items()))
    return (
        f"{DEPARTURE_MARK} paper-protocol first attempts sampled with {given} (upstream's "
        "flags set by --param), not the published setting: a departure from Table 2's runs."
    )


def reference_leak_note(domain_title: str) -> str:
    """The sentence said beside such figures (the score table, the report, the docs)."""
    return (
        f"{LEAK_MARK} {domain_title} few-shot under the paper protocol: each prompt's "
        "exemplar is another evaluated case's reference program (upstream's leave-one-out "
        "retrieval by cabin class), so the figure is not leak-free."
    )
