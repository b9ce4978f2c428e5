"""Server faults, decided per protocol (docs/prompts.md, "Server faults"): a reply with
fewer choices than ``n``, and a 200 without choices, from a loopback server that speaks
OpenAI's wire format to the real ``openai`` client.  Under ``paper`` the missing samples
are abstentions and no call is added, as upstream's script records them; under
``harness`` the rest are fetched with ``n`` = 1 (a reply without choices is retried)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakeproviders import FakeProvider, FakeRequest, Fault

from deonticbench import RunSpec, evaluate, score
from deonticbench.data.sources import resolve_source
from deonticbench.store.record import Record

DATA = os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data")
pytestmark = pytest.mark.skipif(
    not Path(DATA, "scripts", "generate_e2e.py").is_file(),
    reason="the data mirror with upstream's scripts is not available",
)
K = 3


def _answer(request: FakeRequest) -> str:
    return "The passenger pays. Answer: 0"


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    with FakeProvider(_answer) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_url)
        yield server


def _run(tmp_path: Path, protocol: str) -> list[Record]:
    spec = RunSpec(
        model="openai:gpt-4.1",
        params=(("backoff_base_s", "0.01"), ("backoff_cap_s", "0.05")),
        domains=("airline",),
        split="smoke",
        modes=("direct",),
        k=K,
        limit=1,
        attempts=1,
        data=resolve_source(DATA),
        protocol=protocol,  # type: ignore[arg-type]
    )
    return evaluate(spec, tmp_path / protocol, cache=False).records


def _no_choices(reply: dict[str, Any]) -> dict[str, Any]:
    return {**reply, "choices": []}


def test_fewer_choices_than_n_are_abstentions_under_paper(
    fake: FakeProvider, tmp_path: Path
) -> None:
    fake.max_choices = 1
    records = _run(tmp_path, "paper")
    assert len(fake.generation_requests()) == 1  # no call added
    answered = [r for r in records if r.first.response]
    missing = [r for r in records if r.first.response == ""]
    assert len(answered) == 1 and len(missing) == K - 1
    assert all(r.first.outcome == "abstain" and r.first.error is None for r in missing)
    # Said beside the figure: the records keep the fault, score's notes name it.
    assert sorted(str(r.first.choice_fault) for r in records) == ["None", "missing", "missing"]
    assert _fault_notes(tmp_path / "paper") == [
        f"{K - 1} sample(s) (airline direct {K - 1} of {K}) are empty replies read as "
        "abstentions: the server answered fewer choices than n, and the paper protocol "
        "records the missing samples as upstream's script does "
        '(docs/prompts.md, "Server faults").'
    ]


def _fault_notes(run: Path) -> list[str]:
    """score's notes about the server's short replies, without the run folder's prefix."""
    notes = [n.split(": ", 1)[1] for n in score(run, bootstrap=20).notes]
    return [n for n in notes if "fewer choices than n" in n]


def test_fewer_choices_than_n_are_fetched_one_by_one_under_harness(
    fake: FakeProvider, tmp_path: Path
) -> None:
    fake.max_choices = 1
    records = _run(tmp_path, "harness")
    sent = fake.generation_requests()
    assert len(sent) == K and sent[0].body["n"] == K
    assert all("n" not in r.body for r in sent[1:])
    assert len(records) == K and all(r.first.response for r in records)
    # Said beside the figure: the samples the server's reply left out were drawn alone.
    faults = sorted(str(r.first.choice_fault) for r in records)
    assert faults == ["None", "drawn_alone", "drawn_alone"]
    assert _fault_notes(tmp_path / "harness") == [
        f"{K - 1} sample(s) (airline direct {K - 1} of {K}) were drawn one call each: the "
        "server answered fewer choices than n, and the harness protocol fetches the rest "
        'instead of counting them as abstentions (docs/prompts.md, "Server faults").'
    ]


def test_a_reply_without_choices_is_k_abstentions_under_paper(
    fake: FakeProvider, tmp_path: Path
) -> None:
    fake.fail_next(Fault(reshape=_no_choices))
    records = _run(tmp_path, "paper")
    assert len(fake.generation_requests()) == 1  # not retried
    assert len(records) == K
    assert all(r.first.response == "" and r.first.outcome == "abstain" for r in records)


def test_a_reply_without_choices_is_retried_under_harness(
    fake: FakeProvider, tmp_path: Path
) -> None:
    fake.fail_next(Fault(reshape=_no_choices))
    records = _run(tmp_path, "harness")
    assert len(fake.generation_requests()) == 2  # the empty reply, then its retry
    assert len(records) == K and all(r.first.response for r in records)
