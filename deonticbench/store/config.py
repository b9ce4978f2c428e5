"""A run folder's config.json: reading it, writing it, and whether a run may resume it.

config.json holds everything that produced a run's numbers (``provenance.build_config``).
Its *fingerprint* (model identity, split, attempts, seed, templates, data, limits) must
match for a run to be resumed: otherwise two experiments would be mixed in one
records.jsonl.  Domains and modes may be added to a run; the merged config records
their union and every session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ConfigError, DataError
from ..vocabulary.exemplar_choice import DEFAULT_EXEMPLARS, current_exemplar_choice
from ..vocabulary.protocols import recorded_protocol

CONFIG_NAME = "config.json"
CASE_ORDER_KEY = "case_order"
"""config.json's key: per domain, the run's case ids in the split's file order."""


# The config fields that decide what a record means.  Resuming with any of them changed
# would mix two experiments in one file; everything else (domains and modes added,
# --limit, concurrency, versions) may differ between sessions of one run.
FINGERPRINT_FIELDS = (
    "protocol",
    "model",
    "split",
    "attempts",
    "seed",
    "templates",
    "data",
    "limits",
    "exemplars",
    "distractors",
)


AGENT_TOOL_MODE_KEY = "tool_mode"
"""config.json's ``agent`` key for the tool mode the agent's tools were offered in."""
OLD_AGENT_TOOL_MODE_KEY = "protocol"
"""Its name in folders written before the tool mode had its own name, which still read."""


def agent_settings(config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """config.json's ``agent`` as this version names it (``tool_mode_named``), so that
    an older folder's run resumes."""
    agent = config.get("agent")
    return tool_mode_named(agent) if isinstance(agent, Mapping) else agent


def tool_mode_named(agent: Mapping[str, Any]) -> Mapping[str, Any]:
    """An ``agent`` object (config.json's, or a record's) as this version names it: an
    older one's ``protocol`` is its ``tool_mode`` (the policy for older folders,
    ``store.run``); still read, never written."""
    if OLD_AGENT_TOOL_MODE_KEY not in agent:
        return agent
    renamed = {k: v for k, v in agent.items() if k != OLD_AGENT_TOOL_MODE_KEY}
    return {AGENT_TOOL_MODE_KEY: agent[OLD_AGENT_TOOL_MODE_KEY], **renamed}


def _describe_difference(field: str, old: Any, new: Any) -> str:
    if field == "data":
        return "the data source or its revision differs"
    if field == "templates":
        return "the prompt templates have changed"
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        # Name the keys that differ (an agent's protocol, a budget), each with both values:
        # the whole object, cut to fit a line, would hide which one it is.
        keys = sorted(k for k in {*old, *new} if old.get(k) != new.get(k))
        return "; ".join(
            f"{field}.{k} differs ({_short(old.get(k))} before, {_short(new.get(k))} now)"
            for k in keys
        )
    return f"{field} differs ({_shown(field, old)} before, {_shown(field, new)} now)"


_DEFAULTS_SHOWN = {"exemplars": "seeded (the default)", "distractors": "none (the default)"}
"""What config.json's absent field means: it writes these only when not the default."""


def _shown(field: str, value: Any) -> str:
    return _DEFAULTS_SHOWN[field] if value is None and field in _DEFAULTS_SHOWN else _short(value)


def _describe_model_difference(old: Any, new: Any) -> str:
    """Name both models; when the spec is the same, name the parameters that differ."""

    def spec(model: Any) -> str:
        return str(model.get("spec")) if isinstance(model, Mapping) else _short(model)

    def identity(model: Any) -> Mapping[str, Any]:
        value = model.get("identity") if isinstance(model, Mapping) else None
        return value if isinstance(value, Mapping) else {}

    if spec(old) != spec(new):
        return f"the model differs ({spec(old)} before, {spec(new)} now)"
    a, b = identity(old), identity(new)
    changed = [
        f"{key} {_short(a.get(key))} before, {_short(b.get(key))} now"
        for key in sorted({*a, *b})
        if a.get(key) != b.get(key)
    ]
    return f"the model {spec(new)} has other sampling parameters ({'; '.join(changed)})"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def fingerprint(config: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a config that must match for records to be comparable."""
    out: dict[str, Any] = {}
    for key in FINGERPRINT_FIELDS:
        value = config.get(key)
        if key == "model" and isinstance(value, Mapping):
            # The spec string is a spelling; the identity (model, every sampling
            # parameter, endpoint) is what decides the responses.
            value = value.get("identity")
        if key == "protocol":
            value = recorded_protocol(config)
        if key == "exemplars" and current_exemplar_choice(value) == DEFAULT_EXEMPLARS:
            # Written only when not the default; older runs may say "paper", the seeded
            # choice's old name: all three spell one choice, so such a run resumes.
            value = None
        if key == "data" and isinstance(value, Mapping):
            # A local mirror may sit at another path on another machine: same content.
            value = {k: v for k, v in value.items() if k != "path"}
        out[key] = value
    return out


def config_mismatch(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """One clause saying why ``new`` cannot resume a run made with ``old`` (None: it can)."""
    a, b = fingerprint(old), fingerprint(new)
    for name in FINGERPRINT_FIELDS:
        if a[name] != b[name]:
            if name == "model":
                return _describe_model_difference(old.get("model"), new.get("model"))
            return _describe_difference(name, a[name], b[name])
    # The agentic modes' settings: agentic modes may be added to a prompted run, but two
    # sessions of agentic trials must have run with the same tools and budgets.
    old_agent, new_agent = agent_settings(old), agent_settings(new)
    if old_agent is not None and new_agent is not None and old_agent != new_agent:
        return _describe_difference("agent", old_agent, new_agent)
    old_k = old.get("k") or {}
    for domain, k in (new.get("k") or {}).items():
        if domain in old_k and old_k[domain] != k:
            return f"K for {domain} differs ({old_k[domain]} before, {k} now)"
    return None


def merge_config(folder: Path, config: dict[str, Any]) -> dict[str, Any]:
    path = folder / CONFIG_NAME
    if not path.exists():
        _write_json_atomic(path, config)
        return config
    old = check_resumable(folder, config)
    # Domains and modes may be added to a run; their union is what the folder holds.
    merged = dict(old)
    merged["domains"] = _union(old.get("domains", []), config.get("domains", []))
    merged["modes"] = _union(old.get("modes", []), config.get("modes", []))
    merged["k"] = {**config.get("k", {}), **old.get("k", {})}
    if CASE_ORDER_KEY in config:
        merged[CASE_ORDER_KEY] = _merged_order(old.get(CASE_ORDER_KEY), config[CASE_ORDER_KEY])
    if merged.get("agent") is None and config.get("agent") is not None:
        merged["agent"] = config["agent"]
    merged["sessions"] = [*old.get("sessions", []), *config.get("sessions", [])]
    if merged != old:
        _write_json_atomic(path, merged)
    return merged


def check_resumable(folder: Path, config: Mapping[str, Any]) -> dict[str, Any]:
    """The folder's config, if ``config`` may resume it; else one sentence why not."""
    old = read_config(folder)
    why = config_mismatch(old, config)
    if why is not None:
        raise ConfigError(
            f"{folder} holds a run with another configuration ({why}); "
            "use another --out folder, --fresh to start this one afresh (the old run is "
            "moved aside, not deleted), or the original settings."
        )
    return old


def _merged_order(old: Any, new: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Two sessions' case orders as one: a session that plans all of a domain's earlier
    cases (the usual resume, or a larger --limit) gives its order; otherwise its new
    cases follow the earlier ones (two disjoint --case-ids sessions: an order the
    split may not have, which only upstream's bootstrap reads)."""
    merged = dict(old) if isinstance(old, Mapping) else {}
    for domain, ids in new.items():
        before = list(merged.get(domain) or [])
        merged[domain] = list(ids) if set(before) <= set(ids) else _union(before, list(ids))
    return merged


def _union(a: list[Any], b: list[Any]) -> list[Any]:
    return list(dict.fromkeys([*a, *b]))


def read_config(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The strict reader: a run folder's config.json, or ``DataError`` saying why not
    (resuming, ``batches``, ``analyze`` and ``--fresh`` need the configuration itself)."""
    path = Path(folder) / CONFIG_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{path} cannot be read as a run configuration ({exc}).") from None
    if not isinstance(data, dict):
        raise DataError(f"{path} is not a JSON object.")
    return data


def read_config_forgiving(folder: str | os.PathLike[str]) -> tuple[dict[str, Any], str | None]:
    """The reader for scoring a folder as it is (``store.run.read_run``): its config.json,
    or ``{}`` and the note saying why it was left out (missing, unreadable, not an
    object).  What an empty or older config means is the policy in ``store.run``."""
    path = Path(folder) / CONFIG_NAME
    if not path.is_file():
        return {}, f"{CONFIG_NAME} is missing: the model name is taken from records"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return {}, f"{CONFIG_NAME} is unreadable ({exc}); it was ignored"
    if not isinstance(config, dict):
        return {}, f"{CONFIG_NAME} is not a JSON object; it was ignored"
    return config, None


def recorded_model_spec(folder: str | os.PathLike[str]) -> str | None:
    """The model spec config.json records (strictly read; None: it records none)."""
    model = read_config(folder).get("model", {})
    spec = model.get("spec") if isinstance(model, Mapping) else None
    return None if spec is None else str(spec)


def check_existing(folder: Path, config: Mapping[str, Any]) -> None:
    """Refuse ``config`` for a folder that already holds a run made otherwise (nothing
    to check when the folder holds no config.json yet)."""
    if (folder / CONFIG_NAME).exists():
        check_resumable(folder, config)


def _write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, sort_keys=False, ensure_ascii=False)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
