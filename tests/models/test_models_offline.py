"""Backends that pay nothing: ``reference`` (on the real data mirror) and ``replay``."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from deonticbench.data.cases import Case, load_cases, resolve_source
from deonticbench.data.domains import DOMAINS, get_domain
from deonticbench.errors import ConfigError
from deonticbench.models import Request, load_model
from deonticbench.models.base import GenerateConfig, cacheable
from deonticbench.reading.answers import read_direct_answer
from deonticbench.vocabulary.chat import Message
from deonticbench.vocabulary.modes import Mode

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
needs_data = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)
MESSAGES = (Message("user", "solve it"),)
CASE = Case(
    domain="airline",
    id="airline_7",
    question="What is the total cost?",
    gold=250,
    reference_prolog="main :- format('Total cost: ~w~n', [250]).",
    statutes="",
)


def request(case: Case, mode: Mode, n: int = 1, start: int = 0, attempt: int = 0) -> Request:
    return Request(
        messages=MESSAGES,
        n=n,
        domain=case.domain,
        case_id=case.id,
        mode=mode,
        sample_start=start,
        attempt=attempt,
    )


@needs_data
@pytest.mark.parametrize("domain", sorted(DOMAINS))
async def test_reference_direct_answers_read_back_as_gold(domain: str) -> None:
    dom = get_domain(domain)
    cases = load_cases(dom, "hard", resolve_source(DATA))
    model = load_model("reference", cases=cases)
    for case in cases:
        (completion,) = await model.generate(request(case, "direct"))
        assert completion.text is not None
        answer = read_direct_answer(dom, completion.text)
        if dom.label_kind == "numeric":
            assert answer.value == float(case.gold), case.id
        else:
            assert answer.value == case.gold, case.id


async def test_reference_program_modes_give_the_fenced_reference_program() -> None:
    model = load_model("reference", cases=[CASE])
    assert not cacheable(model) and model.identity()["backend"] == "reference"
    completions = await model.generate(request(CASE, "few-shot", n=3))
    assert len(completions) == 3
    for completion in completions:
        assert completion.text is not None
        fenced = re.fullmatch(r"```prolog\n(.*)\n```", completion.text, re.DOTALL)
        assert fenced is not None and fenced.group(1) == CASE.reference_prolog


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    return path


async def test_replay_serves_saved_samples_and_reports_gaps(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "saved.jsonl",
        [
            {
                "domain": "airline",
                "case_id": "airline_7",
                "mode": "direct",
                "sample": 0,
                "response": "Answer: 250",
            },
            {
                "domain": "airline",
                "case_id": "airline_7",
                "mode": "direct",
                "sample": 2,
                "response": "Answer: 240",
            },
            {
                "domain": "airline",
                "case_id": "airline_7",
                "mode": "direct",
                "sample": 0,
                "attempt": 1,
                "response": "Answer: 251",
            },
        ],
    )
    model = load_model(f"replay:{path}")
    assert not cacheable(model)
    completions = await model.generate(request(CASE, "direct", n=3))
    assert [c.text for c in completions] == ["Answer: 250", None, "Answer: 240"]
    assert (
        completions[1].error == "no saved response for airline airline_7 direct sample 1 attempt 0"
    )
    (retry,) = await model.generate(request(CASE, "direct", attempt=1))
    assert retry.text == "Answer: 251"
    (other_mode,) = await model.generate(request(CASE, "zero-shot"))
    assert other_mode.text is None and other_mode.error is not None
    ident = model.identity()
    assert ident["backend"] == "replay" and len(ident["sha256"]) == 64


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"domain": "airline"\n', "line 1 is not valid JSON"),
        (
            '\n{"domain": "a", "case_id": "c", "mode": "direct", "sample": 0}\n',
            "line 2 has no string 'response'",
        ),
        (
            '{"domain": "a", "case_id": "c", "mode": "guess", "sample": 0, "response": ""}\n',
            "line 1 has mode 'guess'",
        ),
        (
            '{"domain": "a", "case_id": "c", "mode": "direct", "sample": -1, "response": ""}\n',
            "line 1 needs non-negative integer",
        ),
        ("[1, 2]\n", "line 1 is not a JSON object"),
        (
            '{"case_id": "c", "mode": "direct", "sample": 0, "response": ""}\n',
            "line 1 lacks domain",
        ),
    ],
)
def test_malformed_replay_file_is_one_sentence_naming_the_line(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        load_model(f"replay:{path}")
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_credentials_in_a_server_url_never_reach_the_recorded_spec() -> None:
    from deonticbench.models import load_model

    model = load_model("openai-compatible:m1@http://user:s3cret@127.0.0.1:8000/v1?token=t0k")
    assert model.spec == "openai-compatible:m1@http://127.0.0.1:8000/v1"
    assert "s3cret" not in str(model.identity()) and "t0k" not in str(model.identity())


def test_a_request_carries_no_gold_by_type() -> None:
    import dataclasses

    # What a model may see: messages, which sample of which case and mode, how many,
    # (agentic modes) the tools it may call, and where the prompt's shared prefix ends
    # (prompt caching: a length and a group name, nothing of the gold), and how it is
    # sampled (generation settings only).
    assert {f.name for f in dataclasses.fields(GenerateConfig)} <= {
        "temperature", "top_p", "max_tokens", "reasoning_effort", "seed", "stop",
        "n_per_call", "prompt_cache", "extra", "refetch_missing", "verbatim",
    }  # fmt: skip
    assert {f.name for f in dataclasses.fields(Request)} == {
        "config",
        "messages",
        "n",
        "domain",
        "case_id",
        "mode",
        "sample_start",
        "attempt",
        "turn",
        "tools",
        "shared_prefix",
        "cache_group",
    }
    assert not any(f.type in ("Case", Case) for f in dataclasses.fields(Request))


async def test_the_reference_backend_answers_only_cases_it_was_built_with() -> None:
    model = load_model("reference")  # no table: it knows no gold
    (completion,) = await model.generate(request(CASE, "direct"))
    assert completion.text is None
    assert completion.error == "the reference backend was not given case airline airline_7"
