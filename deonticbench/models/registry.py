"""Per-model settings from ``eval/models.yaml``, merged with the user's overrides.

Resolution, later wins: ``defaults`` → ``backends.<provider>`` → the first matching
entry of ``models`` → overrides (``--param key=value``).  A ``models`` key is a glob on
the model name (``o3*``) or on ``provider:model`` when it holds a colon; an exact name
beats any glob.

Keys are of two kinds: sampling parameters (they change the output, so they become
``GenerationParams`` and the cache key) and backend options (retries, timeouts, context
size: how we ask, not what comes back; kept out of the key).
"""

from __future__ import annotations

import fnmatch
import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._paths import EVAL
from ..errors import ConfigError
from .base import GenerationParams

REGISTRY_FILE = EVAL / "models.yaml"

SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "reasoning_effort", "seed", "stop", "extra")
OPTION_TYPES: dict[str, type] = {
    "max_tries": int,
    "backoff_base_s": float,
    "backoff_cap_s": float,
    "retry_after_cap_s": float,
    "timeout_s": float,
    "check_timeout_s": float,
    "n_ctx": int,
    "n_threads": int,
    "gpu_memory_utilization": float,
    "tensor_parallel_size": int,
    # agentic modes: "native" (the backend's own tool calling, the default where there is
    # one) or "text" (the fenced-JSON protocol of docs/agents.md, for servers without a
    # tool parser)
    "tool_protocol": str,
}
FLAG_KEYS = ("reasoning",)
DOC_KEYS = ("note",)
PRICE_KEYS = ("usd_per_mtok_in", "usd_per_mtok_out")
"""List prices per million tokens, read by results.json's cost estimate; not sent."""
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


@dataclass(frozen=True)
class ModelSettings:
    """Everything a backend needs besides its spec."""

    params: GenerationParams
    reasoning: bool = False
    """A reasoning model: takes ``reasoning_effort``, never temperature or top_p."""
    options: Mapping[str, Any] = field(default_factory=dict)
    entry: str | None = None
    """The ``models.yaml`` key that matched, if any (for messages and run configs)."""

    def option(self, name: str, default: Any) -> Any:
        value = self.options.get(name)
        return default if value is None else value


def load_registry(path: Path | None = None) -> dict[str, Any]:
    """Read the registry file; a missing file is an empty registry."""
    import yaml  # start-up: only when the registry file is read

    chosen = path or REGISTRY_FILE
    if not chosen.exists():
        return {}
    try:
        data = yaml.safe_load(chosen.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{chosen} is not valid YAML ({exc}).") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{chosen} should hold a mapping with defaults, backends and models.")
    return data


def resolve_settings(
    provider: str,
    model_name: str,
    overrides: Mapping[str, Any] | None = None,
    *,
    registry: Mapping[str, Any] | None = None,
) -> ModelSettings:
    """Merge registry layers and overrides for one model into validated settings."""
    reg = load_registry() if registry is None else registry
    merged: dict[str, Any] = {}
    _layer(merged, reg.get("defaults"), "defaults")
    _layer(merged, (reg.get("backends") or {}).get(provider), f"backends.{provider}")
    entry = match_entry(reg.get("models") or {}, provider, model_name)
    if entry is not None:
        _layer(merged, reg["models"][entry], f"models.{entry}")
    reasoning = _as_bool(merged.pop("reasoning", False))
    user = dict(overrides or {})
    if "reasoning" in user:
        reasoning = _as_bool(user.pop("reasoning"))
    if reasoning:
        # Reasoning models reject sampling temperature; the registry's defaults for other
        # models must not leak in.  Only an explicit override may set them (and is refused).
        merged.pop("temperature", None)
        merged.pop("top_p", None)
    _layer(merged, user, "overrides")
    if reasoning:
        given = [k for k in ("temperature", "top_p") if not _is_null(merged.get(k))]
        if given:
            raise ConfigError(
                f"{model_name} is a reasoning model: it takes reasoning_effort, "
                f"not {' or '.join(given)}."
            )
    params = _params_from(merged, model_name)
    options = {k: _coerce(k, merged[k], OPTION_TYPES[k]) for k in OPTION_TYPES if k in merged}
    return ModelSettings(params=params, reasoning=reasoning, options=options, entry=entry)


def match_entry(models: Mapping[str, Any], provider: str, model_name: str) -> str | None:
    """The registry key for a model: exact name first, then the first matching glob."""
    full = f"{provider}:{model_name}"
    for key in models:
        if key in (model_name, full):
            return str(key)
    for key in models:
        target = full if ":" in str(key) else model_name
        if fnmatch.fnmatchcase(target, str(key)):
            return str(key)
    return None


def _layer(merged: dict[str, Any], layer: Any, where: str) -> None:
    if layer is None:
        return
    if not isinstance(layer, Mapping):
        raise ConfigError(f"{where} in the model registry should be a mapping of parameters.")
    known = (*SAMPLING_KEYS, *OPTION_TYPES, *FLAG_KEYS, *DOC_KEYS, *PRICE_KEYS)
    for key, value in layer.items():
        if isinstance(key, str) and key.startswith("extra.") and len(key) > 6:
            # --param extra.top_k=20: one provider field from the command line.
            merged["extra"] = {**merged.get("extra", {}), key[6:]: _cli_value(value)}
            continue
        if key not in known:
            raise ConfigError(
                f"unknown model parameter {key!r} in {where}; known: {', '.join(known)}."
            )
        if key == "extra":
            if not isinstance(value, Mapping):
                raise ConfigError(f"'extra' in {where} should be a mapping of request fields.")
            merged["extra"] = {**merged.get("extra", {}), **value}
        elif key not in DOC_KEYS and key not in PRICE_KEYS:
            merged[key] = value


def _params_from(merged: Mapping[str, Any], model_name: str) -> GenerationParams:
    effort = _optional(merged.get("reasoning_effort"), str, "reasoning_effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        raise ConfigError(
            f"reasoning_effort {effort!r} for {model_name} is not one of "
            f"{', '.join(REASONING_EFFORTS)}."
        )
    stop_raw = merged.get("stop")
    stop: tuple[str, ...] | None
    if _is_null(stop_raw):
        stop = None
    elif isinstance(stop_raw, str):
        stop = (stop_raw,)
    elif isinstance(stop_raw, list | tuple) and all(isinstance(s, str) for s in stop_raw):
        stop = tuple(stop_raw)
    else:
        raise ConfigError("stop should be a string or a list of strings.")
    max_tokens = _optional(merged.get("max_tokens"), int, "max_tokens")
    if max_tokens is not None and max_tokens < 1:
        raise ConfigError("max_tokens should be a positive integer.")
    return GenerationParams(
        temperature=_optional(merged.get("temperature"), float, "temperature"),
        top_p=_optional(merged.get("top_p"), float, "top_p"),
        max_tokens=max_tokens,
        reasoning_effort=effort,
        seed=_optional(merged.get("seed"), int, "seed"),
        stop=stop,
        extra=dict(merged.get("extra") or {}),
    )


def _cli_value(value: Any) -> Any:
    """A command-line string as the JSON value it spells (20, 0.5, true), else the string."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def _is_null(value: Any) -> bool:
    # Overrides arrive as strings from the command line: 'none' removes a registry value.
    return value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null"))


def _optional(value: Any, kind: type, name: str) -> Any:
    return None if _is_null(value) else _coerce(name, value, kind)


def _coerce(name: str, value: Any, kind: type) -> Any:
    if isinstance(value, bool) or (kind is str and not isinstance(value, str)):
        raise ConfigError(f"{name} should be a {kind.__name__}, not {value!r}.")
    try:
        if kind is int and isinstance(value, float) and not value.is_integer():
            raise ValueError
        return kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} should be a {kind.__name__}, not {value!r}.") from None


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"reasoning should be true or false, not {value!r}.")


def __getattr__(name: str) -> Any:
    # ``Settings`` was renamed: the word is the diagnostic-settings stage (``settings/``).
    if name == "Settings":
        warnings.warn(
            "deonticbench.models.registry.Settings is now "
            "deonticbench.models.registry.ModelSettings (also deonticbench.models.ModelSettings).",
            DeprecationWarning,
            stacklevel=2,
        )
        return ModelSettings
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
