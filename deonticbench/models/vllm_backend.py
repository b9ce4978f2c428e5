"""``vllm:<model>``: vLLM's offline engine in-process, for a GPU machine with the ``vllm`` extra.

Not exercised in CI (no GPU there).  The tested way to use vLLM is to start
``vllm serve <model>`` and use ``openai-compatible:<model>@http://host:8000/v1``.

The engine is synchronous and owns the GPU, so generations run one at a time in a
dedicated worker thread; ``n`` is native (``SamplingParams.n``).

Written against vLLM 0.33.0's documented offline API: ``LLM.chat(messages,
sampling_params, use_tqdm=..., tools=...)`` and, for the constrained tool mode,
``SamplingParams(structured_outputs=StructuredOutputsParams(json=schema))`` (the form
since vLLM 0.10.2; the older ``guided_decoding`` was removed in 0.12).  Under that
protocol the conversation is the text tool mode's (no tools in the chat template) and
each turn is decoded under ``constrained.call_schema``.  ``sampling_kwargs`` builds the
request as plain data, which is what the tests check: the engine itself never runs there.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..errors import ConfigError, missing_extra
from ..vocabulary.chat import ToolCall, ToolSpec
from .backoff import short
from .base import Completion, GenerateConfig, Model, Request, config_of, constrained_turns
from .constrained import (
    CONSTRAINED,
    CONSTRAINED_MAX_TOKENS_PARAM,
    NATIVE,
    REPLY_SHAPE_KEY,
    TEXT,
    call_schema,
    constrained_max_tokens,
    schema_calls,
    tool_mode,
)
from .registry import ModelSettings
from .tool_calls import openai_messages, openai_tools, read_hermes_tool_calls


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
        self.parallel_requests = 1  # that one thread
        self._load_lock = asyncio.Lock()
        self.tool_mode = tool_mode(
            settings.options, offered=(NATIVE, TEXT, CONSTRAINED), backend=spec
        )
        self.native_tools = self.tool_mode == NATIVE
        self._turn_max_tokens = constrained_max_tokens(settings.options, settings.params.max_tokens)

    def reply_shape(self, tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
        if not (constrained_turns(self) and tools):
            return {}
        return {REPLY_SHAPE_KEY: CONSTRAINED, "structured_outputs": {"json": call_schema(tools)}}

    def identity(self) -> dict[str, Any]:
        ident = super().identity()
        # A constrained turn's own output limit changes what comes back (the cache key).
        limit = constrained_max_tokens(self.settings.options, None)
        if constrained_turns(self) and limit is not None:
            ident[CONSTRAINED_MAX_TOKENS_PARAM] = limit
        return ident

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

    def sampling_kwargs(
        self, n: int, tools: tuple[ToolSpec, ...] = (), config: GenerateConfig | None = None
    ) -> dict[str, Any]:
        """The keyword arguments of ``vllm.SamplingParams`` for ``n`` samples, as plain
        data: ``structured_outputs`` is the keyword arguments of its
        ``StructuredOutputsParams``, present on a constrained agent turn only.  ``config``:
        the request's (None: the settings')."""
        p = config or GenerateConfig.of(self.params)
        kwargs: dict[str, Any] = {"n": n, **p.extra}
        for name in ("temperature", "top_p", "max_tokens", "seed"):
            value = getattr(p, name)
            if value is not None:
                kwargs[name] = value
        if p.stop:
            kwargs["stop"] = list(p.stop)
        if constrained_turns(self) and tools:
            if self._turn_max_tokens is not None:
                kwargs["max_tokens"] = self._turn_max_tokens
            kwargs["structured_outputs"] = {"json": call_schema(tools)}
        return kwargs

    def _sampling(self, n: int, tools: tuple[ToolSpec, ...], config: GenerateConfig) -> Any:
        # optional: the vllm extra, only when chosen
        import vllm

        kwargs = self.sampling_kwargs(n, tools, config)
        structured = kwargs.pop("structured_outputs", None)
        if structured is not None:
            # optional: the vllm extra; the class lives in this module, not in vllm's root
            from vllm.sampling_params import StructuredOutputsParams

            kwargs["structured_outputs"] = StructuredOutputsParams(**structured)
        return vllm.SamplingParams(**kwargs)

    def _run(
        self,
        engine: Any,
        messages: list[dict[str, Any]],
        n: int,
        config: GenerateConfig,
        tools: tuple[ToolSpec, ...] = (),
        turn: int = 0,
    ) -> list[Completion]:
        start = time.monotonic()
        native = bool(tools) and self.native_tools
        try:
            # Native: the tools go to the model's chat template and the calls are read
            # back from its Hermes-style text.  Constrained: the conversation is the text
            # protocol's and the schema shapes the reply.
            extra = {"tools": openai_tools(tools)} if native else {}
            sampling = self._sampling(n, tools, config)
            outputs = engine.chat([messages], sampling, use_tqdm=False, **extra)
        except Exception as exc:  # a failed batch must become error items, not a crash
            return [Completion.failed(f"vllm: {short(exc)}")] * n
        latency = time.monotonic() - start
        result = outputs[0]
        prompt = len(result.prompt_token_ids or [])
        out = []
        for index, choice in enumerate(result.outputs[:n]):
            text: str = choice.text
            calls: tuple[ToolCall, ...] = ()
            if native:
                text, calls = read_hermes_tool_calls(choice.text, turn_id=f"call{index}")
            elif tools and constrained_turns(self):
                calls = schema_calls(choice.text, turn=turn)
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
        loop = asyncio.get_running_loop()
        config = config_of(self, request)
        out = await loop.run_in_executor(
            self._executor,
            self._run,
            engine,
            messages,
            request.n,
            config,
            request.tools,
            request.turn,
        )
        missing = request.n - len(out)
        return out + [Completion.failed("vllm returned fewer outputs than asked")] * missing

    async def aclose(self) -> None:
        self._engine = None
        self._executor.shutdown(wait=False)
