"""What the HTTP API backends share: retry policy, base URL, key lookup, token split."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from contextlib import AbstractAsyncContextManager
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import ConfigError
from ._sdk import provider_message
from .backoff import RetryPolicy
from .base import Completion, Model, constrained_turns
from .constrained import CONSTRAINED_MAX_TOKENS_PARAM, constrained_max_tokens
from .lifecycle import Retirement
from .registry import ModelSettings


def public_url(url: str | None) -> str | None:
    """A base URL without user info, query or fragment: safe to record and to key on."""
    if not url:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def env_key(name: str, *, required: bool, purpose: str) -> str | None:
    """An API key from the environment, the only place keys come from."""
    value = os.environ.get(name, "").strip()
    if value:
        return value
    if required:
        raise ConfigError(
            f"{name} is not set: export it to use {purpose}, or choose another --model."
        )
    return None


def split_usage(
    completions_texts: list[tuple[str, str | None]],
    prompt: int,
    output: int,
    latency_s: float,
    logprobs: list[tuple[tuple[str, float], ...] | None] | None = None,
    cached: int = 0,
) -> list[Completion]:
    """Completions for one API call: the prompt is billed once (first choice, with the
    part of it read from the provider's prompt cache), the output tokens, reported per
    call, are shared out as evenly as integers allow."""
    count = len(completions_texts)
    if count == 0:
        return []
    share, rest = divmod(max(output, 0), count)
    return [
        Completion(
            text=text,
            tokens_in=max(prompt, 0) if index == 0 else 0,
            cache_read_tokens=min(max(cached, 0), max(prompt, 0)) if index == 0 else 0,
            tokens_out=share + (1 if index < rest else 0),
            latency_s=latency_s,
            finish_reason=finish,
            logprobs=logprobs[index] if logprobs else None,
        )
        for index, (text, finish) in enumerate(completions_texts)
    ]


class RemoteModel(Model):
    """A model behind an HTTP API, called through an official async client."""

    def __init__(
        self,
        spec: str,
        provider: str,
        model_name: str,
        settings: ModelSettings,
        base_url: str | None,
    ) -> None:
        self.spec = spec
        self.provider = provider
        self.model_name = model_name
        self.params = settings.params
        self.settings = settings
        self.reasoning = settings.reasoning
        self.base_url = base_url
        self.policy = RetryPolicy(
            max_tries=max(int(settings.option("max_tries", 6)), 1),
            base_s=float(settings.option("backoff_base_s", 1.0)),
            cap_s=float(settings.option("backoff_cap_s", 60.0)),
            retry_after_cap_s=float(settings.option("retry_after_cap_s", 300.0)),
        )
        self.timeout_s = float(settings.option("timeout_s", 600.0))
        self.check_timeout_s = float(settings.option("check_timeout_s", 15.0))
        self._rng = random.Random()
        self._client: Any = None
        self._slots_limit: int | None = None
        self._slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = None
        self.calls_sent = 0
        """HTTP calls made (every try of every call): what the server received."""
        self._checked = False
        """The server answered ``check_with`` once: it is not asked again."""

    def _end_of_life(self) -> Retirement | None:
        """The registry's date (``retirements`` in eval/models.yaml, keyed by this
        backend's provider and the model's exact name)."""
        return self.settings.retirement

    def _limit_in_flight(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the limit of calls in flight must be at least 1")
        self._slots_limit = limit
        self._slots = None

    @property
    def in_flight(self) -> AbstractAsyncContextManager[Any]:
        """Hold this around the one HTTP call of a try (not around a backoff's sleep), so
        that the calls in flight never exceed ``limit_in_flight``.  Each use is one call,
        so the calls a run sent are counted here (``calls_sent``)."""
        self.calls_sent += 1
        if self._slots_limit is None:
            return contextlib.nullcontext()
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots[0] is not loop:
            self._slots = (loop, asyncio.Semaphore(self._slots_limit))
        return self._slots[1]

    def client(self) -> Any:
        """The provider's async client, created on first use."""
        raise NotImplementedError

    async def check_with(self, sdk: ModuleType, key_env: str) -> None:
        """Pre-flight through the official client: a rejected key or an unreachable server is
        one sentence before any work; any other answer means the server is there.  Asked
        once in the backend's life: an eval set checks every model at its start, and each
        run's own pre-flight then finds it checked."""
        if self._checked:
            return
        client = self.client()
        where = public_url(self.base_url)
        try:
            await client.with_options(timeout=self.check_timeout_s, max_retries=0).models.list()
        except (sdk.AuthenticationError, sdk.PermissionDeniedError) as exc:
            raise ConfigError(
                f"{where} rejected the key in {key_env}: {provider_message(exc)}"
            ) from None
        except sdk.APIConnectionError as exc:
            reason = "timed out" if isinstance(exc, sdk.APITimeoutError) else "connection failed"
            raise ConfigError(f"cannot reach {where} ({reason}); is the server running?") from None
        except sdk.APIStatusError:
            pass  # it answered: reachable, even if it has no model listing
        self._checked = True

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    def identity(self) -> dict[str, Any]:
        ident = super().identity()
        ident["base_url"] = public_url(self.base_url)
        # A constrained turn's own output limit changes what comes back (the cache key).
        limit = constrained_max_tokens(self.settings.options, None)
        if constrained_turns(self) and limit is not None:
            ident[CONSTRAINED_MAX_TOKENS_PARAM] = limit
        return ident
