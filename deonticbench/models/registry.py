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

import copy
import fnmatch
import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._paths import EVAL
from ..errors import ConfigError
from .base import GenerationParams
from .lifecycle import REGISTRY_SOURCE, Retirement, as_day

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
    # the model's context window in tokens, for the agent loop's context budget
    # (docs/agents.md); ``local:`` models use their n_ctx instead
    "context_tokens": int,
    "n_threads": int,
    "gpu_memory_utilization": float,
    "tensor_parallel_size": int,
    # the environment variable an OpenAI-compatible endpoint's key is read from (its
    # name, never the key), for a set that reaches several such servers at once
    "api_key_env": str,
    # agentic modes: "native" (the backend's own tool calling, the default where there is
    # one), "text" (the fenced-JSON protocol of docs/agents.md, for servers without a
    # tool parser) or "constrained" (one call per turn, decoded under a schema or forced:
    # the default for local:); a constrained turn's output limit, which goes into the
    # backend's identity when the protocol is constrained; and which request field an
    # OpenAI-compatible server takes the schema in (docs/agents.md)
    "tool_mode": str,
    "constrained_max_tokens": int,
    "constrained_field": str,
    # prompt caching (docs/cost.md): the smallest prefix, in tokens, that the provider
    # caches for this model family (no breakpoint is set below it), and how long an
    # Anthropic cache entry lives ("5m" or "1h")
    "cache_min_tokens": int,
    "cache_ttl": str,
    # provider batches (eval --batch, docs/running.md): seconds between two looks at a
    # batch in flight, requests per batch (below the provider's limit, to split a run
    # into smaller batches), and OpenAI's batch queue limit in input tokens, which
    # depends on the account's usage tier (see its limits page)
    "batch_poll_s": float,
    "batch_max_requests": int,
    "batch_queue_tokens": int,
}
FLAG_KEYS = ("reasoning", "prompt_cache")
DOC_KEYS = ("note",)
PRICE_KEYS = (
    "usd_per_mtok_in",
    "usd_per_mtok_out",
    "usd_per_mtok_cache_write_5m",
    "usd_per_mtok_cache_write_1h",
    "usd_per_mtok_cache_read",
    "batch_discount",
)
"""List prices per million tokens (and the fraction a provider batch takes off every
figure), read by the dry run and results.json's cost estimate; never sent."""
CACHE_TTLS = ("5m", "1h")
DEFAULT_CACHE_TTL = "5m"
"""Interactive runs write 5-minute entries (1.25x the input price): a run's requests to
one prefix follow each other within seconds.  Batches may wait hours, so they write
1-hour entries (2x) through ``cache_ttl=1h`` (docs/cost.md)."""
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
    prompt_cache: bool = True
    """Ask the provider to cache shared prompt prefixes (``--no-prompt-cache``: off).
    How we ask, not what comes back: not a sampling parameter, never in the cache key."""
    prices: Prices | None = None
    """The model's list prices, when the registry knows them."""
    retirement: Retirement | None = None
    """The day the provider retires the model, when the registry's ``retirements`` say."""

    def option(self, name: str, default: Any) -> Any:
        value = self.options.get(name)
        return default if value is None else value


def load_registry(path: Path | None = None) -> dict[str, Any]:
    """Read the registry file; a missing file is an empty registry.  The parse is kept
    while the file is unchanged (its size and modification time): a report prices every
    row, and each look-up parsed the YAML again (0.1 s each)."""
    chosen = path or REGISTRY_FILE
    try:
        stat = chosen.stat()
    except FileNotFoundError:
        return {}
    return copy.deepcopy(_parsed(str(chosen), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=8)
def _parsed(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    import yaml  # start-up: only when the registry file is read

    chosen = Path(path)
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
    reasoning = _as_bool(merged.pop("reasoning", False), "reasoning")
    prompt_cache = _as_bool(merged.pop("prompt_cache", True), "prompt_cache")
    user = dict(overrides or {})
    if "reasoning" in user:
        reasoning = _as_bool(user.pop("reasoning"), "reasoning")
    if "prompt_cache" in user:
        prompt_cache = _as_bool(user.pop("prompt_cache"), "prompt_cache")
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
    ttl = options.get("cache_ttl")
    if ttl is not None and ttl not in CACHE_TTLS:
        raise ConfigError(f"cache_ttl should be one of {', '.join(CACHE_TTLS)}, not {ttl!r}.")
    prices = prices_of(reg["models"][entry], entry) if entry is not None else None
    return ModelSettings(
        params=params,
        reasoning=reasoning,
        options=options,
        entry=entry,
        prompt_cache=prompt_cache,
        prices=prices,
        retirement=retirement_of(reg, provider, model_name),
    )


def retirement_of(registry: Mapping[str, Any], provider: str, model_name: str) -> Retirement | None:
    """The registry's end of life for ``provider:model_name``.  ``retirements`` are keyed
    by exact names, never globs: a snapshot, or a sibling a glob would also match
    (gpt-4.1-nano beside gpt-4.1), may retire on another day."""
    table = registry.get("retirements") or {}
    if not isinstance(table, Mapping):
        raise ConfigError("retirements in the model registry should map provider:model to a date.")
    key = f"{provider}:{model_name}"
    if key not in table:
        return None
    day = as_day(table[key])
    if day is None:
        raise ConfigError(
            f"retirements.{key} in the model registry should be a date (YYYY-MM-DD), "
            f"not {table[key]!r}."
        )
    return Retirement(day, REGISTRY_SOURCE)


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


def _as_bool(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} should be true or false, not {value!r}.")


# --- prices ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Prices:
    """A model's list prices in USD per million tokens (eval/models.yaml).  A figure the
    registry does not give is None: tokens billed at it get no dollar amount, never a
    guessed one."""

    input: float
    output: float
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None
    cache_read: float | None = None
    """Anthropic's cache hits, OpenAI's cached input."""
    batch_discount: float | None = None
    """The fraction a provider batch takes off every figure (0.5 for both providers)."""
    entry: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "usd_per_mtok_in": self.input,
            "usd_per_mtok_out": self.output,
            "usd_per_mtok_cache_write_5m": self.cache_write_5m,
            "usd_per_mtok_cache_write_1h": self.cache_write_1h,
            "usd_per_mtok_cache_read": self.cache_read,
            "batch_discount": self.batch_discount,
        }


@dataclass(frozen=True)
class Cost:
    """Dollars of some token counts, in parts: each of the first four at list price, and
    what a provider batch took off them.  ``usd`` is what the bill says."""

    input: float
    """Uncached input tokens."""
    cache_writes: float
    cache_reads: float
    output: float
    batch_discount: float = 0.0

    @property
    def usd(self) -> float:
        return self.input + self.cache_writes + self.cache_reads + self.output - self.batch_discount

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.input + other.input,
            self.cache_writes + other.cache_writes,
            self.cache_reads + other.cache_reads,
            self.output + other.output,
            self.batch_discount + other.batch_discount,
        )

    def to_json(self, digits: int = 6) -> dict[str, float]:
        return {
            "usd": round(self.usd, digits),
            "input": round(self.input, digits),
            "cache_writes": round(self.cache_writes, digits),
            "cache_reads": round(self.cache_reads, digits),
            "output": round(self.output, digits),
            "batch_discount": round(self.batch_discount, digits),
        }


ZERO_COST = Cost(0.0, 0.0, 0.0, 0.0, 0.0)


def price_tokens(
    prices: Prices,
    *,
    uncached: int = 0,
    cache_write_5m: int = 0,
    cache_write_1h: int = 0,
    cache_read: int = 0,
    output: int = 0,
    batch: bool = False,
) -> Cost | None:
    """The one pricing rule: token counts (input split into uncached, cache writes by TTL
    and cache reads; output) into dollars with parts.  None when a count is non-zero but
    the registry has no price for it (a batch needs ``batch_discount``)."""
    rates = (
        (uncached, prices.input),
        (cache_write_5m, prices.cache_write_5m),
        (cache_write_1h, prices.cache_write_1h),
        (cache_read, prices.cache_read),
        (output, prices.output),
    )
    if any(count and rate is None for count, rate in rates):
        return None
    if batch and prices.batch_discount is None:
        return None

    def usd(count: int, rate: float | None) -> float:
        return count * (rate or 0.0) / 1_000_000

    cost = Cost(
        input=usd(uncached, prices.input),
        cache_writes=usd(cache_write_5m, prices.cache_write_5m)
        + usd(cache_write_1h, prices.cache_write_1h),
        cache_reads=usd(cache_read, prices.cache_read),
        output=usd(output, prices.output),
    )
    if not batch:
        return cost
    share = float(prices.batch_discount or 0.0)
    listed = cost.input + cost.cache_writes + cost.cache_reads + cost.output
    return Cost(cost.input, cost.cache_writes, cost.cache_reads, cost.output, listed * share)


def billed_split(
    tokens_in: int, cache_read: int, cache_write: int, cache_write_1h: int, tokens_out: int
) -> tuple[int, int, int, int, int]:
    """How a provider bills one reply's tokens: (uncached input, 5-minute cache writes,
    1-hour cache writes, cache reads, output).  ``tokens_in`` counts every prompt token,
    the cache's reads and writes among them (``models.base.Completion``).  The one rule
    of the split: results.json prices records with it, and a set's budget its replies."""
    hour = min(cache_write_1h, cache_write)
    uncached = max(tokens_in - cache_read - cache_write, 0)
    return uncached, cache_write - hour, hour, cache_read, tokens_out


def price_split(
    prices: Prices, split: tuple[int, int, int, int, int], *, batch: bool = False
) -> Cost | None:
    """``price_tokens`` of billed parts in ``billed_split``'s order (uncached input,
    5-minute and 1-hour cache writes, cache reads, output)."""
    uncached, w5m, w1h, read, out = split
    return price_tokens(
        prices,
        uncached=uncached,
        cache_write_5m=w5m,
        cache_write_1h=w1h,
        cache_read=read,
        output=out,
        batch=batch,
    )


def prices_of(entry: Mapping[str, Any] | None, name: str | None = None) -> Prices | None:
    """The prices of one registry entry: None without both the input and output price."""
    if not isinstance(entry, Mapping):
        return None

    def number(key: str) -> float | None:
        value = entry.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)

    pin, pout = number("usd_per_mtok_in"), number("usd_per_mtok_out")
    if pin is None or pout is None:
        return None
    return Prices(
        input=pin,
        output=pout,
        cache_write_5m=number("usd_per_mtok_cache_write_5m"),
        cache_write_1h=number("usd_per_mtok_cache_write_1h"),
        cache_read=number("usd_per_mtok_cache_read"),
        batch_discount=number("batch_discount"),
        entry=name,
    )


def model_prices(spec: str, registry: Mapping[str, Any] | None = None) -> Prices | None:
    """The list prices of a model spec (``provider:model``) from eval/models.yaml."""
    provider, sep, name = spec.partition(":")
    if not sep:
        return None
    name = name.split("@", 1)[0]  # openai-compatible:<model>@<url>
    reg = load_registry() if registry is None else registry
    models = reg.get("models") or {}
    entry = match_entry(models, provider, name)
    return prices_of(models[entry], entry) if entry is not None else None
