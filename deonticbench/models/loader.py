"""``load_model(spec)``: from a model spec string to a backend.

    openai:<model>                       OpenAI (OPENAI_API_KEY, OPENAI_BASE_URL)
    openai-compatible:<model>@<base_url> vLLM serve, OpenRouter, Together, llama.cpp server
    anthropic:<model>                    Anthropic (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)
    local:gemma3-270m | local:<file.gguf> llama.cpp on the CPU (the 'local' extra)
    vllm:<model>                         vLLM offline engine on a GPU (the 'vllm' extra)
    reference                            the cases' own gold material (pipeline self-check)
    replay:<file.jsonl>                  saved responses

A new backend is one module plus one entry in ``BACKENDS`` (see docs/backends.md).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..data.cases import Case
from ..errors import ConfigError
from .base import Model
from .reference import ReferenceModel, reference_table
from .registry import resolve_settings
from .remote import public_url
from .replay import ReplayModel

_URL_SPLIT = re.compile(r"^(?P<model>.+?)@(?P<url>https?://\S+)$")


def _openai(spec: str, name: str, overrides: Mapping[str, Any] | None) -> Model:
    # start-up: a backend's module (and its SDK) only when chosen
    from .openai_backend import OpenAIModel

    return OpenAIModel(spec, name, resolve_settings("openai", name, overrides), compatible=False)


def _openai_compatible(spec: str, rest: str, overrides: Mapping[str, Any] | None) -> Model:
    # start-up: a backend's module (and its SDK) only when chosen
    from .openai_backend import OpenAIModel

    match = _URL_SPLIT.match(rest)
    if match:
        name, url = match.group("model"), match.group("url")
    else:
        name, url = rest, os.environ.get("OPENAI_COMPATIBLE_BASE_URL", "").strip()
    if not url:
        raise ConfigError(
            f"model spec {spec!r} names no server: write openai-compatible:<model>@<base_url> "
            "(e.g. @http://localhost:8000/v1) or set OPENAI_COMPATIBLE_BASE_URL."
        )
    settings = resolve_settings("openai-compatible", name, overrides)
    # The spec is recorded in run folders: keep user info and query (which may carry a
    # password or token) in the client's URL only.
    public_spec = f"openai-compatible:{name}@{public_url(url)}"
    return OpenAIModel(public_spec, name, settings, compatible=True, base_url=url)


def _anthropic(spec: str, name: str, overrides: Mapping[str, Any] | None) -> Model:
    # start-up: a backend's module (and its SDK) only when chosen
    from .anthropic_backend import AnthropicModel

    return AnthropicModel(spec, name, resolve_settings("anthropic", name, overrides))


def _local(spec: str, name: str, overrides: Mapping[str, Any] | None) -> Model:
    # start-up: a backend's module (and its SDK) only when chosen
    from .local import LocalModel

    return LocalModel(spec, name, resolve_settings("local", name, overrides))


def _vllm(spec: str, name: str, overrides: Mapping[str, Any] | None) -> Model:
    # start-up: a backend's module (and its SDK) only when chosen
    from .vllm_backend import VLLMModel

    return VLLMModel(spec, name, resolve_settings("vllm", name, overrides))


def _reference(spec: str, rest: str, overrides: Mapping[str, Any] | None) -> Model:
    if rest:
        raise ConfigError(f"model spec {spec!r}: the reference backend takes no model name.")
    return ReferenceModel()  # its table comes from load_model(..., cases=)


def _replay(spec: str, path: str, overrides: Mapping[str, Any] | None) -> Model:
    return ReplayModel(spec, path)


Factory = Callable[[str, str, Mapping[str, Any] | None], Model]
BACKENDS: dict[str, Factory] = {
    "openai": _openai,
    "openai-compatible": _openai_compatible,
    "anthropic": _anthropic,
    "local": _local,
    "vllm": _vllm,
    "reference": _reference,
    "replay": _replay,
}
NEEDS_NAME = frozenset({"openai", "openai-compatible", "anthropic", "local", "vllm", "replay"})


# inspect's provider names that are a deonticbench backend under another name
_INSPECT_PROVIDERS = {"llama-cpp-python": "local"}


def _inspect_style(text: str) -> str | None:
    """``openai/gpt-4.1`` (inspect's spelling) as ``openai:gpt-4.1``, if it names a backend."""
    provider, slash, name = text.partition("/")
    backend = provider if provider in BACKENDS else _INSPECT_PROVIDERS.get(provider)
    if not slash or not name.strip() or backend is None:
        return None
    return f"{backend}:{name.strip()}"


def load_model(
    spec: str,
    *,
    overrides: dict[str, Any] | None = None,
    cases: Iterable[Case] = (),
    parts: Mapping[tuple[str, str, str], str] | None = None,
) -> Model:
    """Build the backend a spec names; an unknown or incomplete spec is a ConfigError.

    ``cases`` are the cases the run will ask about, and ``parts`` (domain, case id,
    setting) -> the part of a reference program a setting asks for: only the
    ``reference`` backend uses them (it answers with the gold material); no other
    backend ever sees them."""
    text, provider, rest, factory = _parse(spec)
    model = factory(text, rest, overrides)
    if provider == "reference":
        model = ReferenceModel(reference_table(cases), parts)
    return model


def check_spec(spec: str) -> None:
    """Raise the ConfigError ``load_model`` would for an unknown or incomplete spec,
    without building anything."""
    _parse(spec)


def _parse(spec: str) -> tuple[str, str, str, Factory]:
    text = spec.strip()
    provider, _, rest = text.partition(":")
    factory = BACKENDS.get(provider)
    if factory is None and not rest:
        suggestion = _inspect_style(text)
        if suggestion is not None:
            raise ConfigError(
                f"unknown model spec {spec!r}; did you mean {suggestion}? "
                "(deonticbench writes <backend>:<model>, inspect writes <backend>/<model>)"
            )
    if factory is None:
        raise ConfigError(
            f"unknown model spec {spec!r}: start it with one of {', '.join(BACKENDS)} "
            "(e.g. openai:gpt-4.1, local:gemma3-270m, reference)."
        )
    if provider in NEEDS_NAME and not rest.strip():
        raise ConfigError(f"model spec {spec!r} lacks a model: write {provider}:<name>.")
    return text, provider, rest.strip(), factory
