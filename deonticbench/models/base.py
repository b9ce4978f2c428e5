"""The one small interface every model backend implements.

A backend turns a ``Request`` (the chat messages for one case × mode and how many
samples to draw) into exactly ``request.n`` ``Completion`` items.  Providers differ only
inside their own module; the runner sees nothing but this file.

Failure contract: ``generate`` never raises for a request that fails.  Transient
failures are retried inside the backend (``backoff.py``); a request that finally fails
comes back as ``Completion(text=None, error="HTTP 500 after 6 tries: ...")`` so that
the runner records it instead of leaving a silent gap.  Problems a user must fix before
any work starts (missing key, unreachable server, missing extra) are raised by
``check()`` as ``ConfigError``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import date
from typing import Any, Literal, cast

from ..vocabulary.chat import Message, ToolCall, ToolSpec
from ..vocabulary.modes import Mode
from .constrained import argument_chars, decoded_under_schema
from .lifecycle import Retirement, retirement_note


@dataclass(frozen=True)
class GenerationParams:
    """Every sampling parameter; ``None`` means "not sent, the provider's default"."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    reasoning_effort: str | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Provider-specific request fields passed through verbatim (e.g. Anthropic's
    ``thinking``, vLLM's ``top_k``).  They change the output, so they are in the key."""

    def to_dict(self) -> dict[str, Any]:
        """All sampling parameters, JSON-ready and stable: the response-cache key part."""
        return {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "reasoning_effort": self.reasoning_effort,
            "seed": self.seed,
            "stop": list(self.stop) if self.stop is not None else None,
            "extra": {k: self.extra[k] for k in sorted(self.extra)},
        }


MISSING_CHOICE = "missing_choice"
"""The finish reason of a sample the server's reply held no choice for (under
``GenerateConfig.refetch_missing`` off): an empty reply, read as an abstention."""

NOT_SENT = "not_sent"
"""The finish reason of a sample whose call was never sent (under ``refetch_missing``
off, one sample per call): an earlier call of its request got a body at which upstream's
script stops the case, so the sample is an empty reply, read as an abstention."""

ChoiceFault = Literal[
    "missing",
    "drawn_alone",
    "not_sent",
    "no_choices",
    "choices_not_list",
    "no_message",
    "content_not_text",
    "empty_output",
]
"""How the server's reply shaped a sample (docs/prompts.md, "Server faults").  Three
kinds concern the count of choices: ``missing``, the reply held fewer choices than
``n`` and this sample, left empty, is read as an abstention (``refetch_missing`` off,
the paper protocol's first attempts); ``not_sent``, a sample drawn one call each whose
call was not sent, because an earlier call's body ended the case as it ends upstream's
(``NOT_SENT``); ``drawn_alone``, drawn by a call of its own (``refetch_missing`` on),
in the refetch or later in the run once the server was seen to ignore ``n``.  The
others name a reply body that parsed but held no usable text for the sample, one kind
per shape (``REPLY_FAULTS``)."""

REPLY_FAULTS: Mapping[str, str] = {
    "no_choices": "the reply's choices absent, null or empty",
    "choices_not_list": "the reply's choices neither a list nor empty (a string, say)",
    "no_message": "a choice without a message object (absent, null or not an object)",
    "content_not_text": (
        "a message whose content is not text (a number, an object; under the paper "
        "protocol any content but a string or null, a list of text parts too)"
    ),
    "empty_output": "a message without text (content null, empty or blank) and no tool call",
}
"""The reply bodies without usable text, by their ``ChoiceFault``: what the body held.
How each is decided under each protocol, and what upstream's script records for it:
docs/prompts.md, "Server faults"."""


@dataclass(frozen=True)
class GenerateConfig(GenerationParams):
    """How one request is sampled, decided by the caller for that request (the runner,
    through ``models.sampling.RunSampling``) and carried on the ``Request``: a backend
    maps these fields to its wire format and decides nothing about them.  ``None``: not
    sent, the provider's default.  Besides the sampling parameters (temperature, top_p,
    the output limit ``max_tokens``, reasoning effort, seed, stop, provider fields in
    ``extra``, logprobs among them), how the request is drawn:"""

    n_per_call: int | None = None
    """Samples one provider call may draw: None as many as the request asks (``n``), 1
    one call per sample (upstream's ``max_n_1_models`` and single-sample hosts)."""
    prompt_cache: bool = False
    """Ask the provider to cache the shared prefix (breakpoints, OpenAI's
    ``prompt_cache_key``); how we ask, never what comes back."""
    refetch_missing: bool = True
    """When a server answers fewer choices than asked, or a 200 without any: True draws
    the rest with one call per sample (a reply without choices is retried like a 5xx);
    False takes the reply as it is, each missing sample an empty reply
    (``MISSING_CHOICE``), as upstream's script records it (docs/prompts.md).  False also
    reads every body that parses as upstream's script reads it, never retried (a body
    without usable text gives the answer upstream's script takes from it), and draws
    one-sample-per-call requests one call after another, as upstream's script does."""
    verbatim: Mapping[str, Any] | None = None
    """Set on a paper-protocol first attempt: the sampling fields exactly as upstream's
    script names and sends them (``max_completion_tokens`` for gpt-4.1, its
    ``model_params``), sent instead of the fields above (``extra`` still rides along);
    ``n`` is then always sent, as upstream does."""

    @property
    def logprobs(self) -> bool:
        """Whether the request asks for the tokens' log-probabilities
        (``eval --confidence logprob``: ``extra.logprobs``)."""
        return bool(self.extra.get("logprobs"))

    def calls_for(self, n: int) -> int | None:
        """Calls a request of ``n`` samples becomes when the config decides it (one per
        sample); None: as the backend's API draws them."""
        return n if self.n_per_call == 1 and n > 0 else None

    @classmethod
    def of(cls, params: GenerationParams, *, prompt_cache: bool = False) -> GenerateConfig:
        """The config that samples as ``params`` (the registry's, with ``--param``) say."""
        given = {f.name: getattr(params, f.name) for f in fields(GenerationParams)}
        return cls(**{**given, "extra": dict(params.extra)}, prompt_cache=prompt_cache)


@dataclass(frozen=True)
class Request:
    """What a model may see, and nothing more: the chat messages, which sample of which
    case and mode is asked for (for backends that look responses up or seed by them),
    and how many.  No gold label and no reference program: a backend cannot leak what
    it is never given (the ``reference`` backend gets its table when it is built)."""

    messages: tuple[Message, ...]
    n: int
    """How many samples to draw; ``generate`` returns exactly this many completions."""
    domain: str
    case_id: str
    mode: Mode
    sample_start: int
    """Index of the first sample drawn: the request covers samples
    ``sample_start .. sample_start + n - 1`` (replay looks them up; local seeds by them)."""
    attempt: int = 0
    """0 for the first attempt, before any retry; 1, 2, ... for retries with feedback (0 in
    an agentic trial, which never retries)."""
    turn: int = 0
    """In an agentic trial, the model call's turn (0 for the first); 0 otherwise."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools an agent turn offers (agentic modes): sent natively, or under the
    constrained tool mode as the call schema the reply is decoded under
    (``models.base.decodes_under_schema``); empty: plain chat."""
    shared_prefix: int = 0
    """Characters at the start of the first user message that every prompt of this
    domain and mode shares (the statutes where they come first); 0: only the system
    message is shared.  Where prompt caching puts a breakpoint; never changes the text."""
    cache_group: str = ""
    """``<domain>/<mode>/<template hash>``: the prompts that share a prefix (OpenAI's
    ``prompt_cache_key``).  Empty: no group."""
    config: GenerateConfig | None = None
    """How this request is sampled, as its caller decided (the runner:
    ``models.sampling.RunSampling``); None: as the backend's settings say
    (``config_of``)."""


@dataclass(frozen=True)
class Completion:
    text: str | None
    tokens_in: int = 0
    """Prompt tokens billed for this completion, ALL of them: uncached input + cache
    writes + cache reads.  When one API call returns several choices the prompt was
    billed once, so its first completion carries the count (and the cache counts)."""
    cache_read_tokens: int = 0
    """Of ``tokens_in``, those read from the provider's prompt cache (Anthropic's
    ``cache_read_input_tokens``, OpenAI's ``cached_tokens``)."""
    cache_write_tokens: int = 0
    """Of ``tokens_in``, those written to the provider's prompt cache (Anthropic only)."""
    cache_write_1h_tokens: int = 0
    """Of ``cache_write_tokens``, those written with the 1-hour TTL (the rest: 5 minutes)."""
    tokens_out: int = 0
    latency_s: float = 0.0
    """Wall time of the API call (or local generation) that produced this completion."""
    finish_reason: str | None = None
    error: str | None = None
    """Set when the request finally failed; then ``text`` is None."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Native tool calls of the reply (only when the request offered ``tools``)."""
    logprobs: tuple[tuple[str, float], ...] | None = None
    """(token, log-probability) of each output token, when the request asked for them
    (``eval --confidence logprob``) and the server returned them."""
    batch: bool = False
    """Drawn through the provider's batch API (``eval --batch``), so billed at its price."""
    decode_s: float | None = None
    """Wall time from the first output token to the last: the decoding alone, without
    the prompt's prefill (the ``local:`` backend; None where it is not known).  The
    small-model benchmark's milliseconds per output token."""
    drawn_alone: bool = False
    """Drawn by a call of its own because the server answered fewer choices than ``n``
    (``ChoiceFault``); the runner records it so that the figure can say so."""
    reply_fault: ChoiceFault | None = None
    """The shape of a reply body that held no usable text for this sample
    (``REPLY_FAULTS``): of the reply read, or of the last try's when the request failed
    on it."""

    @property
    def choice_fault(self) -> ChoiceFault | None:
        """How the server's reply shaped this sample, if it did (``ChoiceFault``): a
        missing choice, else the body's fault, else a draw of its own (a sample drawn
        alone whose own reply held no text is named by that reply's fault, which decided
        its answer)."""
        if self.finish_reason == MISSING_CHOICE:
            return "missing"
        if self.finish_reason == NOT_SENT:
            return "not_sent"
        if self.reply_fault is not None:
            return self.reply_fault
        return "drawn_alone" if self.drawn_alone else None

    @staticmethod
    def known_reply_fault(value: object) -> ChoiceFault | None:
        """``value`` as a reply fault this release names (``REPLY_FAULTS``), else None:
        a fault read back from where a completion was kept (the response cache)."""
        for fault in REPLY_FAULTS:
            if value == fault:
                return cast("ChoiceFault", fault)
        return None

    @classmethod
    def failed(
        cls, error: str, *, latency_s: float = 0.0, reply_fault: ChoiceFault | None = None
    ) -> Completion:
        return cls(text=None, latency_s=latency_s, error=error, reply_fault=reply_fault)


def config_of(model: Model, request: Request) -> GenerateConfig:
    """The sampling ``request`` asks of ``model``: its own config, else the one the
    backend's settings (the registry's, with ``--param``) describe."""
    if request.config is not None:
        return request.config
    return GenerateConfig.of(model.params, prompt_cache=model.prompt_cache)


def calls_sent(model: object) -> int | None:
    """The provider calls a backend has sent (``RemoteModel.calls_sent``: every try of
    every call, batch items included); None for a backend that does not count (no HTTP).
    The one reader of the count."""
    sent = getattr(model, "calls_sent", None)
    return sent if isinstance(sent, int) and not isinstance(sent, bool) else None


def add_calls(model: object, calls: int) -> None:
    """Count ``calls`` more on a backend that counts its calls (a batch's items, each a
    call the provider bills, are sent by the batch API, not by the backend)."""
    sent = calls_sent(model)
    if sent is not None:
        setattr(model, "calls_sent", sent + calls)  # noqa: B010 - a counter of the backend


class Model(ABC):
    """A model backend.  Construct through ``load_model(spec)``."""

    spec: str
    """The spec string the user gave, e.g. ``openai:gpt-4.1``."""
    provider: str
    """Backend name: openai, openai-compatible, anthropic, local, vllm, reference, replay."""
    model_name: str
    params: GenerationParams
    _cacheable: bool = True
    """False for backends whose answers cost nothing (``cacheable``)."""
    prompt_cache: bool = False
    """Whether this backend can ask the provider to cache shared prompt prefixes (the
    registry's ``prompt_cache``).  Whether a run does is the request's
    ``config.prompt_cache`` (``--no-prompt-cache``: off); then the runner sends the first
    request of each shared prefix alone (docs/cost.md)."""
    logprobs: bool = False
    """Whether the backend's replies carry token log-probabilities when a request asks
    (``--confidence logprob``); a run that asks another backend is refused."""
    parallel_requests: int | None = None
    """How many requests the backend can serve at once (None: as many as ``--concurrency``
    allows).  The in-process engines (``local:``, ``vllm:``) serve one at a time on one
    worker thread; the runner never starts more agentic trials than this, so that a
    trial's wall-clock budget is not spent queueing behind another's turns."""
    tool_mode: str = "text"
    """How an agentic trial calls tools through this backend (``constrained``,
    docs/agents.md): ``native`` (the provider's tool calling), ``text`` (the fenced-JSON
    protocol) or ``constrained`` (one call per turn, decoded under a schema or forced).
    Backends set it from ``--param tool_mode=...``."""
    native_tools: bool = False
    """Whether an agentic trial offers this backend its tools natively (``Request.tools``
    and tool messages); otherwise the conversation is the text tool mode's.  True for the
    native tool mode, and for the constrained one where it forces a native call."""

    _turn_max_tokens: int | None = None
    """The output limit of an agent turn under the constrained tool mode (the
    ``constrained_max_tokens`` parameter, else the backend's default)."""
    _cache_routed: bool = False
    """The provider keeps one cache per ``Request.cache_group`` (``cache_routed``)."""

    def reply_shape(self, tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
        """The request fields beyond the conversation that shape an agent turn's reply
        (a schema, ``tool_choice``, ``response_format``), as this backend sends them for
        ``tools``: the response cache keys the turn on them.  Empty for the native and
        text tool modes, whose conversations already differ."""
        return {}

    def identity(self) -> dict[str, Any]:
        """What determines the output: backend, model, base URL, sampling parameters.

        The response cache keys on this, so it must hold every sampling parameter and
        must never hold a secret.
        """
        ident = {
            "backend": self.provider,
            "model": self.model_name,
            "base_url": None,
            **self.params.to_dict(),
        }
        return ident

    def _end_of_life(self) -> Retirement | None:
        """The day the provider retires this model (``end_of_life``)."""
        return None

    def _notes(self) -> tuple[str, ...]:
        """What ``backend_notes`` says of this backend."""
        return ()

    def _cache_breakpoints(self, request: Request) -> tuple[tuple[int, ...], int] | None:
        """Where this backend puts cache breakpoints in ``request`` (``cache_breakpoints``)."""
        return None

    def _billed_extra_text(self, request: Request) -> str:
        """Text the provider bills as input beyond the messages (Anthropic: the tool
        definitions as sent); the dry run counts it with the prompt."""
        return ""

    def calls_for(self, request: Request) -> int:
        """Provider calls (billed requests) that ``request`` becomes: 1 where the API
        draws ``n`` choices at once, ``n`` where each sample is a call (the backend's API,
        or the request's ``config.n_per_call``)."""
        decided = config_of(self, request).calls_for(request.n)
        return decided if decided is not None else (1 if request.n > 0 else 0)

    def _limit_in_flight(self, limit: int) -> None:  # noqa: B027 - no HTTP, nothing to bound
        """What ``limit_in_flight`` asks of this backend (HTTP backends honour it)."""

    async def check(self) -> None:  # noqa: B027 - a no-op is the right default
        """Pre-flight before any work; raises ``ConfigError`` with one sentence."""

    @abstractmethod
    async def generate(self, request: Request) -> list[Completion]:
        """Exactly ``request.n`` completions; never raises for a failed request."""

    async def aclose(self) -> None:  # noqa: B027 - nothing to release by default
        """Release connections, threads or loaded weights."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"


# What the dry run and the agent loop ask of a backend beyond its interface: answered by
# each backend's private parts, so that ``Model``'s public surface stays what every
# backend must provide.


def end_of_life(model: Model) -> Retirement | None:
    """The day the provider retires ``model`` and where that was read, when the model
    registry (or, for a model it does not list, the backend's SDK) gives one."""
    return model._end_of_life()


def cache_routed(model: Model) -> bool:
    """The provider keeps one prompt cache per ``Request.cache_group`` (OpenAI's
    ``prompt_cache_key``): a prefix is shared within a group only.  Otherwise (Anthropic)
    the same prefix is shared wherever it appears, across modes too."""
    return model._cache_routed


def cache_breakpoints(model: Model, request: Request) -> tuple[tuple[int, ...], int] | None:
    """Where ``model`` asks the provider to cache ``request``: the characters (in the order
    the cache reads them: tools, system, messages) up to each breakpoint it sends, and the
    request's characters in all.  None: the backend sends no breakpoints (the provider
    caches by itself, or not at all).  The dry run prices caching by this, not by a copy
    of the backend's rules."""
    return model._cache_breakpoints(request)


def billed_extra_text(model: Model, request: Request) -> str:
    """Text the provider bills as input beyond the messages (Anthropic: the tool
    definitions as sent); the dry run counts it with the prompt."""
    return model._billed_extra_text(request)


def decodes_under_schema(model: Model) -> bool:
    """``model``'s agent turns are decoded under the call schema (``decoded_under_schema``)."""
    return decoded_under_schema(constrained_turns(model), model.native_tools)


def turn_argument_chars(model: Model) -> int | None:
    """The bound on each free-text argument of a call decoded under a schema
    (``constrained.argument_chars`` of the turn's output limit): the loop writes it into
    the tools it offers and tells the model when an argument reached it.  None where no
    turn is decoded under a schema (text, native, a forced native call)."""
    if not decodes_under_schema(model):
        return None
    return argument_chars(model._turn_max_tokens)


def constrained_turns(model: Model) -> bool:
    """Each agent turn of ``model`` is one call, decoded under ``constrained.call_schema``
    or forced: the trial passes its tools in every ``Request`` and takes the reply's
    calls (``--param tool_mode=constrained``)."""
    return model.tool_mode == "constrained"


def cacheable(model: Model) -> bool:
    """Whether ``model``'s answers are worth the response cache: False for the backends
    whose answers cost nothing (reference, replay)."""
    return model._cacheable


def backend_notes(model: Model) -> tuple[str, ...]:
    """Sentences the user should read before a run with ``model`` (``eval`` prints each
    as a note), e.g. a tool mode it had to fall back from."""
    return model._notes()


def model_notes(model: Model, *, today: date | None = None) -> list[str]:
    """What the user should know about ``model`` before a run: its end of life, when one
    is known, in the tense of ``today`` (the UTC date when None: "was retired on" from
    the day on, "retires on" before it), then the backend's own notes."""
    end = end_of_life(model)
    notes = [retirement_note(model.model_name, end, today)] if end else []
    return notes + list(backend_notes(model))


def ignored_params_note(model: Model) -> str | None:
    """``--param`` given to a backend that generates nothing: it is ignored, said once."""
    if cacheable(model):
        return None
    return f"{model.provider} generates nothing, so --param is ignored."


def limit_in_flight(model: Model, limit: int) -> None:
    """Never have more than ``limit`` provider calls of ``model`` in flight at once,
    however a request is split into calls (a server that ignores ``n`` gets one call per
    sample).  The runner sets it from ``--concurrency``; HTTP backends honour it."""
    model._limit_in_flight(limit)
