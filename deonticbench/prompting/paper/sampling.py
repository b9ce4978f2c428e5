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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError
from .texts import PaperTexts


@dataclass(frozen=True)
class PaperSampling:
    """The sampling fields of a paper-protocol first request, named as upstream names them
    on the wire (``max_completion_tokens`` for gpt-4.1, ``max_tokens`` for deepseek and
    ``model_params``), besides ``model``, ``messages`` and ``n``."""

    fields: Mapping[str, Any] = field(default_factory=dict)
    one_per_call: bool = False
    """Upstream sends ``n`` = 1 K times instead of one request with ``n`` = K."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready and stable: part of the response-cache key."""
        return {
            "fields": {k: self.fields[k] for k in sorted(self.fields)},
            "one_per_call": self.one_per_call,
        }


def paper_sampling(texts: PaperTexts, model_name: str, base_url: str | None) -> PaperSampling:
    """The fields upstream sends for ``model_name`` at ``base_url`` (None: OpenAI's)."""
    if model_name in texts.model_set("codex_models"):
        raise ConfigError(
            f"upstream sends {model_name} through OpenAI's Responses API, which the paper "
            "protocol does not reproduce; use --protocol harness."
        )
    fields: dict[str, Any] = {"temperature": texts.default_temperature}
    for set_name, set_fields in texts.set_fields:
        if model_name in texts.model_set(set_name):
            fields.update(set_fields)
    if model_name in texts.reasoning_models:
        fields["reasoning_effort"] = texts.default_reasoning_effort
        fields.pop("temperature", None)
    fields.update(texts.model_params.get(model_name, {}))
    url = base_url or ""
    single = model_name in texts.model_set("max_n_1_models") or any(
        host in url for host in texts.single_hosts
    )
    return PaperSampling(fields=fields, one_per_call=single)
