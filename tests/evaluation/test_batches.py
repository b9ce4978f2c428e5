"""``eval --batch`` against loopback fakes of OpenAI's and Anthropic's batch APIs, through
the real ``openai`` and ``anthropic`` clients: a run killed with SIGKILL while its batches
are in progress, or between an intent record and the batch id, is started again and
pays for every sample exactly once; failed, expired and rejected items never leave a
silent gap.  The published price table (``cost_runs.PUBLISHED``) is the test vector."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cost_runs import price_bill
from fake_batches import FakeBatches

from deonticbench.api import arun, prepare
from deonticbench.data.cases import Case, load_cases, resolve_source
from deonticbench.data.domains import DOMAINS
from deonticbench.evaluation.run_options import RunOptions
from deonticbench.store.batches import BATCHES_NAME, BatchLog
from deonticbench.store.records_file import RECORDS_NAME, read_records
from deonticbench.store.spec import RunSpec

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)

# Priced at cost_runs.PUBLISHED (the published prices, cache rates included); batches
# take half of every figure.
MODELS = ["openai:gpt-4.1", "anthropic:claude-sonnet-4-5"]


def pool() -> list[Case]:
    return load_cases("airline", "smoke", resolve_source(DATA))


PLANNED = len(pool()) * DOMAINS["airline"].default_k if Path(DATA, "data").is_dir() else 0
"""Samples of the runs below: the smoke cases of airline, K each, in the direct mode."""


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(b.get("text") or "") for b in content if isinstance(b, dict))
    return str(content or "")


def gold_responder(cases: list[Case]) -> Any:
    """Answers each prompt with its case's gold label: every sample is right."""

    def respond(body: dict[str, Any], choice: int) -> str:
        text = " ".join(_text(m.get("content")) for m in body.get("messages") or [])
        (case,) = [c for c in cases if c.text.strip()[:200] in text]
        return f"Answer: {case.gold}"

    return respond


@pytest.fixture
def fake() -> Iterator[FakeBatches]:
    with FakeBatches(gold_responder(pool()), delay_s=0.2) as server:
        yield server


def env(tmp_path: Path, fake: FakeBatches) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if "API_KEY" not in k and "BASE_URL" not in k}
    out.update(
        DEONTICBENCH_DATA=DATA,
        DEONTICBENCH_CACHE=str(tmp_path / "cache"),
        OPENAI_BASE_URL=fake.openai_url,
        ANTHROPIC_BASE_URL=fake.url,
        OPENAI_API_KEY="test-key",
        ANTHROPIC_API_KEY="test-key",
    )
    return out


def eval_args(model: str, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "deonticbench", "eval", "--batch", "--model", model,
        "--domains", "airline", "--split", "smoke", "--modes", "direct", "--out", str(out),
        "--param", "batch_poll_s=0.1", "--param", "batch_max_requests=2", *extra,
    ]  # fmt: skip


def wait_until(condition: Any, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if condition():
            return
        assert proc.poll() is None, f"the run ended before {what}"
        time.sleep(0.02)
    raise AssertionError(f"never saw {what}")


def submitted(out: Path) -> int:
    path = out / BATCHES_NAME
    return path.read_bytes().count(b'"event":"submitted"') if path.exists() else 0


def settled(out: Path, fake: FakeBatches, at_least: int) -> bool:
    """At least ``at_least`` batches submitted, and no create in flight: every intent of
    the run has its batch id, and the fake holds no batch the run has not recorded."""
    path = out / BATCHES_NAME
    if not path.exists():
        return False
    journal = path.read_bytes()
    done = journal.count(b'"event":"submitted"')
    intents = journal.count(b'"event":"intent"')
    return done >= at_least and intents == done == len(fake.batches)


def check_paid_once(fake: FakeBatches, out: Path, model: str, planned: int) -> None:
    """Every sample recorded once, right, from a batch; every item billed once; no item
    in two batches; results.json's usd is the fake's bill at the batch price."""
    records = read_records(out / RECORDS_NAME).records
    assert len(records) == planned
    assert all(r.final.error is None and r.final.outcome == "correct" for r in records.values())
    assert all(a.batch and not a.cached for r in records.values() for a in r.attempts)
    billed = [b.custom_id for b in fake.bill]
    assert len(billed) == len(set(billed)), "an item was processed (and billed) twice"
    sent = [c for batch in fake.batches for c in batch.custom_ids]
    assert len(sent) == len(set(sent)), "an item was submitted twice"
    bill = price_bill([b.billed for b in fake.bill], model)
    cost = json.loads((out / "results.json").read_text())["estimated_cost"]
    assert cost["usd"] == pytest.approx(bill.usd, rel=0.01)
    assert cost["batch_discount"] == pytest.approx(bill.usd, rel=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("ended_meanwhile", [False, True], ids=["running", "ended"])
@pytest.mark.parametrize("model", MODELS)
def test_a_batch_run_killed_while_batches_run_collects_them_and_pays_each_sample_once(
    fake: FakeBatches, model: str, ended_meanwhile: bool, tmp_path: Path
) -> None:
    """Started again while its batches still run (they are polled) or after they ended
    (their responses are read into the cache first, and still count as paid)."""
    fake.delay_s = 2.0
    out = tmp_path / "run"
    args = eval_args(model, out)
    proc = subprocess.Popen(args, env=env(tmp_path, fake), cwd=tmp_path, stderr=subprocess.PIPE)
    wait_until(lambda: submitted(out) >= 2 and fake.in_progress() >= 2, proc, "two batches")
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    before = {b.id for b in fake.batches}
    assert fake.in_progress() >= 1, "the kill must come while batches are in progress"

    if ended_meanwhile:
        fake.delay_s = 0.0
        assert fake.in_progress() == 0
    else:
        # Still running when the new process sends its first round: it must wait for
        # them, not send their requests again.
        fake.delay_s = 5.0
    done = subprocess.run(
        args, env=env(tmp_path, fake), cwd=tmp_path, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    # The batches of the first process were polled and read, not sent again.
    log = BatchLog(out)
    assert before <= {c.batch_id for c in log.chunks.values()}
    check_paid_once(fake, out, model, PLANNED)


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_an_intent_without_a_batch_id_is_adopted_not_sent_again(
    fake: FakeBatches, model: str, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    args = eval_args(model, out)
    fake.hold_creates.clear()  # the first create arrives, and is answered only later
    proc = subprocess.Popen(args, env=env(tmp_path, fake), cwd=tmp_path, stderr=subprocess.PIPE)
    wait_until(lambda: fake.creates >= 1, proc, "a create request")
    proc.send_signal(signal.SIGKILL)  # after the intent record, before the batch id
    proc.wait(30)
    fake.hold_creates.set()
    deadline = time.monotonic() + 10
    while not fake.batches and time.monotonic() < deadline:
        time.sleep(0.02)
    (orphan,) = fake.batches
    (intent,) = BatchLog(out).chunks.values()
    assert intent.batch_id is None and set(intent.custom_ids) == set(orphan.custom_ids)

    done = subprocess.run(
        args, env=env(tmp_path, fake), cwd=tmp_path, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    assert f"adopted batch {orphan.id}" in done.stderr.decode()
    assert BatchLog(out).chunks[intent.name].batch_id == orphan.id
    check_paid_once(fake, out, model, PLANNED)


@pytest.fixture
def provider_env(fake: FakeBatches, monkeypatch: pytest.MonkeyPatch) -> FakeBatches:
    monkeypatch.setenv("OPENAI_BASE_URL", fake.openai_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    return fake


def run(model: str, out: Path, fake: FakeBatches, tmp_path: Path) -> list[str]:
    async def go() -> list[str]:
        notes: list[str] = []

        class Notes:
            def started(self, totals: Any, done: Any) -> None: ...
            def recorded(self, record: Any) -> None: ...
            def opened(self, run: Any) -> None: ...
            def note(self, text: str) -> None:
                notes.append(text)

        spec = RunSpec(
            model=model,
            domains=("airline",),
            split="smoke",
            modes=("direct",),
            params=(("batch_poll_s", "0.05"), ("batch_max_requests", "2")),
            data=resolve_source(DATA),
        )
        options = RunOptions(out=out, cache=tmp_path / "cache.sqlite", batch=True, observer=Notes())
        await arun(prepare(spec, options))
        return notes

    return asyncio.run(go())


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_expired_and_failed_items_go_again_in_the_next_round(
    provider_env: FakeBatches, model: str, tmp_path: Path
) -> None:
    fake = provider_env
    # Each item's first try fails: every third one expires, the others come back with a
    # server error (OpenAI: error null and status_code 500, which is not a success).
    order: list[str] = []

    def fault(custom_id: str, tries: int) -> str | None:
        if custom_id not in order:
            order.append(custom_id)
        if tries > 0 or order.index(custom_id) % 2:
            return None
        return "expired" if order.index(custom_id) % 4 == 0 else "http_500"

    fake.set_item_fault(fault)
    out = tmp_path / "run"
    run(model, out, fake, tmp_path)
    records = read_records(out / RECORDS_NAME).records
    assert len(records) == PLANNED
    # Retried at the same attempt: the first attempt (attempt 0) is no error.
    assert all(len(r.attempts) == 1 and r.first.error is None for r in records.values())
    assert all(r.first.outcome == "correct" for r in records.values())
    retried = {c for c in order if order.index(c) % 2 == 0}
    rounds = [set(b.custom_ids) for b in fake.batches]
    assert retried and all(sum(c in r for r in rounds) == 2 for c in retried)
    check_paid_once_after_retries(fake, out, model)


def check_paid_once_after_retries(fake: FakeBatches, out: Path, model: str) -> None:
    billed = [b.custom_id for b in fake.bill]
    assert len(billed) == len(set(billed))
    bill = price_bill([b.billed for b in fake.bill], model)
    cost = json.loads((out / "results.json").read_text())["estimated_cost"]
    assert cost["usd"] == pytest.approx(bill.usd, rel=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_a_batch_rejected_whole_is_one_sentence_per_cause_and_no_silent_gap(
    provider_env: FakeBatches, model: str, tmp_path: Path
) -> None:
    fake = provider_env
    causes = ("line 2 is not valid JSON", "the model fake-model does not exist")
    fake.reject_next(*causes)
    out = tmp_path / "run"
    notes = run(model, out, fake, tmp_path)
    records = read_records(out / RECORDS_NAME).records
    assert len(records) == PLANNED
    failed_first = [r for r in records.values() if r.first.error is not None]
    assert failed_first, "the rejected batch's samples say why"
    for record in failed_first:
        assert causes[0] in (record.first.error or "")
        # The runner's rule for a failed request: the same prompt again, which succeeds.
        assert record.final.error is None
    said = "\n".join(notes)
    if model.startswith("openai"):
        # OpenAI lists each cause: one sentence each.
        assert all(sum(cause in n for n in notes) == 1 for cause in causes), said
    else:
        assert any(causes[0] in n for n in notes), said


@pytest.mark.slow
def test_a_backend_without_a_batch_api_is_one_sentence(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "eval", "--batch", "--model", "reference",
         "--domains", "airline", "--split", "smoke", "--out", str(tmp_path / "run")],
        env={**os.environ, "DEONTICBENCH_DATA": DATA, "DEONTICBENCH_CACHE": str(tmp_path)},
        capture_output=True,
    )  # fmt: skip
    assert done.returncode == 2
    err = done.stderr.decode()
    assert "reference has none" in err and err.count("\n") == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS)
def test_ctrl_c_leaves_the_batches_running_and_deonticbench_batches_lists_and_cancels_them(
    fake: FakeBatches, model: str, tmp_path: Path
) -> None:
    fake.delay_s = 60.0
    out = tmp_path / "run"
    proc = subprocess.Popen(
        eval_args(model, out), env=env(tmp_path, fake), cwd=tmp_path, stderr=subprocess.PIPE
    )
    # Stopped between creates: a stop during one (adopted or left to the next run) is
    # the kill test's; here every batch running at the provider must be listed by id.
    wait_until(lambda: settled(out, fake, 2), proc, "two batches, none being created")
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    said = " ".join(err.decode().split())
    assert "still running at the provider" in said
    assert f"deonticbench batches {out} --cancel" in said
    running = [b for b in fake.batches if not b.ended]
    assert len(running) >= 2, "stopping must not cancel the batches"

    batches = [sys.executable, "-m", "deonticbench", "batches", str(out)]
    listed = subprocess.run(batches, env=env(tmp_path, fake), capture_output=True, timeout=60)
    assert listed.returncode == 0, listed.stderr.decode()
    rows = listed.stdout.decode().splitlines()[1:]
    for batch in running:
        (row,) = [r for r in rows if batch.id in r]
        assert "in_progress" in row

    cancel = [*batches, "--cancel"]
    done = subprocess.run(cancel, env=env(tmp_path, fake), capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert f"cancelled {len(running)} batches" in done.stdout.decode()
    assert all(b.cancelled for b in running)
