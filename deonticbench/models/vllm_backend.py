"""``vllm:<model>``: vLLM's offline engine in-process, for a GPU machine with the ``vllm`` extra.

Not exercised in CI (no GPU there).  The tested way to use vLLM is to start
``vllm serve <model>`` and use ``openai-compatible:<model>@http://host:8000/v1``.

The engine is synchronous and owns the GPU, so generations run one at a time in a
dedicated worker thread; ``n`` is native (``SamplingParams.n``).
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import ConfigError, missing_extra
from .base import Completion, Model, Request
from .registry import ModelSettings
from .retry import short
from .tool_calls import openai_messages, openai_tools, read_hermes_tool_calls, wants_native_tools


class VLLMModel(Model):
    def __init__(self, spec: str, model_name: str, settings: ModelSettings) -> None:
        if not model_name:
            raise ConfigError("vllm needs a model: write vllm:<hub id or local folder>.")
        self.spec = spec
        self.provider = "vllm"
        self.model_name = model_name
        self.params = settings.params
        self.settings = settings
        self._engine: Any = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vllm")
        self._load_lock = asyncio.Lock()
        self.native_tools = wants_native_tools(settings.options)

    def _load(self) -> Any:
        try:
            # optional: the vllm extra, only when chosen
            import vllm
        except ImportError:
            raise missing_extra(
                "the vllm backend", "vllm", also="on a machine with a GPU"
            ) from None
        kwargs: dict[str, Any] = {"model": self.model_name}
        for option in ("gpu_memory_utilization", "tensor_parallel_size"):
            if self.settings.options.get(option) is not None:
                kwargs[option] = self.settings.options[option]
        if self.settings.options.get("n_ctx") is not None:
            kwargs["max_model_len"] = int(self.settings.options["n_ctx"])
        try:
            return vllm.LLM(**kwargs)
        except Exception as exc:  # vLLM raises many kinds (no GPU, OOM, unknown model)
            raise ConfigError(f"vLLM cannot start {self.model_name}: {short(exc)}.") from None

    async def _ensure_loaded(self) -> Any:
        async with self._load_lock:
            if self._engine is None:
                loop = asyncio.get_running_loop()
                self._engine = await loop.run_in_executor(self._executor, self._load)
        return self._engine

    async def check(self) -> None:
        await self._ensure_loaded()

    def _sampling(self, n: int) -> Any:
        # optional: the vllm extra, only when chosen
        import vllm

        p = self.params
        kwargs: dict[str, Any] = {"n": n, **p.extra}
        for name in ("temperature", "top_p", "max_tokens", "seed"):
            value = getattr(p, name)
            if value is not None:
                kwargs[name] = value
        if p.stop:
            kwargs["stop"] = list(p.stop)
        return vllm.SamplingParams(**kwargs)

    def _run(
        self,
        engine: Any,
        messages: list[dict[str, Any]],
        n: int,
        tools: list[dict[str, Any]] | None = None,
    ) -> list[Completion]:
        start = time.monotonic()
        try:
            # tools go to the model's chat template; the engine parses no calls back.
            extra = {"tools": tools} if tools else {}
            outputs = engine.chat([messages], self._sampling(n), use_tqdm=False, **extra)
        except Exception as exc:  # a failed batch must become error items, not a crash
            return [Completion.failed(f"vllm: {short(exc)}")] * n
        latency = time.monotonic() - start
        result = outputs[0]
        prompt = len(result.prompt_token_ids or [])
        out = []
        for index, choice in enumerate(result.outputs[:n]):
            text, calls = (
                read_hermes_tool_calls(choice.text, turn_id=f"call{index}")
                if tools
                else (choice.text, ())
            )
            out.append(
                Completion(
                    text=text,
                    tokens_in=prompt if index == 0 else 0,
                    tokens_out=len(choice.token_ids or []),
                    latency_s=latency,
                    finish_reason=choice.finish_reason,
                    tool_calls=calls,
                )
            )
        return out

    async def generate(self, request: Request) -> list[Completion]:
        try:
            engine = await self._ensure_loaded()
        except ConfigError as exc:
            return [Completion.failed(str(exc))] * request.n
        messages = openai_messages(request.messages)
        tools = openai_tools(request.tools) if request.tools else None
        loop = asyncio.get_running_loop()
        out = await loop.run_in_executor(
            self._executor, self._run, engine, messages, request.n, tools
        )
        missing = request.n - len(out)
        return out + [Completion.failed("vllm returned fewer outputs than asked")] * missing

    async def aclose(self) -> None:
        self._engine = None
        self._executor.shutdown(wait=False)
