"""A real HTTP server on loopback that speaks the OpenAI and Anthropic wire formats.

Tests point the real ``openai`` and ``anthropic`` clients at it, so everything between
our backend and the socket (serialisation, headers, status handling, retries) is the
real thing.  Only the model behind the endpoint is scripted:

* ``responder``: a function of the request that returns the text of each choice
  (deterministic; the runner's tests use it to script answers per case);
* ``fail_next(...)``: queued faults, one per incoming generation request: an HTTP
  status (429/500/401 ...) with an optional ``Retry-After``, a malformed JSON body, a
  dropped connection, or a delay;
* ``latency_s``: a fixed delay on every generation request (for benchmarks);
* ``max_choices``: answer at most this many choices, like servers that ignore ``n``;
* ``log``: every request received, to assert what was sent and how often;
* ``max_in_flight``: the most generation requests the server was handling at once;
* ``Fault(reshape=...)``: a 200 reply whose JSON body the function rewrites (a list of
  content parts, a number for content, a string for choices, a bad usage field);
* structured output, as OpenAI-compatible servers take it: a chat-completions request
  carrying a JSON schema (``response_format`` json_schema, llama-server's ``json_schema``,
  vLLM's ``structured_outputs.json`` or ``guided_json``: ``FakeRequest.schema_field`` and
  ``.schema``) answers a ``ToolTurn`` with its call written as the JSON text a decoder
  under the call schema writes; a schema with ``tools`` beside it is refused with a 400
  (one constraint at a time, as llama-server has it);
* ``refuse(field)``: answer any request carrying that top-level field with a 400 (or the
  status given) naming it, like a server that does not take the field.

Both endpoints bill prompt caching as the providers document it (``fake_prompt_cache``,
shared with the batch fake), so tests can measure what caching saves (``bill``: one
``Billed`` per answered call); an entry becomes readable only when the response that
wrote it is sent (these backends do not stream).

Tokens are words unless ``tokenizer`` is given (a text -> token list function; the cost
tests pass o200k_base, gpt-4.1's encoding, built by tiktoken itself), and a Claude prompt
is counted by ``claude_tokenizer`` when given (Claude's tokenizer is not published: the
cost tests give a denser stand-in, so a count that did not ask ``count_tokens`` shows).
``advance(seconds)`` moves the cache's clock.

Usage::

    with FakeProvider() as fake:
        client = openai.AsyncOpenAI(base_url=fake.openai_url, api_key="k")
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fake_prompt_cache import Billed, Pending, PromptCache, Tokenizer

__all__ = ["Billed", "FakeProvider", "FakeRequest", "Fault", "ToolTurn", "echo_responder"]


@dataclass
class ToolTurn:
    """A scripted reply that calls tools, sent in each API's own tool-calling form:
    OpenAI ``tool_calls`` (arguments as a JSON string: give a str to send it verbatim,
    malformed JSON included) or Anthropic ``tool_use`` blocks (input as an object)."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)


@dataclass
class FakeRequest:
    """One request as the server saw it."""

    api: str
    """'openai' (chat completions), 'anthropic' (messages) or 'models' (GET /v1/models)."""
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float
    choice: int = 0
    """Index of the choice being produced (the responder is called once per choice)."""
    billed: Billed | None = None
    """What the server billed for this request, once answered."""

    @property
    def messages(self) -> list[dict[str, str]]:
        """The conversation with any Anthropic ``system`` field folded in as a message."""
        out: list[dict[str, str]] = []
        system = self.body.get("system")
        if isinstance(system, str) and system:
            out.append({"role": "system", "content": system})
        elif isinstance(system, list):
            text = "".join(b.get("text", "") for b in system if isinstance(b, dict))
            out.append({"role": "system", "content": text})
        for message in self.body.get("messages") or []:
            content = message.get("content") or ""
            if isinstance(content, list):
                content = "".join(
                    str(b.get("text") or b.get("content") or "")
                    for b in content
                    if isinstance(b, dict)
                )
            out.append({"role": str(message.get("role")), "content": str(content)})
        return out

    @property
    def last_user(self) -> str:
        users = [m["content"] for m in self.messages if m["role"] == "user"]
        return users[-1] if users else ""

    @property
    def schema_field(self) -> str | None:
        """The structured-output field this request carries a JSON schema in, if any."""
        for name in SCHEMA_FIELDS:
            if _schema_in(self.body, name) is not None:
                return name
        return None

    @property
    def schema(self) -> Any:
        """The JSON schema the reply is to be decoded under (None: unconstrained)."""
        field = self.schema_field
        return _schema_in(self.body, field) if field else None


SCHEMA_FIELDS = ("response_format", "json_schema", "structured_outputs", "guided_json")
"""Where OpenAI-compatible servers take a JSON schema for structured output."""


def _schema_in(body: dict[str, Any], field: str) -> Any:
    """The schema ``body`` carries in ``field``, each in its own server's shape."""
    value = body.get(field)
    if field == "response_format":
        if isinstance(value, dict) and value.get("type") == "json_schema":
            return (value.get("json_schema") or {}).get("schema")
        return None
    if field == "structured_outputs":
        return value.get("json") if isinstance(value, dict) else None
    return value


Responder = Callable[[FakeRequest], "str | ToolTurn"]


def echo_responder(request: FakeRequest) -> str:
    """Default: a deterministic reply naming the choice and echoing the prompt's start."""
    return f"reply {request.choice} to: {request.last_user[:60]}"


@dataclass
class Fault:
    status: int | None = None
    """Answer with this HTTP status and a provider-format error body."""
    retry_after: str | None = None
    """Value of the Retry-After header (seconds or an HTTP date)."""
    malformed: bool = False
    """Answer 200 with a body that is not JSON."""
    drop: bool = False
    """Close the connection without answering."""
    delay_s: float = 0.0
    """Sleep before acting (on its own: a slow but successful response)."""
    message: str = ""
    reshape: Callable[[dict[str, Any]], Any] | None = None
    """Answer 200 with the normal reply body passed through this function."""


TOKEN_LOGPROB = -0.05
"""What the fake server says each output token's log-probability is, when asked."""


def _logprobs(text: str) -> dict[str, Any]:
    """The wire format's ``choice.logprobs``: the text cut into word and non-word runs,
    each with ``TOKEN_LOGPROB``."""
    import re

    tokens = re.findall(r"\w+|\W+", text)
    return {
        "content": [
            {"token": t, "logprob": TOKEN_LOGPROB, "bytes": list(t.encode()), "top_logprobs": []}
            for t in tokens
        ]
    }


@dataclass
class _State:
    responder: Responder
    latency_s: float
    max_choices: int | None
    api_key: str | None
    cache: PromptCache
    faults: deque[Fault] = field(default_factory=deque)
    refused: dict[str, int] = field(default_factory=dict)
    """Top-level request fields the server refuses, with the status it answers."""
    log: list[FakeRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    max_in_flight: int = 0
    bill: list[Billed] = field(default_factory=list)

    def count(self, text: str) -> int:
        return self.cache.count(text)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two sends: without TCP_NODELAY the second waits ~40 ms
    # for the client's delayed ACK, which a real provider's front end does not add.
    disable_nagle_algorithm = True
    server: _Server
    _pending_entries: Pending = ()
    """Prompt-cache entries this request wrote: (table, key, TTL), registered by _land."""

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    # --- plumbing -------------------------------------------------------------------

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), headers)

    def _send_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self._land()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _record(self, api: str, body: dict[str, Any]) -> FakeRequest:
        request = FakeRequest(
            api=api,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            received_at=time.monotonic(),
        )
        with self.server.state.lock:
            self.server.state.log.append(request)
        return request

    def _error(self, api: str, status: int, message: str, headers: dict[str, str]) -> None:
        kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "api_error")
        if api == "anthropic":
            body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
        else:
            body = {"error": {"message": message, "type": kind, "code": None, "param": None}}
        self._send_json(status, body, headers)

    def _authorised(self, api: str) -> bool:
        key = self.server.state.api_key
        if key is None:
            return True
        bearer = self.headers.get("Authorization") == f"Bearer {key}"
        if api == "anthropic":  # the Anthropic client sends x-api-key or a bearer token
            return bearer or self.headers.get("x-api-key") == key
        return bearer

    # --- endpoints ------------------------------------------------------------------

    def do_GET(self) -> None:
        api = "anthropic" if "anthropic-version" in self.headers else "openai"
        self._record("models", {})
        if not self._authorised(api):
            self._error(api, 401, "invalid x-api-key / bearer token", {})
            return
        if self.path.rstrip("/").endswith("/models"):
            models = [{"id": "fake-model", "object": "model", "type": "model", "created": 0}]
            self._send_json(200, {"object": "list", "data": models, "has_more": False})
            return
        self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_unparsable": raw.decode("utf-8", "replace")}
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/messages/count_tokens"):
            self._count_tokens(body)
            return
        if path.endswith("/chat/completions"):
            api = "openai"
        elif path.endswith("/messages"):
            api = "anthropic"
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        request = self._record(api, body)
        state = self.server.state
        with state.lock:
            fault = state.faults.popleft() if state.faults else None
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        self._counted = True
        try:
            self._generate(api, request, fault)
        finally:
            self._land()

    def _count_tokens(self, body: dict[str, Any]) -> None:
        """Anthropic's free ``count_tokens``: the input a messages call of this body is
        billed; logged, never billed, never a generation."""
        self._record("anthropic-count", body)
        if not self._authorised("anthropic"):
            self._error("anthropic", 401, "invalid x-api-key / bearer token", {})
            return
        self._send_json(200, {"input_tokens": self.server.state.cache.anthropic_count(body)})

    def _land(self) -> None:
        """A generation request stops counting as in flight just before its answer is
        written, so that a client's next request never overlaps it in the count.  The
        prompt-cache entries it wrote become readable now, as its response begins."""
        pending = self._pending_entries
        if pending:
            self._pending_entries = ()
            self.server.state.cache.land(pending)
        if getattr(self, "_counted", False):
            self._counted = False
            state = self.server.state
            with state.lock:
                state.in_flight -= 1

    def _refusal(self, api: str, request: FakeRequest) -> tuple[int, str, str] | None:
        """(status, message, field) when the server does not take what the request sent."""
        if api != "openai":
            return None
        for name, status in self.server.state.refused.items():
            if name in request.body:
                return status, f"Unrecognized request argument supplied: {name}", name
        if request.schema_field is not None and request.body.get("tools"):
            return 400, "Cannot use custom grammar constraints with tools.", "tools"
        return None

    def _generate(self, api: str, request: FakeRequest, fault: Fault | None) -> None:
        state = self.server.state
        refusal = self._refusal(api, request) if self._authorised(api) else None
        if refusal is not None:
            status, message, name = refusal
            body = {"error": {"message": message, "type": "invalid_request_error",
                              "code": None, "param": name}}  # fmt: skip
            self._send_json(status, body)
            return
        delay = state.latency_s + (fault.delay_s if fault else 0.0)
        fails = fault is not None and (fault.drop or fault.status is not None or fault.malformed)
        if not fails and self._authorised(api):
            # A success is billed as the request arrives (what the prompt cache holds then),
            # and answered after the latency: its own entries become readable only then.
            reply = (
                self._openai_reply(request) if api == "openai" else self._anthropic_reply(request)
            )
            if delay:
                time.sleep(delay)
            if fault is not None and fault.reshape is not None:
                reply = fault.reshape(reply)
            self._send_json(200, reply)
            return
        if delay:
            time.sleep(delay)
        if fault is not None and fault.drop:
            self._land()
            self.close_connection = True
            self.connection.close()
            return
        if fault is not None and fault.status is not None:
            headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            self._error(api, fault.status, fault.message or f"injected {fault.status}", headers)
            return
        if not self._authorised(api):
            self._error(api, 401, "invalid x-api-key / bearer token", {})
            return
        if fault is not None and fault.malformed:
            self._send_raw(200, b'{"id": "oops", "choices": [')

    def _texts(self, request: FakeRequest, n: int) -> list[str | ToolTurn]:
        texts: list[str | ToolTurn] = []
        for index in range(n):
            request.choice = index
            texts.append(self.server.state.responder(request))
        request.choice = 0
        return texts

    def _openai_reply(self, request: FakeRequest) -> dict[str, Any]:
        n = int(request.body.get("n") or 1)
        if self.server.state.max_choices is not None:
            n = min(n, self.server.state.max_choices)
        texts = self._texts(request, n)
        if request.schema is not None:
            # A decoder under a call schema writes the call as the reply's text.
            texts = [_as_json_call(t) for t in texts]
        choices = [
            {
                "index": i,
                "message": _openai_message(text),
                "finish_reason": "tool_calls" if isinstance(text, ToolTurn) else "stop",
                "logprobs": (
                    _logprobs(text)
                    if request.body.get("logprobs") and not isinstance(text, ToolTurn)
                    else None
                ),
            }
            for i, text in enumerate(texts)
        ]
        out = sum(self.server.state.count(_plain(t)) for t in texts)
        state = self.server.state
        usage, billed, self._pending_entries = state.cache.openai_usage(request.body, out)
        request.billed = billed
        with state.lock:
            state.bill.append(billed)
        return {
            "id": f"chatcmpl-{len(self.server.state.log)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.body.get("model", ""),
            "choices": choices,
            "usage": usage,
        }

    def _anthropic_reply(self, request: FakeRequest) -> dict[str, Any]:
        text = self._texts(request, 1)[0]
        blocks: list[dict[str, Any]] = []
        if _plain(text) or not isinstance(text, ToolTurn):
            blocks.append({"type": "text", "text": _plain(text)})
        if isinstance(text, ToolTurn):
            for index, (name, arguments) in enumerate(text.calls):
                given = json.loads(arguments) if isinstance(arguments, str) else arguments
                blocks.append(
                    {"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": given}
                )
        output = self.server.state.count(_plain(text))
        usage = self._anthropic_usage(request, output)
        return {
            "id": f"msg_{len(self.server.state.log)}",
            "type": "message",
            "role": "assistant",
            "model": request.body.get("model", ""),
            "content": blocks,
            "stop_reason": "tool_use" if isinstance(text, ToolTurn) else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }

    def _anthropic_usage(self, request: FakeRequest, output: int) -> dict[str, Any]:
        """Bill one messages call as Anthropic documents prompt caching (module doc)."""
        state = self.server.state
        usage, billed, self._pending_entries = state.cache.anthropic_usage(request.body, output)
        request.billed = billed
        with state.lock:
            state.bill.append(billed)
        return usage


def _plain(reply: str | ToolTurn) -> str:
    return reply.text if isinstance(reply, ToolTurn) else reply


def _as_json_call(reply: str | ToolTurn) -> str:
    """A scripted reply as a structured-output server sends it: a ``ToolTurn``'s first
    call as ``{"name": ..., "arguments": {...}}`` text; a string as it is."""
    if not isinstance(reply, ToolTurn) or not reply.calls:
        return _plain(reply)
    name, arguments = reply.calls[0]
    # A str is sent as written (malformed or cut short included), as in _openai_message.
    written = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return f'{{"name": {json.dumps(name)}, "arguments": {written}}}'


def _openai_message(reply: str | ToolTurn) -> dict[str, Any]:
    if not isinstance(reply, ToolTurn):
        return {"role": "assistant", "content": reply}
    return {
        "role": "assistant",
        "content": reply.text or None,
        "tool_calls": [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                },
            }
            for index, (name, arguments) in enumerate(reply.calls)
        ],
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 overflows when 16 connections open at once.
    request_queue_size = 128
    state: _State


class FakeProvider:
    """The loopback server; a context manager that starts and stops it."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency_s: float = 0.0,
        max_choices: int | None = None,
        api_key: str | None = None,
        tokenizer: Tokenizer | None = None,
        cache_min_tokens: int = 1024,
        claude_tokenizer: Tokenizer | None = None,
    ) -> None:
        self._state = _State(
            responder=responder or echo_responder,
            latency_s=latency_s,
            max_choices=max_choices,
            api_key=api_key,
            cache=PromptCache(
                tokenizer or str.split,
                cache_min_tokens,
                claude_tokenizer,
                chat_format=tokenizer is not None,
            ),
        )
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> FakeProvider:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.state = self._state
        self._server = server
        # A short poll interval keeps stop() (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.02,), name="fakeprovider", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- addresses ------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeProvider is not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Root URL: what ``ANTHROPIC_BASE_URL`` takes (the client adds /v1/messages)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        """What ``OPENAI_BASE_URL`` takes (the client adds /chat/completions)."""
        return f"{self.url}/v1"

    # --- scripting ------------------------------------------------------------------

    @property
    def responder(self) -> Responder:
        return self._state.responder

    @responder.setter
    def responder(self, value: Responder) -> None:
        self._state.responder = value

    @property
    def latency_s(self) -> float:
        return self._state.latency_s

    @latency_s.setter
    def latency_s(self, value: float) -> None:
        self._state.latency_s = value

    @property
    def max_choices(self) -> int | None:
        return self._state.max_choices

    @max_choices.setter
    def max_choices(self, value: int | None) -> None:
        self._state.max_choices = value

    def fail_next(self, fault: Fault | None = None, *, times: int = 1, **kwargs: Any) -> None:
        """Queue ``times`` copies of a fault for the next generation requests."""
        chosen = fault or Fault(**kwargs)
        with self._state.lock:
            self._state.faults.extend([chosen] * times)

    def clear_faults(self) -> None:
        with self._state.lock:
            self._state.faults.clear()

    def refuse(self, field: str, *, status: int = 400) -> None:
        """Answer every request carrying the top-level ``field`` with ``status`` and an
        error naming it (OpenAI's wording), as a server that does not take it."""
        with self._state.lock:
            self._state.refused[field] = status

    @property
    def log(self) -> list[FakeRequest]:
        with self._state.lock:
            return list(self._state.log)

    @property
    def max_in_flight(self) -> int:
        """The most generation requests the server was handling at the same time."""
        with self._state.lock:
            return self._state.max_in_flight

    @property
    def bill(self) -> list[Billed]:
        """Every answered generation call's bill, in order of answering."""
        with self._state.lock:
            return list(self._state.bill)

    def advance(self, seconds: float) -> None:
        """Move the prompt cache's clock forward (entries expire by it)."""
        with self._state.lock:
            self._state.cache.clock_offset += seconds

    def generation_requests(self) -> list[FakeRequest]:
        """Logged POSTs to the chat-completions or messages endpoint."""
        return [r for r in self.log if r.api in ("openai", "anthropic")]
