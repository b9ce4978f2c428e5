"""The constrained tool mode in the API backends: the real ``openai`` and
``anthropic`` clients against the loopback server, which records and checks the fields
it receives; and the request the ``vllm:`` backend builds for its engine, as data (the
engine needs a GPU and never runs here)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fakeproviders import FakeProvider, FakeRequest, ToolTurn

from deonticbench.errors import ConfigError
from deonticbench.models import Completion, Model, Request, load_model
from deonticbench.models.base import backend_notes, constrained_turns
from deonticbench.models.constrained import call_schema
from deonticbench.models.vllm_backend import VLLMModel
from deonticbench.vocabulary.chat import Message, ToolSpec

# The SDK warns that some Claude models near end of life; not our concern here.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
FAST = {"backoff_base_s": 0.01, "backoff_cap_s": 0.05, "timeout_s": 5}
CONSTRAINED = {**FAST, "tool_mode": "constrained"}
KEY = "sk-test-not-a-real-key"
TOOLS = (
    ToolSpec(
        "write_file",
        "Write a file in the workspace.",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    ),
    ToolSpec(
        "submit",
        "End the trial.",
        {"type": "object", "properties": {}, "required": []},
    ),
)
PROGRAM = {"path": "solution.pl", "content": "main :- format('Tax: ~w~n', [1166])."}


def turn(number: int = 3, tools: tuple[ToolSpec, ...] = TOOLS) -> Request:
    """An agent turn: the conversation so far, the tools, and the turn's number."""
    return Request(
        messages=(
            Message("system", "You are a helpful assistant trained to conduct deontic reasoning."),
            Message("user", "Compute the tax for Alice, then submit."),
        ),
        n=1,
        domain="sara_numeric",
        case_id="tax_case_1",
        mode="agent-zero-shot",
        sample_start=0,
        turn=number,
        tools=tools,
    )


def writes_program(_request: FakeRequest) -> ToolTurn:
    return ToolTurn(calls=[("write_file", PROGRAM)])


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with FakeProvider(writes_program, api_key=KEY) as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        yield server


def compatible(fake: FakeProvider, **options: Any) -> Model:
    return load_model(
        f"openai-compatible:qwen2.5-7b@{fake.openai_url}", overrides={**CONSTRAINED, **options}
    )


async def one_turn(model: Model, request: Request) -> Completion:
    try:
        (completion,) = await model.generate(request)
    finally:
        await model.aclose()
    return completion


# --- openai: a forced native call ----------------------------------------------------


async def test_openai_forces_exactly_one_native_call(fake: FakeProvider) -> None:
    model = load_model("openai:gpt-4.1", overrides=CONSTRAINED)
    assert constrained_turns(model) and model.native_tools
    completion = await one_turn(model, turn())
    (sent,) = fake.generation_requests()
    assert sent.body["tool_choice"] == "required"
    assert sent.body["parallel_tool_calls"] is False
    assert [t["function"]["name"] for t in sent.body["tools"]] == ["write_file", "submit"]
    assert sent.schema_field is None  # a native call, not a schema on the text
    (call,) = completion.tool_calls
    assert (call.name, dict(call.arguments), call.error) == ("write_file", PROGRAM, None)
    assert model.reply_shape(TOOLS) == {
        "tool_protocol": "constrained",
        "tool_choice": "required",
        "parallel_tool_calls": False,
    }
    # The native tool mode forces nothing, as before.
    native = load_model("openai:gpt-4.1", overrides=FAST)
    await one_turn(native, turn())
    sent = fake.generation_requests()[-1]
    assert "tool_choice" not in sent.body and "parallel_tool_calls" not in sent.body
    assert native.reply_shape(TOOLS) == {}


# --- openai-compatible: the call schema in a structured-output field ------------------


async def test_compatible_decodes_under_the_call_schema_in_response_format(
    fake: FakeProvider,
) -> None:
    model = compatible(fake)
    assert constrained_turns(model) and not model.native_tools  # a text-form conversation
    completion = await one_turn(model, turn(3))
    (sent,) = fake.generation_requests()
    assert sent.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "tool_call", "schema": call_schema(TOOLS), "strict": True},
    }
    assert "tools" not in sent.body and "tool_choice" not in sent.body
    # The reply is the JSON the model wrote, read into the call the other protocols give.
    assert json.loads(completion.text or "") == {"name": "write_file", "arguments": PROGRAM}
    (call,) = completion.tool_calls
    assert (call.id, call.name, dict(call.arguments)) == ("t3_0", "write_file", PROGRAM)
    assert model.reply_shape(TOOLS) == {
        "tool_protocol": "constrained",
        "response_format": sent.body["response_format"],
    }


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("json_schema", lambda schema: {"json_schema": schema}),
        ("structured_outputs", lambda schema: {"structured_outputs": {"json": schema}}),
        ("guided_json", lambda schema: {"guided_json": schema}),
    ],
)
async def test_each_constrained_field_puts_the_schema_where_its_server_reads_it(
    fake: FakeProvider, field: str, expected: Any
) -> None:
    model = compatible(fake, constrained_field=field)
    completion = await one_turn(model, turn(0))
    (sent,) = fake.generation_requests()
    want = expected(call_schema(TOOLS))
    assert {k: sent.body[k] for k in want} == want
    assert sent.schema_field == field
    assert "response_format" not in sent.body and "tools" not in sent.body
    assert [c.id for c in completion.tool_calls] == ["t0_0"]
    assert model.reply_shape(TOOLS) == {"tool_protocol": "constrained", **want}


async def test_a_reply_cut_short_is_a_call_with_an_error(fake: FakeProvider) -> None:
    fake.responder = lambda _r: ToolTurn(calls=[("write_file", '{"path": "solution.pl", "con')])
    completion = await one_turn(compatible(fake), turn(1))
    (call,) = completion.tool_calls
    assert call.error is not None and call.id == "t1_0"


async def test_a_server_refusing_the_field_says_so_in_one_sentence(fake: FakeProvider) -> None:
    fake.refuse("response_format")
    completion = await one_turn(compatible(fake), turn())
    assert completion.text is None and completion.tool_calls == ()
    assert completion.error == (
        f"{fake.openai_url} does not take response_format for structured output (HTTP 400); "
        "try --param constrained_field=json_schema, structured_outputs or guided_json, "
        "or --param tool_mode=text."
    )
    assert len(fake.generation_requests()) == 1  # retrying cannot help


async def test_a_422_naming_the_field_is_the_same_sentence(fake: FakeProvider) -> None:
    fake.refuse("guided_json", status=422)
    completion = await one_turn(compatible(fake, constrained_field="guided_json"), turn())
    assert completion.error is not None
    assert "does not take guided_json for structured output (HTTP 422)" in completion.error
    assert "constrained_field=response_format, json_schema or structured_outputs" in (
        completion.error
    )


async def test_another_400_keeps_the_servers_own_message(fake: FakeProvider) -> None:
    fake.fail_next(status=400, message="the prompt is too long for the context")
    completion = await one_turn(compatible(fake), turn())
    assert completion.error == "HTTP 400: the prompt is too long for the context"


async def test_compatible_constrained_turn_uses_its_own_output_limit(fake: FakeProvider) -> None:
    model = compatible(fake, max_tokens=256, constrained_max_tokens=1500)
    await one_turn(model, turn())
    await one_turn(model, turn(tools=()))  # a prompted request keeps the text limit
    constrained_call, plain_call = fake.generation_requests()
    assert constrained_call.body["max_tokens"] == 1500
    assert plain_call.body["max_tokens"] == 256


async def test_a_prompted_request_is_never_constrained(fake: FakeProvider) -> None:
    fake.responder = lambda _r: "Tax: 1166"
    completion = await one_turn(compatible(fake), turn(tools=()))
    (sent,) = fake.generation_requests()
    assert sent.schema_field is None and completion.tool_calls == ()
    assert completion.text == "Tax: 1166"


def test_reply_shape_differs_between_tool_modes(fake: FakeProvider) -> None:
    url = fake.openai_url
    shapes = [
        load_model(f"openai-compatible:m@{url}", overrides=options).reply_shape(TOOLS)
        for options in (
            {"tool_mode": "native"},
            {"tool_mode": "text"},
            {"tool_mode": "constrained"},
            {"tool_mode": "constrained", "constrained_field": "json_schema"},
        )
    ]
    assert shapes[0] == shapes[1] == {}
    assert shapes[2] != shapes[3] and all(s["tool_protocol"] == "constrained" for s in shapes[2:])
    # Another tool list is another schema, so another shape.
    model = load_model(f"openai-compatible:m@{url}", overrides=CONSTRAINED)
    assert model.reply_shape(TOOLS) != model.reply_shape(TOOLS[:1])
    assert model.reply_shape(()) == {}


def test_identity_holds_the_constrained_output_limit_when_set(fake: FakeProvider) -> None:
    def identity(spec: str, **options: Any) -> dict[str, Any]:
        return load_model(spec, overrides=options).identity()

    for spec in (f"openai-compatible:m@{fake.openai_url}", "openai:gpt-4.1", "anthropic:c"):
        assert (
            identity(spec, **CONSTRAINED, constrained_max_tokens=2048)["constrained_max_tokens"]
            == 2048
        )
        assert "constrained_max_tokens" not in identity(spec, **CONSTRAINED)
        # The text tool mode never uses it, so it is no part of that key.
        assert "constrained_max_tokens" not in identity(
            spec, tool_mode="text", constrained_max_tokens=2048
        )


# --- anthropic: tool_choice any, or auto with extended thinking ----------------------


async def test_anthropic_forces_one_call(fake: FakeProvider) -> None:
    model = load_model("anthropic:claude-sonnet-4-5", overrides=CONSTRAINED)
    assert constrained_turns(model) and model.native_tools
    completion = await one_turn(model, turn())
    (sent,) = fake.generation_requests()
    assert sent.body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert [t["name"] for t in sent.body["tools"]] == ["write_file", "submit"]
    (call,) = completion.tool_calls
    assert (call.name, dict(call.arguments)) == ("write_file", PROGRAM)
    assert model.reply_shape(TOOLS) == {
        "tool_protocol": "constrained",
        "tool_choice": {"type": "any", "disable_parallel_tool_use": True},
    }
    assert backend_notes(model) == ()
    # The native tool mode leaves the choice to the model, as before.
    native = load_model("anthropic:claude-sonnet-4-5", overrides=FAST)
    await one_turn(native, turn())
    sent = fake.generation_requests()[-1]
    assert "tool_choice" not in sent.body and native.reply_shape(TOOLS) == {}


async def test_anthropic_with_thinking_falls_back_to_auto_with_a_note(fake: FakeProvider) -> None:
    thinking = {"extra": {"thinking": {"type": "enabled", "budget_tokens": 2048}}}
    model = load_model("anthropic:claude-sonnet-4-5", overrides={**CONSTRAINED, **thinking})
    (note,) = backend_notes(model)
    assert "tool_choice auto" in note and "extended thinking" in note
    assert note.endswith(".") and note.count(". ") == 0  # one sentence
    await one_turn(model, turn())
    (sent,) = fake.generation_requests()
    assert sent.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert sent.body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert model.reply_shape(TOOLS)["tool_choice"] == sent.body["tool_choice"]


# --- vllm: structured outputs on the engine's sampling parameters --------------------


def test_vllm_constrained_turn_asks_for_structured_outputs() -> None:
    model = load_model(
        "vllm:Qwen/Qwen2.5-0.5B-Instruct",
        overrides={
            "tool_mode": "constrained",
            "temperature": 0.7,
            "max_tokens": 512,
            "constrained_max_tokens": 1024,
        },
    )
    assert isinstance(model, VLLMModel) and constrained_turns(model) and not model.native_tools
    sampling_kwargs = model.sampling_kwargs
    assert sampling_kwargs(1, TOOLS) == {
        "n": 1,
        "temperature": 0.7,
        "max_tokens": 1024,
        "structured_outputs": {"json": call_schema(TOOLS)},
    }
    # A prompted request (no tools) is sampled as before, with the text limit.
    assert sampling_kwargs(2) == {"n": 2, "temperature": 0.7, "max_tokens": 512}
    assert model.reply_shape(TOOLS) == {
        "tool_protocol": "constrained",
        "structured_outputs": {"json": call_schema(TOOLS)},
    }
    assert model.identity()["constrained_max_tokens"] == 1024


def test_vllm_native_protocol_asks_for_no_schema() -> None:
    model = load_model("vllm:Qwen/Qwen2.5-0.5B-Instruct", overrides={"max_tokens": 512})
    assert isinstance(model, VLLMModel) and model.native_tools and not constrained_turns(model)
    assert "structured_outputs" not in model.sampling_kwargs(1, TOOLS)
    assert model.reply_shape(TOOLS) == {}


# --- bad values: one sentence before any work ----------------------------------------


@pytest.mark.parametrize(
    "spec", ["openai:gpt-4.1", "openai-compatible:m@http://127.0.0.1:9/v1", "anthropic:c", "vllm:m"]
)
def test_every_api_backend_offers_the_constrained_protocol(spec: str) -> None:
    assert constrained_turns(load_model(spec, overrides={"tool_mode": "constrained"}))
    # A protocol there is not is one sentence naming the three there are.
    with pytest.raises(ConfigError) as caught:
        load_model(spec, overrides={"tool_mode": "forced"})
    message = str(caught.value)
    assert "constrained" in message and "'forced'" in message
    assert message.endswith(".") and message.count(". ") == 0


def test_a_bad_constrained_field_is_one_sentence() -> None:
    with pytest.raises(ConfigError) as caught:
        load_model(
            "openai-compatible:m@http://127.0.0.1:9/v1",
            overrides={"tool_mode": "constrained", "constrained_field": "grammar"},
        )
    assert str(caught.value) == (
        "constrained_field should be one of response_format, json_schema, "
        "structured_outputs, guided_json, not 'grammar'."
    )
