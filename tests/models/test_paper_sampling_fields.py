"""Where the paper protocol's sampling goes: a first attempt of direct, zero-shot or
few-shot carries upstream's fields (interactive calls and batch lines alike); retries,
the verbal variant and agentic turns keep the registry's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deonticbench.data.sources import DataSource
from deonticbench.models import load_model
from deonticbench.models.anthropic_backend import AnthropicModel
from deonticbench.models.base import Model, Request
from deonticbench.models.batch.base import BatchItem
from deonticbench.models.batch.openai_batches import OpenAIBatches
from deonticbench.models.openai_backend import OpenAIModel
from deonticbench.models.sampling import RunSampling, run_sampling
from deonticbench.prompting.paper import load_paper_texts, paper_sampling
from deonticbench.vocabulary.chat import Message
from deonticbench.vocabulary.modes import Mode

MIRROR = Path(os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data"))
pytestmark = pytest.mark.skipif(
    not (MIRROR / "scripts" / "generate_e2e.py").is_file(),
    reason="upstream's scripts are not in the data mirror",
)
MESSAGES = (Message(role="system", content="s"), Message(role="user", content="u"))


def _request(mode: Mode, attempt: int = 0, n: int = 4, rule: RunSampling | None = None) -> Request:
    config = rule.config(mode, attempt) if rule is not None else None
    return Request(MESSAGES, n, "sara_numeric", "c1", mode, 0, attempt=attempt, config=config)


def _paper(model: Model, base_url: str | None = None) -> RunSampling:
    """The run's rule as ``api.prepare`` makes it under the paper protocol."""
    texts = load_paper_texts(DataSource(kind="local", path=MIRROR))
    return run_sampling(model, paper_sampling(texts, model.model_name, base_url))


def test_openai_batch_lines_of_first_attempts_carry_upstreams_fields(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    model = load_model("openai:gpt-4.1")
    assert isinstance(model, OpenAIModel)
    registry = OpenAIBatches(model).line(BatchItem("a", _request("direct")))["body"]
    rule = _paper(model)
    batches = OpenAIBatches(model)
    first = batches.line(BatchItem("b", _request("few-shot", rule=rule)))["body"]
    assert {k: first[k] for k in first if k not in ("model", "messages")} == {
        "n": 4,
        "temperature": 0.7,
        "max_completion_tokens": 8192,
    }
    for other in (_request("few-shot", attempt=1, rule=rule), _request("direct-verbal", rule=rule)):
        assert batches.line(BatchItem("c", other))["body"] == registry | {
            "messages": first["messages"]
        }
    assert rule.identity(model)["paper_sampling"]["fields"]["temperature"] == 0.7
    assert "paper_sampling" not in model.identity()


def test_anthropic_sends_upstreams_temperature_and_the_registrys_max_tokens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "dummy")
    model = load_model("anthropic:claude-sonnet-4-5")
    assert isinstance(model, AnthropicModel)
    harness = model.request_fields(_request("direct"))
    rule = _paper(model)
    paper = model.request_fields(_request("direct", rule=rule))
    assert paper["extra_body"] == {"temperature": 0.7}
    assert paper["max_tokens"] == harness["max_tokens"] == model.params.max_tokens
    assert model.request_fields(_request("direct", attempt=1, rule=rule)) == harness
