"""``deonticbench eval`` as a user runs it: a real subprocess, real signals, the real
openai client against the loopback server, real run folders."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from fakeproviders import FakeProvider, FakeRequest

from deonticbench.data.cases import Case, load_cases, resolve_source
from deonticbench.store.records_file import RECORDS_NAME, read_records

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)


def cases() -> list[Case]:
    return load_cases("airline", "smoke", resolve_source(DATA))


def case_of(request: FakeRequest, pool: Sequence[Case]) -> Case:
    first_user = next(m["content"] for m in request.messages if m["role"] == "user")
    (case,) = [c for c in pool if c.text.strip()[:200] in first_user]
    return case


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    pool = cases()
    with FakeProvider(lambda r: f"Answer: {case_of(r, pool).gold}") as server:
        yield server


def env(tmp_path: Path) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    out["DEONTICBENCH_DATA"] = DATA
    out["DEONTICBENCH_CACHE"] = str(tmp_path / "cache")
    return out


def argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "deonticbench", "eval", *args]


def eval_in(
    tmp_path: Path, args: Sequence[str], timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """Run the eval command as a user would, in ``tmp_path``, with no API key around."""
    return subprocess.run(
        list(args), env=env(tmp_path), cwd=tmp_path, capture_output=True, timeout=timeout
    )


def fake_args(fake: FakeProvider, out: Path, *extra: str) -> list[str]:
    return argv(
        "--model", f"openai-compatible:fake@{fake.openai_url}", "--domains", "airline",
        "--split", "smoke", "--modes", "direct", "--out", str(out), *extra,
    )  # fmt: skip


def wait_for_lines(path: Path, count: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= count:
            return
        assert proc.poll() is None, "the run ended before it could be stopped"
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {count} lines")


@pytest.mark.slow
def test_a_run_killed_with_sigkill_resumes_without_repeating_finished_samples(
    fake: FakeProvider, tmp_path: Path
) -> None:
    pool = cases()
    fake.latency_s = 0.4
    out = tmp_path / "run"
    # --no-cache: what saves the requests here must be the run folder, not the cache.
    args = fake_args(fake, out, "-k", "2", "--concurrency", "1", "--no-cache")
    proc = subprocess.Popen(args, env=env(tmp_path), cwd=tmp_path, stderr=subprocess.DEVNULL)
    wait_for_lines(out / RECORDS_NAME, 4, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    before = read_records(out / RECORDS_NAME).records
    first_requests = len(fake.generation_requests())
    assert 4 <= len(before) < 2 * len(pool)

    fake.latency_s = 0.0
    done = eval_in(tmp_path, args)
    assert done.returncode == 0, done.stderr.decode()

    lines = (out / RECORDS_NAME).read_text().splitlines()
    keys = [(o["case_id"], o["sample"]) for o in map(json.loads, lines)]
    assert len(keys) == len(set(keys)) == 2 * len(pool), "exactly one record per sample"
    # Each request after the restart is for a case with unfinished samples, and asks for
    # exactly those samples.
    unfinished = {
        c.id: [s for s in (0, 1) if ("airline", c.id, "direct", s) not in before] for c in pool
    }
    asked: dict[str, int] = {}
    for request in fake.generation_requests()[first_requests:]:
        case = case_of(request, pool)
        asked[case.id] = asked.get(case.id, 0) + int(request.body.get("n") or 1)
    assert asked == {cid: len(s) for cid, s in unfinished.items() if s}


@pytest.mark.slow
def test_sigterm_stops_cleanly_and_keeps_finished_records(
    fake: FakeProvider, tmp_path: Path
) -> None:
    fake.latency_s = 0.4
    out = tmp_path / "run"
    args = fake_args(fake, out, "-k", "1", "--concurrency", "1")
    proc = subprocess.Popen(
        args, env=env(tmp_path), cwd=tmp_path, stderr=subprocess.PIPE, stdout=subprocess.PIPE
    )
    wait_for_lines(out / RECORDS_NAME, 2, proc)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr.decode()
    assert b"interrupted" in stderr and b"resume" in stderr
    assert b"Traceback" not in stderr
    loaded = read_records(out / RECORDS_NAME)
    assert not loaded.truncated and len(loaded.records) >= 2
    assert b"airline" in stdout  # the summary of what was finished


def test_dry_run_counts_requests_and_tokens_and_sends_nothing(
    fake: FakeProvider, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    done = eval_in(tmp_path, fake_args(fake, out, "-k", "3", "--dry-run"))
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode()
    # Five cases, K=3 drawn with one call each (the server takes n).
    assert "total: 5 calls" in text and "prompt tokens" in text and "nothing was sent" in text
    assert fake.log == []
    assert not out.exists()


@pytest.mark.slow
def test_dry_run_names_the_folder_the_run_will_use_and_groups_thousands(
    tmp_path: Path,
) -> None:
    # Without --out a run names its folder by its own start time: the dry run must not
    # print a folder named by its own clock, which the real run never uses.
    args = ("--model", "reference", "--split", "hard", "--modes", "all", "--dry-run")
    dry = eval_in(tmp_path, argv(*args))
    assert dry.returncode == 0, dry.stderr.decode()
    first = dry.stdout.decode().splitlines()[0]
    assert first.endswith("-> runs/reference-hard-<UTC start time, %Y%m%dT%H%M%SZ>"), first
    total = next(line for line in dry.stdout.decode().splitlines() if line.startswith("total:"))
    # 251 hard cases x 3 modes x the registry's K: over a thousand samples, so grouped.
    samples = total.split(" samples")[0].split()[-1]
    assert "," in samples and int(samples.replace(",", "")) >= 1000, total
    # Once a run exists, the same command resumes it, and the dry run says which.
    run = eval_in(tmp_path, argv("--model", "reference", "--split", "smoke", "--modes", "direct"))
    assert run.returncode == 0, run.stderr.decode()
    again = eval_in(
        tmp_path, argv("--model", "reference", "--split", "smoke", "--modes", "direct", "--dry-run")
    )
    folder = next((tmp_path / "runs").iterdir())
    assert again.stdout.decode().splitlines()[0].endswith(f"-> runs/{folder.name} (resumed)")


@pytest.mark.slow
def test_all_domains_and_modes_are_accepted(tmp_path: Path) -> None:
    done = eval_in(
        tmp_path, argv("--model", "reference", "--domains", "all", "--split", "smoke", "--dry-run")
    )
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode()
    for name in ("sara_numeric", "sara_binary", "airline", "housing", "uscis"):
        for mode in ("direct", "zero-shot", "few-shot"):
            assert any(line.split()[:2] == [name, mode] for line in text.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (("--model", "nosuch:thing"), "unknown model spec"),
        (("--model", "openai-compatible:m@http://127.0.0.1:9"), "cannot reach"),
        (("--model", "reference", "--modes", "sideways"), "unknown mode"),
        (("--model", "reference", "--domains", "tax"), "unknown domain"),
        (("--model", "reference", "-k", "0"), "-k must be at least 1"),
    ],
)
def test_bad_input_is_one_sentence_before_any_work(
    tmp_path: Path, args: tuple[str, ...], phrase: str
) -> None:
    done = eval_in(
        tmp_path,
        argv(*args, "--split", "smoke", "--domains", "airline", "--limit", "1")
        if "--domains" not in args
        else argv(*args, "--split", "smoke"),
    )
    err = done.stderr.decode().strip()
    assert done.returncode == 2
    assert err.startswith("error:") and phrase in err and len(err.splitlines()) == 1
    assert not (tmp_path / "runs").exists(), "no run folder for a run that never started"


@pytest.mark.slow
def test_resuming_with_another_configuration_is_refused(fake: FakeProvider, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = eval_in(tmp_path, fake_args(fake, out, "-k", "1", "--limit", "1"))
    assert first.returncode == 0, first.stderr.decode()
    again = eval_in(tmp_path, fake_args(fake, out, "-k", "2", "--limit", "1"))
    err = again.stderr.decode().strip()
    assert again.returncode == 2 and "another configuration" in err and "K for airline" in err
    assert len((out / RECORDS_NAME).read_text().splitlines()) == 1
    # A dry run says the same before estimating anything.
    dry = eval_in(tmp_path, fake_args(fake, out, "-k", "2", "--dry-run"))
    assert dry.returncode == 2 and "K for airline" in dry.stderr.decode()


@pytest.mark.slow
def test_the_same_command_without_out_resumes_the_latest_run(
    fake: FakeProvider, tmp_path: Path
) -> None:
    args = argv(
        "--model", f"openai-compatible:fake@{fake.openai_url}", "--domains", "airline",
        "--split", "smoke", "--modes", "direct", "-k", "1", "--no-cache",
    )  # fmt: skip
    first = eval_in(tmp_path, [*args, "--limit", "2"])
    assert first.returncode == 0, first.stderr.decode()
    second = eval_in(tmp_path, args)
    assert second.returncode == 0, second.stderr.decode()
    (folder,) = (tmp_path / "runs").iterdir()
    assert folder.name.startswith("openai-compatible-fake-smoke-")
    assert len((folder / RECORDS_NAME).read_text().splitlines()) == 5
    assert len(fake.generation_requests()) == 5


@pytest.mark.slow
def test_a_runs_own_records_can_be_replayed(tmp_path: Path) -> None:
    common = ["--domains", "airline,uscis", "--split", "smoke", "--modes", "zero-shot", "-k", "1"]
    first = tmp_path / "first"
    done = eval_in(
        tmp_path, argv("--model", "reference", *common, "--out", str(first)), timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()
    again = tmp_path / "again"
    done = eval_in(
        tmp_path,
        argv("--model", f"replay:{first / 'records.jsonl'}", *common, "--out", str(again)),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()

    def outcomes(folder: Path) -> dict[tuple[str, str], tuple[str, int]]:
        out = {}
        for line in (folder / "records.jsonl").read_text().splitlines():
            record = json.loads(line)
            out[(record["domain"], record["case_id"])] = (record["outcome"], record["n_attempts"])
        return out

    assert outcomes(again) == outcomes(first)
    # The replay offers as many attempts as the file holds responses for.
    first_config = json.loads((first / "config.json").read_text())
    replay_config = json.loads((again / "config.json").read_text())
    assert first_config["attempts"] == 2
    assert replay_config["attempts"] == max(n for _, n in outcomes(first).values())


def test_conflicting_data_flags_are_one_sentence(tmp_path: Path) -> None:
    for extra, words in (
        (("--revision", "abc"), "use it with --hub"),
        (("--hub", "--data-dir", str(tmp_path)), "choose one"),
    ):
        done = eval_in(tmp_path, argv("--model", "reference", "--split", "smoke", *extra))
        assert done.returncode == 2
        assert words in done.stderr.decode() and b"Traceback" not in done.stderr


def test_a_failed_start_leaves_no_run_folder(tmp_path: Path) -> None:
    bad_cache = tmp_path / "not-a-db"
    bad_cache.write_text("this is not sqlite\n" * 100)
    out = tmp_path / "never"
    done = eval_in(
        tmp_path,
        argv(
            "--model",
            "reference",
            "--split",
            "smoke",
            "--domains",
            "airline",
            "--cache",
            str(bad_cache),
            "--out",
            str(out),
        ),
    )
    assert done.returncode == 2, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    assert not out.exists()


@pytest.mark.slow
def test_score_flag_ends_with_the_table2_layout(tmp_path: Path) -> None:
    done = eval_in(
        tmp_path,
        argv(
            "--model",
            "reference",
            "--split",
            "smoke",
            "--domains",
            "airline",
            "--modes",
            "zero-shot",
            "-k",
            "1",
            "--out",
            str(tmp_path / "run"),
            "--score",
        ),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    text = done.stdout.decode()
    assert "SARA Num." in text and "Airline" in text
    assert "100.0 +0.0 -0.0" in text


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["direct", "zero-shot"])
def test_a_reply_with_a_lone_surrogate_never_stops_a_run(tmp_path: Path, mode: str) -> None:
    """A lone surrogate: "\\ud800" is valid JSON; the run, its cache, a retry with feedback
    and a resume all survive it, and records.jsonl keeps the response as it came."""
    pool = cases()
    program = (
        '```prolog\n% note \ud800\nodd("\ud800").\n'
        ':- initialization((format("Total cost: ~w~n", [GOLD]), halt)).\n```'
    )

    def reply(request: FakeRequest) -> str:
        gold = case_of(request, pool).gold
        if mode == "direct":
            return f"Answer: {gold} \ud800"
        if any(m["role"] == "assistant" for m in request.messages):  # the feedback turn
            return program.replace("GOLD", str(gold))
        # The first program prints nothing: the retry's feedback quotes it.
        return program.replace('format("Total cost: ~w~n", [GOLD]), ', "")

    with FakeProvider(reply) as fake:
        out = tmp_path / "run"
        args = argv(
            "--model", f"openai-compatible:fake@{fake.openai_url}", "--domains", "airline",
            "--split", "smoke", "--modes", mode, "--out", str(out), "-k", "1",
        )  # fmt: skip
        first = eval_in(tmp_path, args)
        assert first.returncode == 0, first.stderr.decode()
        again = eval_in(tmp_path, args)  # resume: reads every line back
        assert again.returncode == 0, again.stderr.decode()
        assert b"0 new records" in again.stdout + again.stderr
    raw = (out / RECORDS_NAME).read_bytes()
    raw.decode("utf-8")
    records = read_records(out / RECORDS_NAME).records
    assert len(records) == len(pool)
    for record in records.values():
        assert "\ud800" in (record.first.response or "")
        assert record.final.outcome == "correct", record.final
        if mode == "zero-shot":
            assert len(record.attempts) == 2  # the feedback turn carried the surrogate too
            assert "\ufffd" in (record.final.program or "")


@pytest.mark.slow
def test_concurrency_bounds_http_requests_when_n_is_emulated(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """A server that ignores n gets K single calls per request; the
    --concurrency limit still counts HTTP requests in flight.  Fetching the rest is the
    harness protocol's rule; the paper protocol's first attempts leave them as upstream
    does (docs/prompts.md, "Server faults"; tests/evaluation/test_server_faults.py)."""
    fake.max_choices = 1
    fake.latency_s = 0.1
    args = fake_args(
        fake, tmp_path / "run", "-k", "4", "--concurrency", "2", "--no-cache",
        "--protocol", "harness",
    )  # fmt: skip
    done = eval_in(tmp_path, args)
    assert done.returncode == 0, done.stderr.decode()
    assert len(fake.generation_requests()) >= 4 * len(cases())
    assert fake.max_in_flight == 2
    # A model's run gets no data-audit note: that note is about the reference answers.
    assert "data-audit" not in done.stdout.decode()


@pytest.mark.slow
def test_a_reply_that_stays_malformed_is_an_error_record_not_a_crash(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """Under the harness protocol, choices as a string every time: retried, then error
    records; nothing of it reaches the response cache.  (The paper protocol decides such a
    body as upstream's script does: tests/evaluation/test_server_faults.py.)"""
    from fakeproviders import Fault

    def as_string(reply: dict[str, object]) -> dict[str, object]:
        reply["choices"] = "Answer: 5"
        return reply

    fake.fail_next(Fault(reshape=as_string), times=10_000)
    args = fake_args(
        fake,
        tmp_path / "run",
        *("-k", "1", "--protocol", "harness"),
        *("--param", "max_tries=2", "--param", "backoff_base_s=0"),
    )
    done = eval_in(tmp_path, args)
    assert done.returncode == 0, done.stderr.decode()
    records = read_records(tmp_path / "run" / RECORDS_NAME).records
    assert len(records) == len(cases())
    for record in records.values():
        assert (record.final.error or "").startswith("malformed response after 2 tries")
    import sqlite3

    with sqlite3.connect(tmp_path / "cache" / "responses.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM responses").fetchone() == (0,)


@pytest.mark.slow
def test_deonticbench_cache_is_one_folder_and_cache_names_a_file(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """DEONTICBENCH_CACHE is a folder holding responses.sqlite (and
    the statute and hub pins); --cache still names the sqlite file itself."""
    done = eval_in(tmp_path, fake_args(fake, tmp_path / "run", "-k", "1"))
    assert done.returncode == 0, done.stderr.decode()
    folder = tmp_path / "cache"
    assert folder.is_dir() and (folder / "responses.sqlite").is_file()
    own = tmp_path / "elsewhere" / "mine.sqlite"
    again = eval_in(tmp_path, fake_args(fake, tmp_path / "run2", "-k", "1", "--cache", str(own)))
    assert again.returncode == 0, again.stderr.decode()
    assert own.is_file()
    # The old meaning (the sqlite file itself) is one sentence, not a silent second cache.
    (tmp_path / "cache-file").write_bytes((folder / "responses.sqlite").read_bytes())
    environment = env(tmp_path)
    environment["DEONTICBENCH_CACHE"] = str(tmp_path / "cache-file")
    refused = subprocess.run(
        fake_args(fake, tmp_path / "run3", "-k", "1"),
        env=environment, cwd=tmp_path, capture_output=True, timeout=120,
    )  # fmt: skip
    assert refused.returncode == 2
    message = refused.stderr.decode()
    assert message.startswith("error: DEONTICBENCH_CACHE names a folder") and "--cache" in message
    assert not (tmp_path / "run3").exists()


@pytest.mark.slow
def test_fresh_with_out_starts_that_folder_afresh_and_keeps_the_old_run_aside(
    fake: FakeProvider, tmp_path: Path
) -> None:
    """The refusal recommends --fresh, and --fresh does what it says;
    a different model is named in the refusal, both of them."""
    out = tmp_path / "run"
    first = eval_in(tmp_path, fake_args(fake, out, "-k", "1", "--limit", "2"))
    assert first.returncode == 0, first.stderr.decode()
    old_records = (out / RECORDS_NAME).read_bytes()
    other = [a.replace("openai-compatible:fake@", "openai-compatible:other@") for a in
             fake_args(fake, out, "-k", "1", "--limit", "1")]  # fmt: skip
    refused = eval_in(tmp_path, other)
    message = refused.stderr.decode()
    assert refused.returncode == 2 and "--fresh" in message
    assert "openai-compatible:fake@" in message and "openai-compatible:other@" in message
    assert (out / RECORDS_NAME).read_bytes() == old_records

    fresh = eval_in(tmp_path, [*other, "--fresh"])
    assert fresh.returncode == 0, fresh.stderr.decode()
    assert "--fresh: the run in" in fresh.stderr.decode()
    records = read_records(out / RECORDS_NAME).records
    assert len(records) == 1 and {r.model for r in records.values()} == {
        other[other.index("--model") + 1]
    }
    config = json.loads((out / "config.json").read_text())
    assert len(config["sessions"]) == 1
    (aside,) = [p for p in tmp_path.iterdir() if p.name.startswith("run.replaced-")]
    assert (aside / RECORDS_NAME).read_bytes() == old_records


@pytest.mark.slow
def test_the_self_check_explains_reference_disagreements_and_capped_macro_f1(
    tmp_path: Path,
) -> None:
    """The reference backend's misses are data defects, and a split
    whose gold labels are one class caps macro-F1 at 50; the summary says both."""
    done = eval_in(
        tmp_path,
        argv("--model", "reference", "--split", "hard", "--domains", "sara_binary,uscis",
             "--modes", "zero-shot", "-k", "1", "--out", str(tmp_path / "run"), "--score"),
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    last = done.stdout.decode().strip().splitlines()[-1]
    assert "docs/data-audit.md" in last
    assert "sara_binary 9 of 30" in last and "uscis 14 of 28" in last
    assert "23 case(s)" in last
    assert "capped" not in done.stdout.decode()  # both classes are in the hard splits

    smoke = eval_in(
        tmp_path,
        argv("--model", "reference", "--split", "smoke", "--domains", "housing,airline",
             "--modes", "direct", "-k", "1", "--out", str(tmp_path / "smoke")),
    )  # fmt: skip
    assert smoke.returncode == 0, smoke.stderr.decode()
    text = smoke.stdout.decode()
    assert "every housing gold label in this run is 'yes'" in text and "capped at 50" in text
    assert "data-audit" not in text  # direct reference answers are the gold labels
