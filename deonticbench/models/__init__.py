"""Model backends behind one small async interface (see ``base.py``).

Backends import their provider SDKs only when chosen, so ``import deonticbench.models``
stays cheap and works without any optional extra.
"""

from __future__ import annotations

from ..prompting.chat import Message
from .base import Completion, GenerationParams, Model, Request
from .loader import BACKENDS, load_model
from .retry import RetryPolicy
from .tokens import count_prompt_tokens, token_count_method

__all__ = [
    "BACKENDS",
    "Completion",
    "GenerationParams",
    "Message",
    "Model",
    "Request",
    "RetryPolicy",
    "count_prompt_tokens",
    "load_model",
    "token_count_method",
]
