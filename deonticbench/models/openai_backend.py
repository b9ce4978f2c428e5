"""OpenAI chat completions: ``openai:<model>`` and ``openai-compatible:<model>@<url>``.

One class serves both, because vLLM serve, OpenRouter, Together and the llama.cpp
server speak the same wire format.  The differences are the key's environment variable,
the name of the output-length field (OpenAI's current ``max_completion_tokens`` versus
the widely supported ``max_tokens``), and that ``n`` is not trusted: when a server
answers with fewer choices than asked (llama.cpp ignores ``n``), the rest are drawn
with separate calls, and later requests go straight to separate calls.

The constrained tool mode (``models.constrained``) differs too: OpenAI forces one
native call per turn (``tool_choice`` required, parallel calls off), while an
OpenAI-compatible server decodes the turn under ``call_schema`` through its
structured-output field, which servers name differently (``CONSTRAINED_FIELDS``).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..errors import ConfigError
from ..vocabulary.chat import ToolCall, ToolSpec
from ._sdk import (
    MalformedResponse,
    classify_sdk_error,
    field_of,
    finish_reason_of,
    import_sdk,
    provider_message,
    reply_text,
    token_count,
)
from .backoff import Failure, call_with_retries
from .base import (
    MISSING_CHOICE,
    NOT_SENT,
    ChoiceFault,
    Completion,
    GenerateConfig,
    Request,
    config_of,
    constrained_turns,
    decodes_under_schema,
)
from .constrained import (
    CONSTRAINED,
    NATIVE,
    REPLY_SHAPE_KEY,
    TEXT,
    call_schema,
    constrained_max_tokens,
    schema_calls,
    tool_mode,
)
from .registry import ModelSettings
from .remote import RemoteModel, env_key, public_url, split_usage
from .tool_calls import openai_messages, openai_tools, read_openai_tool_calls

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"

CONSTRAINED_FIELD_PARAM = "constrained_field"
"""``--param constrained_field=...``: where an OpenAI-compatible server takes the schema
of a constrained turn (docs/agents.md)."""
CONSTRAINED_FIELDS = ("response_format", "json_schema", "structured_outputs", "guided_json")
"""The structured-output request fields servers take, the default first:

* ``response_format``: OpenAI's ``{"type": "json_schema", "json_schema": {...}}``, which
  vLLM serve, SGLang, llama.cpp's llama-server and Ollama (0.5 on) all read;
* ``json_schema``: llama-server's own top-level field (the schema itself);
* ``structured_outputs``: vLLM's own field, ``{"json": schema}`` (vLLM 0.10.2 on);
* ``guided_json``: vLLM's field before 0.12, which later versions ignore."""
SCHEMA_NAME = "tool_call"
"""The ``json_schema.name`` of ``response_format``, which OpenAI's form requires."""
FORCED_CALL = {"tool_choice": "required", "parallel_tool_calls": False}
_CLIENT_ARGUMENTS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "reasoning_effort",
        "seed",
        "stop",
        "logprobs",
        "top_logprobs",
        "presence_penalty",
        "frequency_penalty",
    }
)
"""Request fields ``chat.completions.create`` takes as arguments (others: ``extra_body``)."""
"""What makes OpenAI answer a constrained turn with exactly one call of an offered tool."""


def constrained_field(options: Any) -> str:
    """The structured-output field the options name (``response_format`` when none); an
    unknown one is one sentence naming those there are."""
    value = str((options or {}).get(CONSTRAINED_FIELD_PARAM) or CONSTRAINED_FIELDS[0])
    value = value.strip().lower()
    if value not in CONSTRAINED_FIELDS:
        raise ConfigError(
            f"{CONSTRAINED_FIELD_PARAM} should be one of {', '.join(CONSTRAINED_FIELDS)}, "
            f"not {value!r}."
        )
    return value


def schema_fields(field: str, tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
    """The request body fields that ask a server to decode under ``call_schema(tools)``
    through ``field`` (one of ``CONSTRAINED_FIELDS``)."""
    schema = call_schema(tools)
    if field == "json_schema":
        return {"json_schema": schema}
    if field == "structured_outputs":
        return {"structured_outputs": {"json": schema}}
    if field == "guided_json":
        return {"guided_json": schema}
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": True},
        }
    }


def _names_field(exc: Any, field: str) -> bool:
    """Whether a 400/422 answer says it is about ``field`` (its message or its ``param``,
    or a validation error's location, all of which end up in the body or the message)."""
    names = (field, "json_schema") if field == "response_format" else (field,)
    said = f"{provider_message(exc)} {getattr(exc, 'body', '')} {getattr(exc, 'message', '')}"
    return any(name in said.lower() for name in names)


@dataclass(frozen=True)
class _Reply:
    """A chat-completions reply checked for shape: only text and whole numbers."""

    texts: list[tuple[str, str | None]]
    faults: list[ChoiceFault | None]
    """Per choice, the shape of a choice that held no usable text (``REPLY_FAULTS``)."""
    prompt_tokens: int
    cached_tokens: int
    """Of ``prompt_tokens``, those the server read from its prompt cache, where reported
    (``usage.prompt_tokens_details.cached_tokens``: OpenAI, vLLM)."""
    tool_calls: list[tuple[ToolCall, ...]]
    output_tokens: int
    logprobs: list[tuple[tuple[str, float], ...] | None]
    """Per choice, its tokens' log-probabilities when the server sent them."""
    ends_case: bool = False
    """Read as upstream's script reads it: the body stops the script's case there, so a
    request drawn one call per sample sends no more calls (``_read_upstream_reply``)."""

    def completions(self, latency_s: float = 0.0) -> list[Completion]:
        """The reply as completions: texts, finish reasons, native tool calls, and the
        usage (the prompt once, with its prompt-cache reads).  The one mapping of a
        reply, for the synchronous call and the batch reader alike."""
        completions = split_usage(
            self.texts,
            self.prompt_tokens,
            self.output_tokens,
            latency_s,
            self.logprobs,
            cached=self.cached_tokens,
        )
        return [
            replace(c, tool_calls=calls, reply_fault=fault) if calls or fault else c
            for c, calls, fault in zip(completions, self.tool_calls, self.faults, strict=True)
        ]


def _choice_logprobs(choice: Any) -> tuple[tuple[str, float], ...] | None:
    """``choice.logprobs.content[*].token/logprob``, or None when absent or malformed
    (log-probabilities are an extra: their absence never fails a sample)."""
    content = field_of(field_of(choice, "logprobs"), "content")
    if not isinstance(content, list):
        return None
    out = []
    for item in content:
        token, logprob = field_of(item, "token"), field_of(item, "logprob")
        if not isinstance(token, str) or not isinstance(logprob, int | float):
            return None
        out.append((token, float(logprob)))
    return tuple(out)


def _read_reply(response: Any, n: int, *, no_message_ok: bool = True) -> _Reply:
    """The texts and token counts of a reply, or MalformedResponse saying what is wrong
    and naming the body's fault (``REPLY_FAULTS``).  A message without text is an empty
    text with its fault beside it, and so is a choice without a message where the caller
    says so (``no_message_ok``: a batch item's reply), else it is malformed.  The paper
    protocol's first attempts read a body with ``_read_upstream_reply`` instead."""
    choices = field_of(response, "choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse(
            "the response has no choices"
            if not choices
            else f"choices is {type(choices).__name__}, not a list",
            fault="no_choices" if not choices else "choices_not_list",
        )

    def index_of(choice: Any) -> int:
        index = field_of(choice, "index")
        return index if isinstance(index, int) and not isinstance(index, bool) else 0

    texts: list[tuple[str, str | None]] = []
    faults: list[ChoiceFault | None] = []
    calls: list[tuple[ToolCall, ...]] = []
    logprobs: list[tuple[tuple[str, float], ...] | None] = []
    for choice in sorted(choices, key=index_of)[:n]:
        if isinstance(choice, str | int | float | list) or choice is None:
            raise MalformedResponse(
                f"a choice is {type(choice).__name__}, not an object", fault="no_message"
            )
        message = field_of(choice, "message")
        if isinstance(message, str | int | float | list):
            raise MalformedResponse(
                f"a choice's message is {type(message).__name__}", fault="no_message"
            )
        if message is None and not no_message_ok:
            raise MalformedResponse("a choice has no message", fault="no_message")
        content = field_of(message, "content") if message is not None else None
        try:
            text = reply_text(content, where="message.content")
        except MalformedResponse as exc:
            raise MalformedResponse(str(exc), fault="content_not_text") from None
        texts.append((text, finish_reason_of(choice)))
        calls.append(read_openai_tool_calls(message))
        logprobs.append(_choice_logprobs(choice))
        faults.append(_text_fault(message, text, calls[-1]))
    usage = field_of(response, "usage")
    details = field_of(usage, "prompt_tokens_details") if usage is not None else None
    return _Reply(
        texts,
        faults,
        token_count(usage, "prompt_tokens"),
        token_count(details, "cached_tokens"),
        calls,
        token_count(usage, "completion_tokens"),
        logprobs,
    )


def _read_upstream_reply(response: Any, n: int) -> _Reply:
    """A reply read as upstream's script reads the client's object (its ``run_inference``):
    never malformed, so never retried, each sample the answer the script takes, with the
    body's fault beside it (``REPLY_FAULTS``).  Falsy ``choices`` (absent, null, empty)
    are ``n`` empty answers; ``choices`` that are not a list are ``n`` empty answers (a
    string's characters or an object's keys, the script's choices, have no message, and
    a number or ``true`` raises in its ``list()``, which ends the case); a list's first
    ``n`` choices are taken in the order sent, each a choice's ``message.content``: ""
    when there is no message object or the content is null, the string as sent, else
    ``str()`` of the content.  Fewer choices than ``n``: the rest are missing.  Token
    counts that are not numbers are 0 (they decide no answer)."""
    raw = field_of(response, "choices")
    usage = field_of(response, "usage")
    ends = _ends_upstream_case(usage)
    if not raw or not isinstance(raw, list):
        fault: ChoiceFault = "no_choices" if not raw else "choices_not_list"
        if raw and not isinstance(raw, str | dict):
            ends = True  # list() of a number raises before the script reads usage
        return _Reply(
            [("", None)] * n,
            [fault] * n,
            _count(usage, "prompt_tokens"),
            0,
            [()] * n,
            0,
            [None] * n,
            ends_case=ends,
        )
    texts: list[tuple[str, str | None]] = []
    faults: list[ChoiceFault | None] = []
    logprobs: list[tuple[tuple[str, float], ...] | None] = []
    for choice in raw[:n]:
        message = field_of(choice, "message")
        content = None if _not_an_object(message) else field_of(message, "content")
        text = "" if content is None else content if isinstance(content, str) else str(content)
        if _not_an_object(message):
            faults.append("no_message")
        elif content is not None and not isinstance(content, str):
            faults.append("content_not_text")
        else:
            faults.append(None if text.strip() else "empty_output")
        texts.append((text, finish_reason_of(choice)))
        logprobs.append(_choice_logprobs(choice))
    details = field_of(usage, "prompt_tokens_details") if usage is not None else None
    return _Reply(
        texts,
        faults,
        _count(usage, "prompt_tokens"),
        _count(details, "cached_tokens"),
        [()] * len(texts),
        _count(usage, "completion_tokens"),
        logprobs,
        ends_case=ends,
    )


def _not_an_object(value: Any) -> bool:
    """A choice's or message's field that the client left as a JSON scalar or list (or
    absent), whose attributes upstream's ``getattr`` reads as absent."""
    return value is None or isinstance(value, str | int | float | list)


def _ends_upstream_case(usage: Any) -> bool:
    """Whether upstream's script stops its case at a body with this ``usage``: when
    ``usage`` is there (truthy) it adds ``usage.completion_tokens`` and
    ``usage.prompt_tokens`` to running sums, and a count that is not a number (null, as
    the client sets an absent count, or a string) raises, which the script's case-level
    handler catches: the case's later calls are not sent."""
    if not usage or _not_an_object(usage):
        return False  # a scalar's attributes are getattr's default, 0
    counts = (field_of(usage, "completion_tokens"), field_of(usage, "prompt_tokens"))
    return any(not isinstance(count, int | float) for count in counts)


def _count(usage: Any, name: str) -> int:
    """``token_count``, with 0 for a count that is not a whole number."""
    try:
        return token_count(usage, name)
    except MalformedResponse:
        return 0


def _text_fault(message: Any, text: str, calls: tuple[ToolCall, ...]) -> ChoiceFault | None:
    """The fault of a choice read as ``text``: no message, or a message without text
    (what upstream's script calls ``empty_output``); None when the text, or a tool call,
    is there to read."""
    if message is None:
        return "no_message"
    return "empty_output" if not text.strip() and not calls else None


def reply_completions(response: Any, n: int, latency_s: float = 0.0) -> list[Completion]:
    """A chat-completions reply body as at most ``n`` completions (``_Reply.completions``),
    or MalformedResponse: what a batch result line's body is read with."""
    return _read_reply(response, n).completions(latency_s)


class OpenAIModel(RemoteModel):
    logprobs = True  # choices carry logprobs.content when a request asks

    def __init__(
        self,
        spec: str,
        model_name: str,
        settings: ModelSettings,
        *,
        compatible: bool,
        base_url: str | None = None,
    ) -> None:
        if compatible:
            if not base_url:
                raise ConfigError(
                    f"model spec {spec!r} needs a server: "
                    "write openai-compatible:<model>@<base_url>."
                )
            url = base_url
        else:
            url = os.environ.get("OPENAI_BASE_URL", "").strip() or OPENAI_DEFAULT_URL
        super().__init__(
            spec, "openai-compatible" if compatible else "openai", model_name, settings, url
        )
        self.compatible = compatible
        default_env = "OPENAI_COMPATIBLE_API_KEY" if compatible else "OPENAI_API_KEY"
        self.key_env = str(settings.option("api_key_env", default_env))
        self._server_ignores_n = False
        self.tool_mode = tool_mode(
            settings.options, offered=(NATIVE, TEXT, CONSTRAINED), backend=spec
        )
        # OpenAI forces a native call; another server decodes text-form turns under the
        # call schema, since it may have no tool parser for its model at all.
        self.native_tools = self.tool_mode == NATIVE or (
            self.tool_mode == CONSTRAINED and not compatible
        )
        self.constrained_field = constrained_field(settings.options)
        self._turn_max_tokens = constrained_max_tokens(settings.options, settings.params.max_tokens)
        # OpenAI caches prefixes by itself; caching here means sending prompt_cache_key
        # (to OpenAI only: other servers may refuse an unknown field) and the runner's
        # order of sending.  Other servers' cached_tokens are read all the same.
        self.prompt_cache = settings.prompt_cache and not compatible
        self._cache_routed = self.prompt_cache

    def calls_for(self, request: Request) -> int:
        # A server seen to ignore n splits later requests, but not upstream's: its script
        # sends what it sends whatever an earlier reply held.
        if self._server_ignores_n and request.n > 0 and config_of(self, request).refetch_missing:
            return request.n
        return super().calls_for(request)

    def turn_fields(self, tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
        """The fields beyond the conversation that a constrained agent turn sends: the
        forced call (OpenAI) or the schema in the server's structured-output field."""
        if not (constrained_turns(self) and tools):
            return {}
        if self.compatible:
            return schema_fields(self.constrained_field, tools)
        return dict(FORCED_CALL)

    def reply_shape(self, tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
        fields = self.turn_fields(tools)
        return {REPLY_SHAPE_KEY: CONSTRAINED, **fields} if fields else {}

    # --- client ---------------------------------------------------------------------

    def _api_key(self) -> str:
        key = env_key(
            self.key_env, required=not self.compatible, purpose=f"the {self.provider} backend"
        )
        # A keyless local server still needs a non-empty key for the client; an explicit
        # placeholder also stops the client from sending OPENAI_API_KEY to a third party.
        return key or "EMPTY"

    def client(self) -> Any:
        if self._client is None:
            openai = import_sdk("openai")
            self._client = openai.AsyncOpenAI(
                api_key=self._api_key(),
                base_url=self.base_url,
                max_retries=0,  # our policy (backoff.py) is the only one
                timeout=self.timeout_s,
            )
        return self._client

    async def check(self) -> None:
        self.client()
        await self.check_with(import_sdk("openai"), self.key_env)

    # --- generation -----------------------------------------------------------------

    def request_fields(self, config: GenerateConfig, n: int) -> dict[str, Any]:
        """The JSON fields of one call of ``n`` samples besides model and messages, as
        ``config`` says: upstream's fields verbatim on a paper-protocol first attempt,
        else each typed field under this server's name."""
        if config.verbatim is not None:
            fields = self.verbatim_fields(config.verbatim, n)
            if config.extra:
                # ``--confidence logprob`` asks for the log-probabilities of the tokens
                # drawn; that changes no sample, so it rides along on upstream's request.
                fields["extra_body"] = {**fields.get("extra_body", {}), **config.extra}
            return fields
        fields = {}
        if n > 1:
            fields["n"] = n
        if not self.reasoning:
            if config.temperature is not None:
                fields["temperature"] = config.temperature
            if config.top_p is not None:
                fields["top_p"] = config.top_p
        if config.reasoning_effort is not None:
            fields["reasoning_effort"] = config.reasoning_effort
        if config.max_tokens is not None:
            fields["max_tokens" if self.compatible else "max_completion_tokens"] = config.max_tokens
        if config.seed is not None:
            fields["seed"] = config.seed
        if config.stop:
            fields["stop"] = list(config.stop)
        if config.extra:
            fields["extra_body"] = dict(config.extra)
        return fields

    @staticmethod
    def verbatim_fields(verbatim: Mapping[str, Any], n: int) -> dict[str, Any]:
        """A paper-protocol first attempt's fields: exactly upstream's, ``n`` always sent
        (upstream sends it even when it is 1), each field under upstream's name.  Fields
        the client has no argument for go in the body as they are."""
        fields: dict[str, Any] = {"n": n}
        extra: dict[str, Any] = {}
        for name, value in verbatim.items():
            (fields if name in _CLIENT_ARGUMENTS else extra)[name] = value
        if extra:
            fields["extra_body"] = extra
        return fields

    def call_fields(
        self, config: GenerateConfig, n: int, tools: tuple[ToolSpec, ...] = (), group: str = ""
    ) -> dict[str, Any]:
        """Every field of one call besides model and messages: the sampling fields
        (``request_fields``), an agent turn's tools and shape, and the prompt-cache key.
        The one request builder, for the synchronous call and a batch line alike (a batch
        line flattens ``extra_body`` into the body)."""
        fields = self.request_fields(config, n)
        if tools:
            self._turn_request(fields, tools)
        if config.prompt_cache and group:
            # Routes the prompts of one domain x mode x template to the same cache.
            fields["prompt_cache_key"] = group
        return fields

    def schema_decoded(self, tools: tuple[ToolSpec, ...]) -> bool:
        """Whether a turn offering ``tools`` is decoded under the call schema (its reply
        text is the call) rather than answered with native tool calls."""
        return bool(tools) and decodes_under_schema(self)

    def _turn_request(self, fields: dict[str, Any], tools: tuple[ToolSpec, ...]) -> None:
        """Add an agent turn's fields to ``fields``: the native tools (unless the turn is
        decoded under a schema instead), and for a constrained turn what shapes it and
        its own output limit."""
        if self.native_tools:
            fields["tools"] = openai_tools(tools)
        shape = self.turn_fields(tools)
        if not shape:
            return
        if self._turn_max_tokens is not None:
            fields["max_tokens" if self.compatible else "max_completion_tokens"] = (
                self._turn_max_tokens
            )
        if self.compatible:
            # Most of these fields are not in the client's signature: all go as body
            # fields, response_format too, so that one path serves every server.
            fields["extra_body"] = {**fields.get("extra_body", {}), **shape}
        else:
            fields.update(shape)

    def _classify(self, exc: Exception, sdk: Any, schema: bool) -> Failure:
        """``classify_sdk_error``, except that a server refusing the structured-output
        field is told in one sentence what to try instead (retrying cannot help)."""
        failure = classify_sdk_error(exc, sdk)
        status = getattr(exc, "status_code", None)
        if not (schema and status in (400, 422) and _names_field(exc, self.constrained_field)):
            return failure
        others = [f for f in CONSTRAINED_FIELDS if f != self.constrained_field]
        return Failure(
            label=(
                f"{public_url(self.base_url)} does not take {self.constrained_field} for "
                f"structured output (HTTP {status}); try --param constrained_field="
                f"{', '.join(others[:-1])} or {others[-1]}, or --param tool_mode=text."
            ),
            retryable=False,
        )

    async def _call(
        self,
        messages: list[dict[str, Any]],
        n: int,
        config: GenerateConfig,
        tools: tuple[ToolSpec, ...] = (),
        group: str = "",
        turn: int = 0,
    ) -> list[Completion]:
        """One logical call (retried, except that a body is never retried where ``config``
        reads it as upstream's script does, ``refetch_missing`` off); fewer than ``n``
        items when the reply held fewer choices.  ``turn`` numbers the calls read from a
        schema-constrained reply."""
        completions, _ = await self._send(messages, n, config, tools, group, turn)
        return completions

    async def _send(
        self,
        messages: list[dict[str, Any]],
        n: int,
        config: GenerateConfig,
        tools: tuple[ToolSpec, ...] = (),
        group: str = "",
        turn: int = 0,
    ) -> tuple[list[Completion], bool]:
        """``_call``, and whether the body read ends upstream's case (``_Reply.ends_case``:
        a request drawn one call per sample sends no more calls)."""
        client = self.client()
        fields = self.call_fields(config, n, tools, group)
        schema = self.schema_decoded(tools)

        # The body's fault of the last try: a request that fails on it names it.
        last_fault: list[ChoiceFault | None] = [None]

        async def once() -> tuple[_Reply, float]:
            last_fault[0] = None
            start = time.monotonic()
            async with self.in_flight:
                response = await client.chat.completions.create(
                    model=self.model_name, messages=messages, **fields
                )
            if not config.refetch_missing:
                # Upstream's script retries no body that parses: each is read as it reads it.
                return _read_upstream_reply(response, n), time.monotonic() - start
            # Validated here, inside the retried call: a reply of the wrong shape is
            # retried like a 5xx and, if it stays malformed, is the sample's error.
            try:
                reply = _read_reply(response, n, no_message_ok=False)
            except MalformedResponse as exc:
                last_fault[0] = exc.fault
                raise
            return reply, time.monotonic() - start

        # optional: the openai extra, only when chosen
        import openai

        outcome = await call_with_retries(
            once, lambda exc: self._classify(exc, openai, schema), self.policy, rng=self._rng
        )
        if outcome.value is None:
            failed = Completion.failed(outcome.error or "request failed", reply_fault=last_fault[0])
            return [failed] * n, False
        reply, latency = outcome.value
        completions = reply.completions(latency)
        if schema:
            # The reply text is the call the schema admitted; it stays the text as written.
            completions = [
                replace(c, tool_calls=schema_calls(c.text, turn=turn)) for c in completions
            ]
        return completions, reply.ends_case

    async def _upstream_singles(
        self, messages: list[dict[str, Any]], n: int, config: GenerateConfig, group: str
    ) -> list[Completion]:
        """``n`` samples drawn as upstream's script draws them one call each: one call
        after another, and none after a body that ends the script's case; the samples
        left are empty replies (``NOT_SENT``).  The runner's bound on calls in flight is
        what keeps the server busy, so drawing in turn costs no throughput."""
        drawn: list[Completion] = []
        while len(drawn) < n:
            got, ends = await self._send(messages, 1, config, (), group)
            drawn.extend(got[:1] or _filled([], 1))
            if ends:
                break
        not_sent = Completion(text="", finish_reason=NOT_SENT)
        return [*drawn, *[not_sent] * (n - len(drawn))]

    async def generate(self, request: Request) -> list[Completion]:
        messages = openai_messages(request.messages)
        n = request.n
        group = request.cache_group
        config = config_of(self, request)
        if n <= 0:
            return []
        if request.tools:
            # An agentic turn: one sample per call, each its own conversation.
            turns = await asyncio.gather(
                *(
                    self._call(messages, 1, config, request.tools, group, request.turn)
                    for _ in range(n)
                )
            )
            return [c for reply in turns for c in reply][:n]
        if self.calls_for(request) > 1:
            if not config.refetch_missing:
                return await self._upstream_singles(messages, n, config, group)
            singles = await asyncio.gather(
                *(self._call(messages, 1, config, (), group) for _ in range(n))
            )
            drawn = [c for reply in singles for c in reply]
            if super().calls_for(request) <= 1:  # single calls only for the server's sake
                drawn = _drawn_alone(drawn)
            return _filled(drawn, n)
        got = await self._call(messages, n, config, (), group)
        missing = n - len(got)
        if missing > 0 and config.refetch_missing:
            # The server answered fewer choices than asked: remember, and draw the rest
            # one call each (concurrently; the runner bounds concurrency across requests).
            self._server_ignores_n = True
            rest = await asyncio.gather(
                *(self._call(messages, 1, config, (), group) for _ in range(missing))
            )
            got.extend(_drawn_alone([c for reply in rest for c in reply]))
        return _filled(got, n)


def _drawn_alone(completions: list[Completion]) -> list[Completion]:
    """``completions`` marked as drawn one call each for a server that answered fewer
    choices than ``n`` (``Completion.drawn_alone``: the figure says so)."""
    return [replace(c, drawn_alone=True) for c in completions]


def _filled(got: list[Completion], n: int) -> list[Completion]:
    """Exactly ``n`` completions: the samples a server left without a choice (under
    ``refetch_missing`` off) are empty replies, read as abstentions, as upstream's
    script records them (docs/prompts.md, "Server faults")."""
    missing = [Completion(text="", finish_reason=MISSING_CHOICE)] * max(n - len(got), 0)
    return [*got[:n], *missing]
