"""Anthropic messages API: ``anthropic:<model>``.

The API has no ``n``: each sample is its own call (each retried on its own).  With prompt
caching (the default, docs/cost.md) the first sample's call goes alone and the other
K - 1 follow when it has answered, so that they read the entry it wrote; without it
(``--no-prompt-cache``) the K calls go out at once.
System messages go in the ``system`` field, not the conversation.  ``max_tokens`` is
required by the API, so a fallback applies when the registry gives none.
``reasoning_effort`` maps to the API's ``output_config.effort``; extended thinking with
a token budget is a provider-specific field: ``extra: {thinking: {...}}``.
Under the constrained tool mode each agent turn forces one call of an offered tool
(``tool_choice`` any, parallel calls off); the API refuses a forced call with extended
thinking, so there the turn asks with ``auto`` instead, and ``notes()`` says so.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from collections.abc import Mapping
from typing import Any

from ..vocabulary.chat import ToolSpec
from ._sdk import (
    MalformedResponse,
    classify_sdk_error,
    field_of,
    finish_reason_of,
    import_sdk,
    reply_text,
    token_count,
)
from .backoff import call_with_retries
from .base import Completion, Request, config_of, constrained_turns
from .constrained import (
    CONSTRAINED,
    NATIVE,
    REPLY_SHAPE_KEY,
    TEXT,
    constrained_max_tokens,
    tool_mode,
)
from .lifecycle import Retirement, sdk_day
from .registry import DEFAULT_CACHE_TTL, ModelSettings
from .remote import RemoteModel, env_key
from .tool_calls import (
    anthropic_messages,
    anthropic_tools,
    read_anthropic_tool_calls,
)

ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"
FALLBACK_MAX_TOKENS = 8192
FORCED_CALL = {"type": "any", "disable_parallel_tool_use": True}
"""A constrained turn's ``tool_choice``: exactly one call of one of the offered tools."""
THINKING_CALL = {"type": "auto", "disable_parallel_tool_use": True}
"""The same with extended thinking, which only takes ``auto`` (or ``none``): the model
may still answer without a call, but never with more than one."""


def thinks(extra: Mapping[str, Any]) -> bool:
    """Whether the request fields turn extended thinking on (``thinking`` of any type but
    ``disabled``: ``enabled`` with a budget, or ``adaptive``)."""
    thinking = extra.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type", "enabled") != "disabled"


# Prompt caching, as Anthropic's prompt-caching page documents it: at most four
# breakpoints per request; a breakpoint finds an earlier entry only within the 20 blocks
# before it; a prefix shorter than the model family's minimum is not cached.
MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
DEFAULT_CACHE_MIN_TOKENS = 1024
CHARS_PER_TOKEN = 4
"""For the minimum-length check only: a prefix is flagged when its characters / 4 reach
the minimum (near the minimum, a flag too many costs nothing and one too few little)."""


def _blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of blocks (a string becomes one text block; an
    empty string none: the API refuses empty text blocks)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [dict(block) for block in content]


def _block_chars(block: Mapping[str, Any]) -> int:
    kind = block.get("type")
    if kind == "text":
        return len(str(block.get("text", "")))
    if kind == "tool_result":
        return len(str(block.get("content", "")))
    return len(json.dumps(block, ensure_ascii=False))


def with_cache_breakpoints(
    fields: dict[str, Any], request: Request, *, min_tokens: int, ttl: str
) -> dict[str, Any]:
    """The call's fields with content blocks and ``cache_control`` breakpoints.

    The text is the same, cut into blocks: the first user message in two at the end of
    what every case of the domain and mode shares (``request.shared_prefix``).  A prompted
    request gets a breakpoint there and one at its end (a case's other samples and its
    retry read that one).  An agentic turn (tools offered) gets one after the instruction
    (tools, system and instruction: what the K trials of a case share), a rolling one on
    its last block, and, when the turn added more blocks than the lookback reaches, one at
    the end of the previous turn's request, which is where that turn wrote its entry.
    No breakpoint goes on a prefix below ``min_tokens``."""
    control: dict[str, Any] = {"type": "ephemeral"}
    if ttl != "5m":
        control["ttl"] = ttl
    out = dict(fields)
    system = out.get("system")
    system_blocks = _blocks(system) if system else []
    if system_blocks:
        out["system"] = system_blocks
    messages = [{**m, "content": _blocks(m["content"])} for m in out["messages"]]
    first_user = next((i for i, m in enumerate(messages) if m["role"] == "user"), None)
    if first_user is not None and request.shared_prefix > 0:
        _cut_shared_prefix(messages[first_user]["content"], request.shared_prefix)
    out["messages"] = messages
    # Blocks in the order the cache reads them: tools, system, then the messages.
    order: list[dict[str, Any]] = [dict(t) for t in out.get("tools") or []]
    if order:
        out["tools"] = order
    order = order + system_blocks
    ends: list[int] = []  # index in ``order`` of each message's last block
    for message in messages:
        order.extend(message["content"])
        ends.append(len(order) - 1)
    if not order:
        return out
    wanted = _wanted_breakpoints(request, messages, ends, first_user, len(order))
    prefix, chars = [], 0
    for block in order:
        chars += _block_chars(block)
        prefix.append(chars)
    chosen = sorted({i for i in wanted if prefix[i] >= min_tokens * CHARS_PER_TOKEN})
    if not chosen:
        return fields  # nothing long enough to cache: the request as it always was
    for index in chosen[-MAX_BREAKPOINTS:]:
        order[index]["cache_control"] = dict(control)
    return out


def _cut_shared_prefix(blocks: list[dict[str, Any]], shared_prefix: int) -> None:
    """The first user message's one text block in two, at the end of what every case of
    the domain and mode shares."""
    if len(blocks) == 1 and blocks[0].get("type") == "text":
        text = blocks[0]["text"]
        if 0 < shared_prefix < len(text):
            blocks[:] = [
                {"type": "text", "text": text[:shared_prefix]},
                {"type": "text", "text": text[shared_prefix:]},
            ]


def _wanted_breakpoints(
    request: Request,
    messages: list[dict[str, Any]],
    ends: list[int],
    first_user: int | None,
    blocks: int,
) -> list[int]:
    """Where breakpoints would go, as block indexes in the cache's order (``blocks`` in
    all; ``ends``: each message's last block), before the minimum length is applied."""
    last = blocks - 1
    wanted: list[int] = []
    if request.tools:
        if first_user is not None:
            wanted.append(ends[first_user])
        assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        if assistants and assistants[-1] > 0:
            previous_end = ends[assistants[-1] - 1]
            if last - previous_end >= LOOKBACK_BLOCKS:
                wanted.append(previous_end)
    elif first_user is not None and request.shared_prefix > 0:
        tools_and_system = blocks - sum(len(m["content"]) for m in messages)
        wanted.append(tools_and_system + sum(len(m["content"]) for m in messages[:first_user]))
    wanted.append(last)
    return wanted


def breakpoint_chars(fields: Mapping[str, Any]) -> tuple[tuple[int, ...], int]:
    """The characters up to each ``cache_control`` breakpoint of a call's fields, in the
    order the cache reads blocks (tools, system, messages), and the characters in all,
    counted as ``with_cache_breakpoints`` counts them for its threshold."""
    order: list[Mapping[str, Any]] = [*(fields.get("tools") or [])]
    system = fields.get("system")
    order += _blocks(system) if system else []
    for message in fields.get("messages") or []:
        order += _blocks(message["content"])
    marks, chars = [], 0
    for block in order:
        chars += _block_chars(block)
        if "cache_control" in block:
            marks.append(chars)
    return tuple(marks), chars


def _read_message(message: Any) -> Completion:
    """The text and token counts of a messages reply, or MalformedResponse.  Thinking
    blocks are the model's scratchpad, not its answer: only text blocks are joined."""
    content = field_of(message, "content")
    if not isinstance(content, list):
        raise MalformedResponse(
            "the response has no content"
            if content is None
            else f"content is {type(content).__name__}, not a list of blocks"
        )
    usage = field_of(message, "usage")
    # input_tokens counts only what came after the last cache breakpoint: the total
    # input is it plus what was written to and read from the cache.
    written = token_count(usage, "cache_creation_input_tokens")
    read = token_count(usage, "cache_read_input_tokens")
    hour = token_count(field_of(usage, "cache_creation"), "ephemeral_1h_input_tokens")
    return Completion(
        text=reply_text(content, where="content"),
        tokens_in=token_count(usage, "input_tokens") + written + read,
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_write_1h_tokens=min(hour, written),
        tokens_out=token_count(usage, "output_tokens"),
        finish_reason=finish_reason_of(message),
        tool_calls=read_anthropic_tool_calls(content),
    )


class AnthropicModel(RemoteModel):
    def __init__(self, spec: str, model_name: str, settings: ModelSettings) -> None:
        url = os.environ.get("ANTHROPIC_BASE_URL", "").strip() or ANTHROPIC_DEFAULT_URL
        super().__init__(spec, "anthropic", model_name, settings, url)
        self.tool_mode = tool_mode(
            settings.options, offered=(NATIVE, TEXT, CONSTRAINED), backend=spec
        )
        # Both offer the tools natively; the constrained tool mode also forces one call.
        self.native_tools = self.tool_mode in (NATIVE, CONSTRAINED)
        self._turn_max_tokens = constrained_max_tokens(settings.options, settings.params.max_tokens)
        self.prompt_cache = settings.prompt_cache
        self.cache_ttl = str(settings.option("cache_ttl", DEFAULT_CACHE_TTL))
        self.cache_min_tokens = int(settings.option("cache_min_tokens", DEFAULT_CACHE_MIN_TOKENS))

    def calls_for(self, request: Request) -> int:
        return max(request.n, 0)  # no n in the API: one call per sample

    def tool_choice(self) -> dict[str, Any]:
        """The ``tool_choice`` of a constrained turn: forced, unless thinking forbids it."""
        return dict(THINKING_CALL if thinks(self.params.extra) else FORCED_CALL)

    def reply_shape(self, tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
        if not (constrained_turns(self) and tools):
            return {}
        return {REPLY_SHAPE_KEY: CONSTRAINED, "tool_choice": self.tool_choice()}

    def _notes(self) -> tuple[str, ...]:
        if not (constrained_turns(self) and thinks(self.params.extra)):
            return ()
        return (
            f"{self.spec} refuses a forced tool call with extended thinking on, so each "
            "constrained turn asks with tool_choice auto (parallel calls still off) and "
            "may end without a call.",
        )

    def _end_of_life(self) -> Retirement | None:
        """The registry's date; for a model it does not list, the installed SDK's own
        deprecation table, which may name models deprecated since (the SDK warns per
        call; we say it once per run).  The table is a private module whose contents
        change between releases: an SDK without it, without the model, or with a date
        spelled otherwise says nothing."""
        listed = super()._end_of_life()
        if listed is not None:
            return listed
        try:
            from anthropic._data import DEPRECATED_MODELS  # optional: the anthropic extra
        except ImportError:
            return None
        table = DEPRECATED_MODELS if isinstance(DEPRECATED_MODELS, dict) else {}
        text = table.get(self.model_name)
        day = sdk_day(text) if isinstance(text, str) else None
        return Retirement(day, "the anthropic SDK's deprecation table") if day else None

    def client(self) -> Any:
        if self._client is None:
            anthropic = import_sdk("anthropic")
            self._client = anthropic.AsyncAnthropic(
                api_key=env_key("ANTHROPIC_API_KEY", required=True, purpose="anthropic models"),
                base_url=self.base_url,
                max_retries=0,  # our policy (backoff.py) is the only one
                timeout=self.timeout_s,
            )
        return self._client

    async def check(self) -> None:
        self.client()
        await self.check_with(import_sdk("anthropic"), "ANTHROPIC_API_KEY")

    def request_fields(self, request: Request) -> dict[str, Any]:
        """The JSON fields of one call: system apart, sampling parameters if set."""
        p = config_of(self, request)
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        constrained = constrained_turns(self) and bool(request.tools)
        limit = self._turn_max_tokens if constrained else p.max_tokens
        fields: dict[str, Any] = {
            "model": self.model_name,
            "messages": anthropic_messages(request.messages),
            "max_tokens": limit or FALLBACK_MAX_TOKENS,
        }
        if request.tools:
            fields["tools"] = anthropic_tools(request.tools)
        if constrained:
            fields["tool_choice"] = self.tool_choice()
        if system:
            fields["system"] = system
        if p.stop:
            fields["stop_sequences"] = list(p.stop)
        # Sampling fields travel in extra_body: recent SDKs dropped temperature and top_p
        # from their typed signature (newer models reject them), while the API still
        # takes them for the models that do; this works with old and new SDKs alike.
        body: dict[str, Any] = {}
        if p.verbatim is not None:
            # Upstream's fields (it talks to OpenAI's API only): temperature and top_p as
            # it sends them, its reasoning_effort as output_config.effort; max_tokens, which
            # the Messages API requires, stays the registry's (docs/prompts.md "Protocols").
            paper = p.verbatim
            body.update({k: paper[k] for k in ("temperature", "top_p") if k in paper})
            if "reasoning_effort" in paper:
                body["output_config"] = {"effort": paper["reasoning_effort"]}
        else:
            if p.temperature is not None:
                body["temperature"] = p.temperature
            if p.top_p is not None:
                body["top_p"] = p.top_p
            if p.reasoning_effort is not None:
                body["output_config"] = {"effort": p.reasoning_effort}
            body.update(p.extra)
        if body:
            fields["extra_body"] = body
        # The API has no seed; it stays in identity() so the cache key is still honest.
        if p.prompt_cache:
            fields = with_cache_breakpoints(
                fields, request, min_tokens=self.cache_min_tokens, ttl=self.cache_ttl
            )
        return fields

    def _cache_breakpoints(self, request: Request) -> tuple[tuple[int, ...], int] | None:
        if not config_of(self, request).prompt_cache:
            return None
        return breakpoint_chars(self.request_fields(request))

    def _billed_extra_text(self, request: Request) -> str:
        # Tool definitions are input the API bills (and caches, first in its order).
        tools = anthropic_tools(request.tools) if request.tools else []
        return "".join(json.dumps(t, ensure_ascii=False) for t in tools)

    async def _one(self, fields: dict[str, Any]) -> Completion:
        # optional: the anthropic extra, only when chosen
        import anthropic

        client = self.client()

        async def once() -> tuple[Completion, float]:
            start = time.monotonic()
            async with self.in_flight:
                message = await client.messages.create(**fields)
            # Validated inside the retried call: a reply of the wrong shape is retried
            # like a 5xx and, if it stays malformed, is the sample's error.
            return _read_message(message), time.monotonic() - start

        outcome = await call_with_retries(
            once, lambda exc: classify_sdk_error(exc, anthropic), self.policy, rng=self._rng
        )
        if outcome.value is None:
            return Completion.failed(outcome.error or "request failed")
        completion, latency = outcome.value
        return dataclasses.replace(completion, latency_s=latency)

    async def generate(self, request: Request) -> list[Completion]:
        fields = self.request_fields(request)
        if not config_of(self, request).prompt_cache or request.n <= 1:
            return list(await asyncio.gather(*(self._one(fields) for _ in range(request.n))))
        # A cache entry is readable only once the response that wrote it has begun, and
        # we do not stream: the other samples wait for the first one's answer.
        first = await self._one(fields)
        rest = await asyncio.gather(*(self._one(fields) for _ in range(request.n - 1)))
        return [first, *rest]
