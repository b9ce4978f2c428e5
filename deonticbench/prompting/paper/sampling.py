"""What upstream's generate_e2e.py samples with, for a model name and a base URL.

``run_inference`` builds each request as: ``n`` = K and ``temperature`` = its argparse
default (0.7); then the fields of each model set the model is in (``deepseek_models``:
``top_p``, ``temperature``, ``max_tokens``; ``gpt4_models``: ``max_completion_tokens``),
in source order; for a model of ``model_config.yaml``'s ``reasoning_models``,
``reasoning_effort`` (its default, medium) and no temperature; then that model's
``model_params`` entry overrides any field.  Where the model is in ``max_n_1_models`` or
the base URL names OpenRouter or Together, the request goes with ``n`` = 1, K times.
``n`` is always sent, even when it is 1.  Every value here is read from upstream's files
(``texts``); this module only applies them in that order.

``codex_models`` go through OpenAI's Responses API upstream: not reproduced (refused).

Upstream's script takes two sampling flags, ``--temperature`` and ``--reasoning-effort``;
``--param temperature=...`` and ``--param reasoning_effort=...`` are those flags
(``Departures``): their values replace the argparse defaults at the very point where
upstream applies them, so the model sets and ``model_params`` still override them as
upstream's do.  Where upstream would not send the value (a model set or
``model_params`` overrides it, or ``reasoning_effort`` for a model that is no reasoning
model), the flag is refused, never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError
from .texts import PaperTexts

UPSTREAM_FLAGS = {"temperature": "--temperature", "reasoning_effort": "--reasoning-effort"}
"""The sampling parameters upstream's script takes as flags, and the flags' names."""


@dataclass(frozen=True)
class Departures:
    """Values given for upstream's flags (``UPSTREAM_FLAGS``): None, the published default."""

    temperature: float | None = None
    reasoning_effort: str | None = None

    def given(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True)
class PaperSampling:
    """The sampling fields of a paper-protocol first request, named as upstream names them
    on the wire (``max_completion_tokens`` for gpt-4.1, ``max_tokens`` for deepseek and
    ``model_params``), besides ``model``, ``messages`` and ``n``."""

    fields: Mapping[str, Any] = field(default_factory=dict)
    one_per_call: bool = False
    """Upstream sends ``n`` = 1 K times instead of one request with ``n`` = K."""
    departures: Mapping[str, Any] = field(default_factory=dict)
    """Upstream's flags given values other than their published defaults, as sent."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready and stable: part of the response-cache key."""
        return {
            "fields": {k: self.fields[k] for k in sorted(self.fields)},
            "one_per_call": self.one_per_call,
            # Only when given, so that a run at the published setting keeps its key.
            **({"departures": dict(self.departures)} if self.departures else {}),
        }


def paper_sampling(
    texts: PaperTexts,
    model_name: str,
    base_url: str | None,
    flags: Departures | None = None,
) -> PaperSampling:
    """The fields upstream sends for ``model_name`` at ``base_url`` (None: OpenAI's), run
    with ``flags`` (None: its defaults); a flag upstream would not send is refused."""
    if model_name in texts.model_set("codex_models"):
        raise ConfigError(
            f"upstream sends {model_name} through OpenAI's Responses API, which the paper "
            "protocol does not reproduce; use --protocol harness."
        )
    given = (flags or Departures()).given()
    temperature = given.get("temperature", texts.default_temperature)
    fields: dict[str, Any] = {"temperature": temperature}
    for set_name, set_fields in texts.set_fields:
        if model_name in texts.model_set(set_name):
            fields.update(set_fields)
    if model_name in texts.reasoning_models:
        fields["reasoning_effort"] = given.get("reasoning_effort", texts.default_reasoning_effort)
        fields.pop("temperature", None)
    fields.update(texts.model_params.get(model_name, {}))
    for name, value in given.items():
        if fields.get(name) != value:
            raise ConfigError(_not_sent(name, model_name, texts))
    url = base_url or ""
    single = model_name in texts.model_set("max_n_1_models") or any(
        host in url for host in texts.single_hosts
    )
    return PaperSampling(fields=fields, one_per_call=single, departures=given)


def _not_sent(name: str, model_name: str, texts: PaperTexts) -> str:
    """The sentence refusing a flag whose value upstream's script would not send."""
    flag = UPSTREAM_FLAGS[name]
    if name == "reasoning_effort" and model_name not in texts.reasoning_models:
        why = f"sends {flag} only to the reasoning models of its model_config.yaml"
    else:
        why = f"sends its own {name} for {model_name} whatever {flag} says"
    return (
        f"--param {name}: upstream's script {why}, so the paper protocol cannot send it; "
        "use --protocol harness to choose it."
    )
