"""Scripted outputs for inspect's own ``mockllm/model``, keyed by the harness's prompt.

``Script`` is the callable mockllm accepts as ``custom_outputs``: it finds the case by
the hash of the first two messages (system + user, as the harness renders them), the
attempt by the number of assistant turns so far, and answers with the next of the
responses scripted for that case and attempt (cycling, so K epochs can differ).  Every
output carries its usage, so inspect never counts tokens with a tokenizer it would have
to download.

``sitecustomize.py`` beside this file lets the ``inspect`` command line use a script
saved as JSON: ``-M custom_outputs=<file.json>``.

``Reply`` scripts an agent turn by turn for both front doors at once: ``reply_output``
makes it inspect's ``ModelOutput`` (for mockllm), ``ScriptedAgent`` the harness's
backend, with the same calls, text, usage and finish reason (cut off at the output-token
limit: inspect's ``max_tokens``, the harness's ``length``).
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ModelOutput,
    ModelUsage,
    StopReason,
)
from inspect_ai.tool import ToolCall as InspectCall

from deonticbench.integrations.inspect._messages import from_inspect
from deonticbench.models.base import Completion, GenerationParams, Model, Request
from deonticbench.prompting import prompt_hash
from deonticbench.vocabulary.chat import Message, ToolCall


def first_prompt_hash(messages: Sequence[Message]) -> str:
    return prompt_hash(list(messages[:2]))


class Script:
    def __init__(self, responses: dict[str, list[list[str]]]) -> None:
        self.responses = responses
        """First-prompt hash -> per attempt, the responses to give in turn."""
        self.calls: Counter[tuple[str, int]] = Counter()

    @classmethod
    def load(cls, path: str | Path) -> Script:
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.responses), encoding="utf-8")

    def __call__(
        self, input: list[ChatMessage], tools: Any, tool_choice: Any, config: Any
    ) -> ModelOutput:
        sent = from_inspect(input)
        key = first_prompt_hash(sent)
        attempt = sum(1 for m in input if m.role == "assistant")
        options = self.responses[key][attempt]
        text = options[self.calls[(key, attempt)] % len(options)]
        self.calls[(key, attempt)] += 1
        output = ModelOutput.from_content(model="mockllm/model", content=text)
        tokens_in = sum(len(m.content.split()) for m in sent)
        tokens_out = len(text.split())
        output.usage = ModelUsage(
            input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out
        )
        return output


USAGE = (120, 30)
"""Tokens in and out of every scripted turn."""


@dataclass(frozen=True)
class Reply:
    """One scripted model turn: its calls (name, arguments), its text, and whether it
    was cut off at the output-token limit."""

    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    text: str = ""
    cut: bool = False


Turns = Callable[[int], Reply]
"""The scripted reply of each turn (0, 1, ...)."""


def reply_output(reply: Reply, turn: int) -> ModelOutput:
    """A scripted turn as inspect's model output, with its usage and stop reason."""
    calls = [
        InspectCall(id=f"c{turn}_{i}", function=name, arguments=arguments)
        for i, (name, arguments) in enumerate(reply.calls)
    ]
    message = ChatMessageAssistant(
        content=reply.text, tool_calls=calls or None, model="mockllm/model", source="generate"
    )
    stop: StopReason = "max_tokens" if reply.cut else "tool_calls" if calls else "stop"
    return ModelOutput(
        model="mockllm/model",
        choices=[ChatCompletionChoice(message=message, stop_reason=stop)],
        usage=ModelUsage(input_tokens=USAGE[0], output_tokens=USAGE[1], total_tokens=sum(USAGE)),
    )


def mock_outputs(turns: Turns) -> Callable[..., ModelOutput]:
    """mockllm's ``custom_outputs``: the scripted reply of the turn the conversation is at."""

    def respond(messages: list[ChatMessage], tools: Any, choice: Any, config: Any) -> ModelOutput:
        turn = sum(1 for m in messages if m.role == "assistant")
        return reply_output(turns(turn), turn)

    return respond


class ScriptedAgent(Model):
    """The same script as a harness backend (native tool calls), for the agent loop.
    ``n_ctx``: the context window it reports (``agents.context_length``)."""

    native_tools = True
    _cacheable = False

    def __init__(self, turns: Turns, n_ctx: int | None = None) -> None:
        self.spec = self.provider = self.model_name = "scripted"
        self.params = GenerationParams()
        self.turns = turns
        self.n_ctx = n_ctx
        self.requests: list[Request] = []

    async def generate(self, request: Request) -> list[Completion]:
        self.requests.append(request)
        turn = sum(1 for m in request.messages if m.role == "assistant")
        reply = self.turns(turn)
        calls = tuple(ToolCall(f"c{turn}_{i}", n, a) for i, (n, a) in enumerate(reply.calls))
        return [
            Completion(
                text=reply.text, tokens_in=USAGE[0], tokens_out=USAGE[1], tool_calls=calls,
                finish_reason="length" if reply.cut else "stop",
            )
        ]  # fmt: skip


class NetworkUsed(RuntimeError):
    pass


def forbid_network(
    patch: Callable[[Any, str, Any], None] = setattr, journal: Path | None = None
) -> list[str]:
    """Make every connection that leaves the machine fail loudly (unix sockets and
    loopback stay usable), so a test cannot pass while something phones home.  Each
    attempt is also noted in the returned list (and appended to ``journal``), so that
    even one whose exception the caller swallowed is seen.  ``patch`` is ``setattr`` or
    pytest's ``monkeypatch.setattr`` (undone after a test)."""
    attempts: list[str] = []

    def refuse(what: str) -> NetworkUsed:
        attempts.append(what)
        if journal is not None:
            with journal.open("a", encoding="utf-8") as handle:
                handle.write(what + "\n")
        return NetworkUsed(f"a test tried to {what}")

    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            host = address[0]
            if host not in LOCAL:
                raise refuse(f"connect to {address!r}")
        original(self, address)

    resolve = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and host not in LOCAL:
            raise refuse(f"resolve {host!r}")
        return resolve(host, *args, **kwargs)

    patch(socket.socket, "connect", connect)
    patch(socket, "getaddrinfo", getaddrinfo)
    return attempts


LOCAL = ("127.0.0.1", "::1", "localhost")


def install_for_cli(script_path: str, journal: str | None = None) -> None:
    """For the ``inspect`` command line (called by sitecustomize.py): no network, and
    mockllm reads ``-M custom_outputs=<file.json>`` as a saved ``Script``.  The command
    line can only pass strings; this is the one thing taught to the mock, nothing of
    deonticbench or of inspect's evaluation is changed."""
    from inspect_ai.model._providers.mockllm import MockLLM

    forbid_network(journal=Path(journal) if journal else None)
    original = MockLLM.__init__

    def init(self: MockLLM, *args: Any, custom_outputs: Any = None, **kwargs: Any) -> None:
        if isinstance(custom_outputs, str) and custom_outputs == script_path:
            custom_outputs = Script.load(custom_outputs)
        original(self, *args, custom_outputs=custom_outputs, **kwargs)

    MockLLM.__init__ = init  # type: ignore[method-assign]
