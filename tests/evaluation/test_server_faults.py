"""Server faults, decided per protocol (docs/prompts.md, "Server faults"): a reply with
fewer choices than ``n``, a 200 without choices, and bodies that parse but hold no
usable text, from a loopback server that speaks OpenAI's wire format to the real
``openai`` client.  Under ``paper`` each body is read as upstream's script reads it,
never retried: the same answer per sample and the same count of requests as upstream's
own script sent the same body (run beside it); under ``harness`` the missing samples are
fetched with ``n`` = 1 and a body without text is retried.  Either way each sample a body
without text shaped names the body's fault in its record, and the run's notes count
them."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import upstream_scripts
from click.testing import CliRunner
from fakeproviders import FakeProvider, FakeRequest, Fault

from deonticbench import RunOptions, RunSpec, evaluate, score
from deonticbench.cli import cli
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


def _run(
    tmp_path: Path,
    protocol: str,
    *,
    folder: str | None = None,
    cache: Path | None = None,
    model: str = "openai:gpt-4.1",
) -> list[Record]:
    spec = RunSpec(
        model=model,
        params=(("backoff_base_s", "0.01"), ("backoff_cap_s", "0.05"), ("max_tries", "2")),
        domains=("airline",),
        split="smoke",
        modes=("direct",),
        k=K,
        case_range=1,
        attempts=1,
        data=resolve_source(DATA),
        protocol=protocol,  # type: ignore[arg-type]
    )
    out = tmp_path / (folder or protocol)
    return evaluate(spec, RunOptions(out=out, cache=cache if cache is not None else False)).records


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


# --- bodies that parse but hold no usable text ------------------------------------------


def _each_choice(change: Callable[[dict[str, Any]], None]) -> Callable[[Any], Any]:
    def reshape(reply: dict[str, Any]) -> dict[str, Any]:
        for choice in reply["choices"]:
            change(choice)
        return reply

    return reshape


def _content(value: object) -> Callable[[Any], Any]:
    return _each_choice(lambda choice: choice["message"].update(content=value))


def _choices(value: object) -> Callable[[Any], Any]:
    return lambda reply: {**reply, "choices": value}


SHAPES: dict[str, tuple[Callable[[Any], Any], str]] = {
    "choice-without-message": (_each_choice(lambda c: c.pop("message")), "no_message"),
    "message-null": (_each_choice(lambda c: c.update(message=None)), "no_message"),
    "message-string": (_each_choice(lambda c: c.update(message="Answer: 0")), "no_message"),
    "choices-string": (_choices("Answer: 0"), "choices_not_list"),
    "choices-number": (_choices(5), "choices_not_list"),
    "choices-null": (_choices(None), "no_choices"),
    "content-number": (_content(1166), "content_not_text"),
    "content-object": (_content({"text": "Answer: 0"}), "content_not_text"),
    "content-null": (_content(None), "empty_output"),
    "content-empty": (_content(""), "empty_output"),
    "content-blank": (_content(" \n"), "empty_output"),
}
"""Each body shape, and the fault its samples' records name."""

MALFORMED = "malformed response after 2 tries"
PAPER = {
    "choice-without-message": "",
    "message-null": "",
    "message-string": "",
    "choices-string": "",
    "choices-number": "",
    "choices-null": "",
    "content-number": "1166",
    "content-object": "{'text': 'Answer: 0'}",
    "content-null": "",
    "content-empty": "",
    "content-blank": " \n",
}
"""How the paper protocol decides each shape: the answer upstream's script takes from
the body (an empty answer where it finds no message, ``str()`` of content that is not
text), in one request, never retried (checked against upstream's own script below)."""
EMPTY_MESSAGES = ("content-null", "content-empty", "content-blank")
HARNESS = {shape: MALFORMED for shape in PAPER} | {shape: PAPER[shape] for shape in EMPTY_MESSAGES}
"""The harness protocol retries every body without text like a 5xx, then the request
fails; a message without text is the model's own output, an abstention."""


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("protocol", ["paper", "harness"])
def test_a_body_without_text_is_decided_per_protocol_and_names_its_fault(
    fake: FakeProvider, tmp_path: Path, protocol: str, shape: str
) -> None:
    reshape, fault = SHAPES[shape]
    fake.fail_next(Fault(reshape=reshape), times=10)
    records = _run(tmp_path, protocol)
    assert len(records) == K
    decided = (PAPER if protocol == "paper" else HARNESS)[shape]
    # The paper protocol sends one request, as upstream's script does; the harness's
    # retries each malformed body (max_tries 2).
    sent = 2 if decided == MALFORMED else 1
    assert len(fake.generation_requests()) == sent
    for record in records:
        first = record.first
        if decided == MALFORMED:
            assert first.response is None and (first.error or "").startswith(MALFORMED)
        else:
            assert (first.response, first.error) == (decided, None)
        if not decided.strip():
            assert first.outcome == "abstain"
        assert first.choice_fault == fault
    # Said beside the figure: one note counts the samples by domain and mode.
    notes = [n.split(": ", 1)[1] for n in score(tmp_path / protocol, bootstrap=20).notes]
    (note,) = [n for n in notes if '"Server faults"' in n]
    assert note.startswith(f"{K} sample(s) (airline direct {K} of {K}) came ")
    assert "upstream's script records such a sample as" in note
    if decided == MALFORMED:
        assert "the reply stayed so on every try, so the request failed" in note
    elif fault == "content_not_text":
        assert "read as str() of the content, as upstream's script reads it" in note
    else:
        assert "read as replies without text, so abstentions" in note


def test_a_body_without_text_is_counted_in_evals_summary_and_results_json(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """The real command: eval's end-of-run summary, results.json and the report say how
    many samples a body without text shaped, where."""
    fake.fail_next(Fault(reshape=SHAPES["content-null"][0]), times=10)
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, [
        "eval", "--model", "openai:gpt-4.1", "--domains", "airline", "--split", "smoke",
        "--modes", "direct", "-k", str(K), "--limit", "1", "--attempts", "1",
        "--data-dir", DATA, "--out", str(out), "--no-cache", "--score",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    said = f"{K} sample(s) (airline direct {K} of {K}) came without text"
    assert said in " ".join(result.output.split())
    notes = json.loads((out / "results.json").read_text())["notes"]
    assert any(said in note for note in notes)
    assert said in (out / "report.html").read_text()


def test_a_body_without_text_keeps_its_fault_when_read_back_from_the_cache(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """A run that answers from the response cache, the server well again, names the
    fault of each reply it reads back, as the run that drew them did."""
    cache = tmp_path / "responses.sqlite"
    fake.fail_next(Fault(reshape=SHAPES["choice-without-message"][0]))
    drawn = _run(tmp_path, "paper", folder="drawn", cache=cache)
    again = _run(tmp_path, "paper", folder="again", cache=cache)
    assert len(fake.generation_requests()) == 1  # the second run sent nothing
    for records in (drawn, again):
        assert [(r.first.response, r.first.choice_fault) for r in records] == [
            ("", "no_message")
        ] * K
    assert all(r.first.cached for r in again)


# --- the paper protocol beside upstream's own script, body for body ---------------------


def _usage(usage: object) -> Callable[[Any], Any]:
    return lambda reply: {**reply, "usage": usage}


def _without(field: str) -> Callable[[Any], Any]:
    return lambda reply: {k: v for k, v in reply.items() if k != field}


MORE_SHAPES: dict[str, tuple[Callable[[Any], Any], str | None]] = {
    "choices-of-strings": (_choices(["Answer: 0"] * K), "no_message"),
    "message-number": (_each_choice(lambda c: c.update(message=7)), "no_message"),
    "choices-short-string": (_choices("ab"), "choices_not_list"),
    "choices-object": (_choices({"text": "Answer: 0"}), "choices_not_list"),
    "choices-true": (_choices(True), "choices_not_list"),
    "choices-empty": (_choices([]), "no_choices"),
    "choices-absent": (_without("choices"), "no_choices"),
    "body-list": (lambda reply: [reply], "no_choices"),
    "content-parts": (_content([{"type": "text", "text": "Answer: 0"}]), "content_not_text"),
    "content-true": (_content(True), "content_not_text"),
    "usage-without-counts": (_usage({}), None),
    "usage-count-null": (_usage({"prompt_tokens": 10, "completion_tokens": None}), None),
}  # fmt: skip
"""More bodies for the comparison with upstream's script: its ``getattr`` and ``str()``
reading, the choices it stops a case at, and usage counts it cannot add (a body with
text, whose fault is None)."""
EVERY_SHAPE = {**SHAPES, **MORE_SHAPES}
ONE_PER_CALL = "deepseek-chat"
"""A model of upstream's ``max_n_1_models``: its script draws K calls of ``n`` = 1, one
after another, and stops a case at a body it cannot read to the end."""
ENDS_CASE = ("choices-number", "choices-true", "usage-without-counts", "usage-count-null")
COMPARED = [("gpt-4.1", shape) for shape in EVERY_SHAPE] + [
    (ONE_PER_CALL, shape)
    for shape in (*ENDS_CASE, "choices-string", "choice-without-message", "content-number")
]
"""(upstream's model name, body shape): each run by upstream's script and by ours."""


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Any]:
    """(model, shape) -> (upstream's answers for the smoke split's first airline case,
    the requests its loopback server received): upstream's generate_e2e.py as released,
    one run per body shape against a server of its own that sends that body every time."""
    root = tmp_path_factory.mktemp("upstream")
    cases = root / "cases.json"
    first = json.loads(upstream_scripts.cases_path("airline", "smoke").read_text())[:1]
    cases.write_text(json.dumps(first))
    with contextlib.ExitStack() as stack:
        servers = {}
        for model, shape in COMPARED:
            server = stack.enter_context(FakeProvider(_answer))
            server.fail_next(Fault(reshape=EVERY_SHAPE[shape][0]), times=100)
            servers[model, shape] = server
        runs = [
            upstream_scripts.generate_args(
                dataset="airline",
                task="direct",
                split="smoke",
                model=model,
                base_url=servers[model, shape].openai_url,
                k=K,
                output=root / model / shape,
                cases=cases,
            )
            for model, shape in COMPARED
        ]
        upstream_scripts.run_generate_in_turn(runs)
        sent = {key: len(server.generation_requests()) for key, server in servers.items()}
    out = {}
    for model, shape in COMPARED:
        written = root / model / shape / upstream_scripts.OUTPUTS["direct"]
        (case,) = json.loads(written.read_text())
        out[model, shape] = (case["answers"], sent[model, shape])
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("model", "shape"), COMPARED)
def test_the_paper_protocol_decides_each_body_as_upstreams_script_does(
    fake: FakeProvider,
    tmp_path: Path,
    upstream: dict[tuple[str, str], Any],
    model: str,
    shape: str,
) -> None:
    """The same body from the loopback server, every time: each sample's answer is the
    one upstream's own script wrote for it, the server received as many requests from
    us as from upstream's script (none retried; after a body that ends upstream's case,
    no more calls of a one-sample-per-call model), and each record names the fault."""
    reshape, fault = EVERY_SHAPE[shape]
    fake.fail_next(Fault(reshape=reshape), times=100)
    records = sorted(_run(tmp_path, "paper", model=f"openai:{model}"), key=lambda r: r.sample)
    answers, sent = upstream[model, shape]
    assert [r.first.response for r in records] == answers
    assert len(fake.generation_requests()) == sent
    assert all(r.first.error is None for r in records)
    marks = [fault] * K
    if model == ONE_PER_CALL and shape in ENDS_CASE:
        marks = [fault] + ["not_sent"] * (K - 1)
    assert [r.first.choice_fault for r in records] == marks
