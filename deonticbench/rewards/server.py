"""The reward over HTTP, in OpenRLHF's remote reward protocol (``deonticbench serve-reward``).

    POST /get_reward   {"query": [...], "prompts": [...], "labels": [...]}
                    -> {"rewards": [...], "scores": [...], "extra_logs": {...}}
    GET  /health       {"status": "ok", "mode": ..., "timeout_s": ..., "workers": ...}

``labels`` are the JSON ``label`` column of the trl-grpo export (domain, case id, gold,
reference signatures).  A request scores its whole batch across the sandbox pool; at
most ``max_batches`` requests are scored at once and the rest wait, and uvicorn turns
away connections beyond ``limit_concurrency`` with 503 rather than queueing without end.
On SIGINT/SIGTERM uvicorn stops accepting, lets the requests in flight finish (up to
``graceful_s``), and the pool is closed on the way out.
"""

from __future__ import annotations

import asyncio
import errno
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..errors import ConfigError
from .core import REWARD_MODES, RewardInputError, RewardMode, check_mode
from .openrlhf import as_openrlhf, score_queries
from .process_pool import close_process_solver, process_solver


@dataclass(frozen=True)
class ServerSettings:
    mode: RewardMode = "paper"
    timeout_s: float | None = None
    max_batches: int = 4
    """Requests scored at once; the others wait their turn."""
    max_batch_size: int = 4096
    """Completions one request may carry."""


def create_app(settings: ServerSettings | None = None) -> Starlette:
    endpoints = _Endpoints(settings or ServerSettings())
    return Starlette(
        routes=[
            Route("/health", endpoints.health, methods=["GET"]),
            Route("/get_reward", endpoints.get_reward, methods=["POST"]),
        ],
        lifespan=endpoints.lifespan,
    )


class _Endpoints:
    """The server's two endpoints and its lifespan, sharing its settings and the gate
    that bounds the batches scored at once."""

    def __init__(self, config: ServerSettings) -> None:
        check_mode(config.mode)
        self.config = config
        self.gate: asyncio.Semaphore | None = None

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self.gate = asyncio.Semaphore(max(1, self.config.max_batches))
        process_solver()  # start the sandbox before the first request, not during it
        try:
            yield
        finally:
            await asyncio.to_thread(close_process_solver)

    async def health(self, request: Request) -> JSONResponse:
        solver = process_solver()
        return JSONResponse(
            {
                "status": "ok",
                "mode": self.config.mode,
                "timeout_s": self.config.timeout_s,
                "workers": solver.size,
                "sandbox": solver.sandbox,
            }
        )

    async def get_reward(self, request: Request) -> JSONResponse:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _bad("the request body is not JSON")
        try:
            queries, prompts, labels = _read_batch(body, self.config.max_batch_size)
        except RewardInputError as exc:
            return _bad(str(exc))
        assert self.gate is not None
        async with self.gate:
            try:
                results = await asyncio.to_thread(
                    score_queries,
                    queries,
                    prompts,
                    labels,
                    mode=self.config.mode,
                    timeout_s=self.config.timeout_s,
                )
            except RewardInputError as exc:
                return _bad(str(exc))
        return JSONResponse(as_openrlhf(results))


def _bad(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=400)


def _read_batch(body: Any, limit: int) -> tuple[list[str], list[str] | None, list[Any]]:
    if not isinstance(body, dict):
        raise RewardInputError("the request must be a JSON object")
    queries = body.get("query")
    labels = body.get("labels")
    prompts = body.get("prompts")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise RewardInputError("'query' must be a list of strings")
    if not isinstance(labels, list) or len(labels) != len(queries):
        raise RewardInputError("'labels' must be a list with one label per query")
    if prompts is not None and (not isinstance(prompts, list) or len(prompts) != len(queries)):
        raise RewardInputError("'prompts' must be a list with one prompt per query")
    if len(queries) > limit:
        raise RewardInputError(f"a request may carry at most {limit} queries")
    return queries, prompts, labels


class PortError(ConfigError):
    """The server's address cannot be listened on (in use, not this machine's)."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or one sentence saying why there is none:
    bound before the server is announced, so a busy port is not announced first."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        raise PortError(f"cannot listen on {host}: {_reason(exc)}.") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortError(
                f"port {port} on {host} is already in use: stop what listens there or "
                "choose another --port."
            ) from None
        raise PortError(f"cannot listen on {host}:{port}: {_reason(exc)}.") from None
    return sock


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    settings: ServerSettings | None = None,
    limit_concurrency: int = 64,
    graceful_s: float = 60.0,
    sock: socket.socket | None = None,
) -> None:
    """Run the reward server until SIGINT/SIGTERM (then finish what is in flight);
    ``sock``: a socket from ``bind`` (else one is bound here)."""
    # optional: the train extra, only when serving
    import uvicorn

    listening = sock if sock is not None else bind(host, port)
    config = uvicorn.Config(
        create_app(settings),
        host=host,
        port=port,
        limit_concurrency=limit_concurrency,
        timeout_graceful_shutdown=max(1, round(graceful_s)),
        log_level="warning",
        access_log=False,
    )
    uvicorn.Server(config).run(sockets=[listening])


__all__ = ["REWARD_MODES", "PortError", "ServerSettings", "bind", "create_app", "serve"]
