"""A real HTTP server on loopback that speaks OpenAI's Batch API (Files + ``/v1/batches``)
and Anthropic's Message Batches, and bills what it processes.

Tests point the real ``openai`` and ``anthropic`` clients at it (through the harness's
own backends), so serialisation, pagination, the multipart upload and the JSONL result
streams are the real thing.  Scripted:

* ``responder(body, choice) -> text``: each choice's reply (deterministic);
* ``delay_s``: a batch ends this long after it was created (``in_progress`` until then);
* ``item_fault(custom_id, tries) -> kind | None``: per item and per time it was seen,
  ``"http_500"`` (OpenAI: a line with ``error: null`` and ``status_code`` 500, the shape
  inspect_ai misreads; Anthropic: ``errored`` with ``api_error``), ``"http_400"``
  (a request the provider refuses as malformed) or ``"expired"`` (never reached);
* ``reject_next(*causes)``: the next batch is refused whole (OpenAI: ``failed`` with
  ``errors``; Anthropic: HTTP 400 on create);
* ``hold_creates``: a ``threading.Event`` that, while clear, holds every create request
  after it arrived: the batch is created when it is set, whether or not the client is
  still there (a run killed between its intent record and the id);
* results come back in reverse order of the input (never the order sent).

What it keeps: ``batches`` (every batch created, with its items), ``bill`` (one entry per
item processed: custom_id, input and output tokens, and the prompt-cache reads and
writes within the input) and ``creates`` (create requests).

Items read and write the providers' prompt caches exactly as the synchronous endpoints
do (``fake_prompt_cache``: OpenAI's ``prompt_tokens_details.cached_tokens`` keyed by
``prompt_cache_key``; Anthropic's ``cache_control`` breakpoints, TTLs and usage
fields), processed one after another, each item's entries readable by the next: a batch
run's price is tested against a bill that includes cached reads.  Tokens are counted as
words, like ``fakeproviders``, unless ``tokenizer`` is given.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fake_prompt_cache import Billed, PromptCache, Tokenizer

__all__ = ["BilledItem", "FakeBatch", "FakeBatches"]

Responder = Callable[[dict[str, Any], int], str]
ItemFault = Callable[[str, int], "str | None"]


@dataclass
class BilledItem:
    api: str
    batch_id: str
    custom_id: str
    billed: Billed
    """The item's bill in the provider's categories (``batch`` set: at the batch price)."""

    @property
    def input_tokens(self) -> int:
        """All its input: uncached, written to and read from the prompt cache."""
        return self.billed.input_total

    @property
    def output_tokens(self) -> int:
        return self.billed.output


@dataclass
class FakeBatch:
    api: str
    id: str
    created_at: float
    items: list[dict[str, Any]]
    """OpenAI: the JSONL lines; Anthropic: the ``requests`` entries."""
    metadata: dict[str, str] = field(default_factory=dict)
    rejected: list[str] = field(default_factory=list)
    cancelled: bool = False
    ended: bool = False
    results: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    """OpenAI's error file lines (items that failed with an ``error`` object)."""

    @property
    def custom_ids(self) -> list[str]:
        return [str(i["custom_id"]) for i in self.items]


class _State:
    def __init__(self, responder: Responder, delay_s: float, cache: PromptCache) -> None:
        self.responder = responder
        self.cache = cache
        self.delay_s = delay_s
        self.item_fault: ItemFault = lambda custom_id, tries: None
        self.rejects: list[list[str]] = []
        self.hold_creates = threading.Event()
        self.hold_creates.set()
        self.lock = threading.RLock()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.bill: list[BilledItem] = []
        self.creates = 0
        self.seen: dict[str, int] = {}
        self.url = ""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    # --- plumbing -----------------------------------------------------------------------

    def _send(self, status: int, payload: Any, *, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    @property
    def _anthropic(self) -> bool:
        return "anthropic-version" in self.headers

    @property
    def _path(self) -> list[str]:
        return [p for p in urlsplit(self.path).path.split("/") if p]

    @property
    def _query(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}

    # --- routes --------------------------------------------------------------------------

    def do_GET(self) -> None:
        path, state = self._path, self.server.state
        if path[-1:] == ["models"]:
            data = [{"id": "fake-model", "object": "model", "type": "model", "created": 0}]
            self._send(200, {"object": "list", "data": data, "has_more": False})
        elif path[:2] == ["v1", "files"] and path[-1] == "content":
            with state.lock:
                content = state.files.get(path[2])
            if content is None:
                self._send(404, {"error": {"message": "no such file"}})
            else:
                self._send(200, None, raw=content)
        elif path[:2] == ["v1", "batches"] and len(path) == 2:
            self._list("openai")
        elif path[:2] == ["v1", "batches"]:
            self._retrieve("openai", path[2])
        elif path[:3] == ["v1", "messages", "batches"] and len(path) == 3:
            self._list("anthropic")
        elif path[:3] == ["v1", "messages", "batches"] and path[-1] == "results":
            self._anthropic_results(path[3])
        elif path[:3] == ["v1", "messages", "batches"]:
            self._retrieve("anthropic", path[3])
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        path = self._path
        raw = self._body()
        if path == ["v1", "files"]:
            self._upload(raw)
        elif path == ["v1", "batches"]:
            self._create_openai(json.loads(raw))
        elif path[:2] == ["v1", "batches"] and path[-1] == "cancel":
            self._cancel("openai", path[2])
        elif path == ["v1", "messages", "count_tokens"]:
            # The same free endpoint as the synchronous API's: the dry run asks it.
            body = json.loads(raw)
            self._send(200, {"input_tokens": self.server.state.cache.anthropic_count(body)})
        elif path == ["v1", "messages", "batches"]:
            self._create_anthropic(json.loads(raw))
        elif path[:3] == ["v1", "messages", "batches"] and path[-1] == "cancel":
            self._cancel("anthropic", path[3])
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    # --- OpenAI -------------------------------------------------------------------------

    def _upload(self, raw: bytes) -> None:
        head = f"Content-Type: {self.headers.get('Content-Type')}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.default).parsebytes(head + raw)
        content = b""
        for part in message.iter_parts():
            if part.get_param("name", header="content-disposition") == "file":
                content = part.get_payload(decode=True) or b""
        file_id = f"file-{uuid.uuid4().hex[:12]}"
        with self.server.state.lock:
            self.server.state.files[file_id] = content
        self._send(
            200,
            {
                "id": file_id,
                "object": "file",
                "bytes": len(content),
                "created_at": int(time.time()),
                "filename": "requests.jsonl",
                "purpose": "batch",
                "status": "processed",
            },
        )

    def _create_openai(self, body: dict[str, Any]) -> None:
        state = self.server.state
        with state.lock:
            state.creates += 1
            content = state.files[body["input_file_id"]]
        lines = [json.loads(x) for x in content.decode().splitlines() if x.strip()]
        batch = FakeBatch(
            "openai",
            f"batch_{uuid.uuid4().hex[:16]}",
            time.time(),
            lines,
            dict(body.get("metadata") or {}),
        )
        self._create(batch)

    def _create_anthropic(self, body: dict[str, Any]) -> None:
        state = self.server.state
        with state.lock:
            state.creates += 1
            reject = state.rejects.pop(0) if state.rejects else None
        if reject is not None:
            message = "; ".join(reject)
            error = {"type": "invalid_request_error", "message": message}
            self._send(400, {"type": "error", "error": error})
            return
        batch = FakeBatch("anthropic", f"msgbatch_{uuid.uuid4().hex[:16]}", 0.0, body["requests"])
        self._create(batch)

    def _create(self, batch: FakeBatch) -> None:
        state = self.server.state
        # Held: the batch is created once released, even if the client has gone.
        state.hold_creates.wait()
        with state.lock:
            batch.created_at = time.time()
            if batch.api == "openai" and state.rejects:
                batch.rejected = state.rejects.pop(0)
            state.batches[batch.id] = batch
        try:
            self._send(200, self._object(batch))
        except OSError:
            pass  # the client was killed while we held it: the batch exists all the same

    def _retrieve(self, api: str, batch_id: str) -> None:
        with self.server.state.lock:
            batch = self.server.state.batches.get(batch_id)
            if batch is None or batch.api != api:
                self._send(404, {"error": {"message": "no such batch"}})
                return
            self._advance(batch)
            payload = self._object(batch)
        self._send(200, payload)

    def _cancel(self, api: str, batch_id: str) -> None:
        with self.server.state.lock:
            batch = self.server.state.batches[batch_id]
            if not batch.ended:
                batch.cancelled = True
                self._finish(batch)
            payload = self._object(batch)
        self._send(200, payload)

    def _list(self, api: str) -> None:
        query = self._query
        limit = int(query.get("limit") or 20)
        after = query.get("after") or query.get("after_id")
        with self.server.state.lock:
            batches = [b for b in self.server.state.batches.values() if b.api == api]
            for b in batches:
                self._advance(b)
            batches.sort(key=lambda b: b.created_at, reverse=True)  # newest first
            if after is not None:
                ids = [b.id for b in batches]
                batches = batches[ids.index(after) + 1 :] if after in ids else []
            page, more = batches[:limit], len(batches) > limit
            data = [self._object(b) for b in page]
        first = page[0].id if page else None
        last = page[-1].id if page else None
        self._send(
            200,
            {"object": "list", "data": data, "has_more": more, "first_id": first, "last_id": last},
        )

    # --- batch life ---------------------------------------------------------------------

    def _advance(self, batch: FakeBatch) -> None:
        due = time.time() - batch.created_at >= self.server.state.delay_s
        if due and not batch.ended and not batch.rejected:
            self._finish(batch)

    def _finish(self, batch: FakeBatch) -> None:
        """Process every item once (and bill it), or mark it expired / cancelled."""
        state = self.server.state
        batch.ended = True
        for item in batch.items:
            custom_id = str(item["custom_id"])
            tries = state.seen.get(custom_id, 0)
            state.seen[custom_id] = tries + 1
            fault = "cancelled" if batch.cancelled else state.item_fault(custom_id, tries)
            body = item.get("body") or item.get("params") or {}
            if fault is None:
                texts = [state.responder(body, c) for c in range(int(body.get("n") or 1))]
                output = sum(state.cache.count(t) for t in texts)
                bill = (
                    state.cache.anthropic_usage
                    if batch.api == "anthropic"
                    else state.cache.openai_usage
                )
                usage, billed, pending = bill(body, output, batch=True)
                # Processed one at a time: what this item wrote, the next one can read.
                state.cache.land(pending)
                state.bill.append(BilledItem(batch.api, batch.id, custom_id, billed))
                batch.results.append(self._success(batch.api, custom_id, body, texts, usage))
            else:
                self._failure(batch, custom_id, fault)
        # Never in the order sent.
        batch.results.reverse()
        batch.errors.reverse()

    def _success(
        self,
        api: str,
        custom_id: str,
        body: dict[str, Any],
        texts: list[str],
        usage: dict[str, Any],
    ) -> dict[str, Any]:
        if api == "anthropic":
            message = {
                "id": f"msg_{custom_id}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", ""),
                "content": [{"type": "text", "text": texts[0]}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": usage,
            }
            return {"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}
        reply = {
            "id": f"chatcmpl-{custom_id}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": t},
                    "finish_reason": "stop",
                }
                for i, t in enumerate(texts)
            ],
            "usage": usage,
        }
        return {
            "id": f"batch_req_{custom_id}",
            "custom_id": custom_id,
            "response": {"status_code": 200, "request_id": "req", "body": reply},
            "error": None,
        }

    def _failure(self, batch: FakeBatch, custom_id: str, fault: str) -> None:
        if batch.api == "anthropic":
            if fault in ("expired", "cancelled"):
                kind = "expired" if fault == "expired" else "canceled"
                batch.results.append({"custom_id": custom_id, "result": {"type": kind}})
                return
            error_type = "api_error" if fault == "http_500" else "invalid_request_error"
            error = {"type": "error", "error": {"type": error_type, "message": f"fake {fault}"}}
            batch.results.append(
                {"custom_id": custom_id, "result": {"type": "errored", "error": error}}
            )
            return
        if fault in ("expired", "cancelled"):
            code = "batch_expired" if fault == "expired" else "batch_cancelled"
            batch.errors.append(
                {
                    "id": f"batch_req_{custom_id}",
                    "custom_id": custom_id,
                    "response": None,
                    "error": {"code": code, "message": f"This request was not run ({fault})."},
                }
            )
            return
        status = 500 if fault == "http_500" else 400
        batch.results.append(
            {
                # error null, status_code not 200: a failure all the same.
                "id": f"batch_req_{custom_id}",
                "custom_id": custom_id,
                "response": {
                    "status_code": status,
                    "request_id": "req",
                    "body": {"error": {"message": f"fake {fault}", "type": "server_error"}},
                },
                "error": None,
            }
        )

    def _object(self, batch: FakeBatch) -> dict[str, Any]:
        state = self.server.state
        if batch.api == "anthropic":
            return self._anthropic_object(batch)
        if batch.rejected:
            status = "failed"
        elif not batch.ended:
            status = "in_progress"
        elif batch.cancelled:
            status = "cancelled"
        elif any(e["error"]["code"] == "batch_expired" for e in batch.errors):
            status = "expired"
        else:
            status = "completed"
        output_id = error_id = None
        if batch.ended and not batch.rejected:
            with state.lock:
                output_id = f"file-out-{batch.id}"
                state.files[output_id] = "".join(
                    json.dumps(r) + "\n" for r in batch.results
                ).encode()
                if batch.errors:
                    error_id = f"file-err-{batch.id}"
                    state.files[error_id] = "".join(
                        json.dumps(r) + "\n" for r in batch.errors
                    ).encode()
        failed = sum(1 for r in batch.results if r.get("response", {}).get("status_code") != 200)
        errors = (
            {
                "object": "list",
                "data": [
                    {"code": "invalid_request", "message": cause, "line": None, "param": None}
                    if not cause.startswith("token_limit_exceeded")
                    else {"code": "token_limit_exceeded", "message": cause, "line": None}
                    for cause in batch.rejected
                ],
            }
            if batch.rejected
            else None
        )
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": errors,
            "input_file_id": "file-in",
            "completion_window": "24h",
            "status": status,
            "output_file_id": output_id,
            "error_file_id": error_id,
            "created_at": int(batch.created_at),
            "request_counts": {
                "total": len(batch.items),
                "completed": len(batch.results) - failed if batch.ended else 0,
                "failed": failed + len(batch.errors) if batch.ended else 0,
            },
            "metadata": batch.metadata,
        }

    def _anthropic_object(self, batch: FakeBatch) -> dict[str, Any]:
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if not batch.ended:
            counts["processing"] = len(batch.items)
        for r in batch.results:
            counts[r["result"]["type"]] += 1
        created = datetime.fromtimestamp(batch.created_at, UTC).isoformat().replace("+00:00", "Z")
        return {
            "id": batch.id,
            "type": "message_batch",
            "processing_status": "ended" if batch.ended else "in_progress",
            "request_counts": counts,
            "ended_at": created if batch.ended else None,
            "created_at": created,
            "expires_at": created,
            "cancel_initiated_at": None,
            "archived_at": None,
            "results_url": (
                f"{self.server.state.url}/v1/messages/batches/{batch.id}/results"
                if batch.ended
                else None
            ),
        }

    def _anthropic_results(self, batch_id: str) -> None:
        with self.server.state.lock:
            batch = self.server.state.batches[batch_id]
            data = "".join(json.dumps(r) + "\n" for r in batch.results).encode()
        self._send(200, None, raw=data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    state: _State


def default_responder(body: dict[str, Any], choice: int) -> str:
    return f"reply {choice}"


class FakeBatches:
    """The loopback batch server; a context manager that starts and stops it."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        delay_s: float = 0.0,
        tokenizer: Tokenizer | None = None,
        cache_min_tokens: int = 1024,
        claude_tokenizer: Tokenizer | None = None,
    ) -> None:
        cache = PromptCache(
            tokenizer or str.split,
            cache_min_tokens,
            claude_tokenizer,
            chat_format=tokenizer is not None,
        )
        self._state = _State(responder or default_responder, delay_s, cache)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> FakeBatches:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.state = self._state
        self._server = server
        self._state.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(
            target=server.serve_forever, args=(0.02,), name="fakebatches", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._state.hold_creates.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # --- addresses and scripting ----------------------------------------------------------

    @property
    def url(self) -> str:
        """What ``ANTHROPIC_BASE_URL`` takes."""
        return self._state.url

    @property
    def openai_url(self) -> str:
        """What ``OPENAI_BASE_URL`` takes."""
        return f"{self._state.url}/v1"

    @property
    def delay_s(self) -> float:
        return self._state.delay_s

    @delay_s.setter
    def delay_s(self, value: float) -> None:
        self._state.delay_s = value

    @property
    def hold_creates(self) -> threading.Event:
        return self._state.hold_creates

    def set_item_fault(self, fault: ItemFault) -> None:
        self._state.item_fault = fault

    def reject_next(self, *causes: str) -> None:
        with self._state.lock:
            self._state.rejects.append(list(causes))

    # --- what happened --------------------------------------------------------------------

    @property
    def batches(self) -> list[FakeBatch]:
        with self._state.lock:
            return sorted(self._state.batches.values(), key=lambda b: b.created_at)

    @property
    def bill(self) -> list[BilledItem]:
        with self._state.lock:
            return list(self._state.bill)

    @property
    def creates(self) -> int:
        with self._state.lock:
            return self._state.creates

    def in_progress(self) -> int:
        """Batches created and not yet due to end."""
        now = time.time()
        with self._state.lock:
            return sum(
                1
                for b in self._state.batches.values()
                if not b.ended and not b.rejected and now - b.created_at < self._state.delay_s
            )
