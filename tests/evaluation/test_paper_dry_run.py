"""``eval --dry-run --protocol paper`` counts what the paper protocol then sends.

The dry run renders through the same ``Unit.render`` as the run and splits samples into
calls as the backend does (one request with ``n`` = K, or K requests with ``n`` = 1 where
upstream sends so), so its requests and prompt tokens must be those of the requests the
run then sends to a loopback server, counted with the same tokenizer.  (On the hard split
with gpt-4.1 the request count is checked by tests/evaluation/test_paper_parity.py, which
makes that run anyway.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import upstream_scripts
from fakeproviders import FakeProvider, FakeRequest
from upstream_scripts import loopback_env, run_eval

from deonticbench.models import count_prompt_tokens, load_model
from deonticbench.vocabulary.chat import Message

pytestmark = pytest.mark.skipif(
    not upstream_scripts.available(), reason="upstream's scripts are not in the data mirror"
)


def _reply(request: FakeRequest) -> str:
    return upstream_scripts.LOOPBACK_REPLY


def _sent_tokens(spec: str, sent: list[FakeRequest]) -> int:
    model = load_model(spec)
    total = 0
    for request in sent:
        messages = [Message(role=m["role"], content=m["content"]) for m in request.body["messages"]]
        total += count_prompt_tokens(model, messages)
    return total


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "compatible", "calls_per_sample"),
    [("gpt-4.1", False, False), ("deepseek-chat", True, True)],
)
def test_the_dry_run_counts_the_requests_and_tokens_then_sent(
    name: str,
    compatible: bool,
    calls_per_sample: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # deepseek-chat is in upstream's max_n_1_models: K requests with n = 1 per case
    with FakeProvider(_reply) as server:
        if compatible:
            spec, env = f"openai-compatible:{name}@{server.openai_url}", loopback_env(tmp_path)
        else:
            spec = f"openai:{name}"
            env = loopback_env(tmp_path, OPENAI_BASE_URL=server.openai_url)
        out = tmp_path / "run"
        dry = run_eval(spec, "smoke", out, env, "--protocol", "paper", "--dry-run", "--json")
        harness = run_eval(
            spec, "smoke", tmp_path / "h", env, "--protocol", "harness", "--dry-run", "--json"
        )
        assert not server.generation_requests()  # the dry runs sent nothing
        run_eval(spec, "smoke", out, env, "--protocol", "paper")
        sent = server.generation_requests()
    estimate = json.loads(dry)
    assert estimate["calls"] == len(sent)
    assert len(sent) == (estimate["samples_left"] if calls_per_sample else 75)
    assert {r.body["n"] for r in sent} == ({1} if calls_per_sample else {3, 4})
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert estimate["prompt_tokens"] == _sent_tokens(spec, sent)
    # it follows the protocol: the harness's prompts count differently
    assert json.loads(harness)["prompt_tokens"] != estimate["prompt_tokens"]
