"""Run folder and response cache: real files, real sqlite, real processes."""

from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
from pathlib import Path

import pytest

from deonticbench.errors import ConfigError, DataError
from deonticbench.evaluation.cache import CachedResponse, ResponseCache, cache_key
from deonticbench.store.config import CONFIG_NAME, config_mismatch
from deonticbench.store.folder import RunFolder
from deonticbench.store.naming import find_resumable, model_slug
from deonticbench.store.record import Attempt, Record
from deonticbench.store.records_file import RECORDS_NAME, read_records


def _config(**changes: object) -> dict[str, object]:
    config: dict[str, object] = {
        "model": {"spec": "openai:m", "identity": {"backend": "openai", "temperature": 0.7}},
        "split": "hard",
        "domains": ["airline"],
        "modes": ["direct"],
        "k": {"airline": 3},
        "attempts": 2,
        "seed": 0,
        "templates": {"airline/direct": "abc"},
        "data": {"kind": "local", "path": "/somewhere"},
        "limits": {"timeout_s": 20.0},
        "sessions": [{"started": "now"}],
    }
    config.update(changes)
    return config


def _record(case: str, sample: int, outcome: str = "correct") -> Record:
    attempt = Attempt(index=0, prompt_hash="p", response="Answer: 5", answer=5.0, outcome=outcome)  # type: ignore[arg-type]
    return Record("airline", case, "direct", sample, 5, "openai:m", [attempt])


def test_records_are_appended_one_line_each_and_read_back(tmp_path: Path) -> None:
    with RunFolder.open(tmp_path / "run", _config()) as run:
        run.append(_record("a", 0))
        run.append(_record("a", 1, "wrong"))
    lines = (tmp_path / "run" / RECORDS_NAME).read_text().splitlines()
    assert len(lines) == 2
    loaded = read_records(tmp_path / "run" / RECORDS_NAME)
    assert set(loaded.records) == {("airline", "a", "direct", 0), ("airline", "a", "direct", 1)}
    assert loaded.records[("airline", "a", "direct", 1)].final.outcome == "wrong"
    assert json.loads((tmp_path / "run" / CONFIG_NAME).read_text())["split"] == "hard"


def test_truncated_last_line_is_cut_and_appending_continues_cleanly(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    with RunFolder.open(folder, _config()) as run:
        run.append(_record("a", 0))
        run.append(_record("a", 1))
    path = folder / RECORDS_NAME
    whole = path.read_bytes()
    # A crash in the middle of writing the second line.
    path.write_bytes(whole[: len(whole) - 40])
    with RunFolder.open(folder, _config()) as run:
        assert run.loaded.truncated
        assert set(run.done) == {("airline", "a", "direct", 0)}
        run.append(_record("a", 1))
    again = read_records(path)
    assert not again.truncated
    assert len(again.records) == 2
    assert len(path.read_text().splitlines()) == 2


def test_damaged_line_in_the_middle_is_an_error_not_silence(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    with RunFolder.open(folder, _config()) as run:
        run.append(_record("a", 0))
        run.append(_record("a", 1))
    path = folder / RECORDS_NAME
    lines = path.read_text().splitlines()
    path.write_text("{not json\n" + lines[1] + "\n")
    with pytest.raises(DataError, match="line 1"):
        read_records(path)


def test_duplicate_keys_keep_the_first_record(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_NAME
    first, second = _record("a", 0, "correct"), _record("a", 0, "wrong")
    path.write_text(json.dumps(first.to_json()) + "\n" + json.dumps(second.to_json()) + "\n")
    loaded = read_records(path)
    assert loaded.duplicates == 1
    assert loaded.records[("airline", "a", "direct", 0)].final.outcome == "correct"


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        ({"split": "whole"}, "split differs"),
        ({"model": {"spec": "openai:m", "identity": {"temperature": 0.0}}}, "model"),
        ({"templates": {"airline/direct": "xyz"}}, "templates"),
        ({"k": {"airline": 5}}, "K for airline"),
        # A folder made before protocols existed followed the harness's.
        ({"protocol": "paper"}, r'protocol differs \("harness" before, "paper" now\)'),
    ],
)
def test_resume_with_another_config_is_one_clear_sentence(
    tmp_path: Path, change: dict[str, object], phrase: str
) -> None:
    folder = tmp_path / "run"
    with RunFolder.open(folder, _config()) as run:
        run.append(_record("a", 0))
    with pytest.raises(ConfigError, match=phrase) as info:
        RunFolder.open(folder, _config(**change))
    message = str(info.value)
    assert message.endswith(".") and "\n" not in message
    # Nothing was lost or rewritten.
    assert len(read_records(folder / RECORDS_NAME).records) == 1


def test_resume_may_add_domains_and_other_data_paths(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    RunFolder.open(folder, _config()).close()
    more = _config(
        domains=["airline", "housing"],
        k={"airline": 3, "housing": 3},
        data={"kind": "local", "path": "/elsewhere"},
    )
    with RunFolder.open(folder, more) as run:
        assert run.config["domains"] == ["airline", "housing"]
        assert run.config["k"] == {"airline": 3, "housing": 3}
        assert len(run.config["sessions"]) == 2
    assert config_mismatch(_config(), more) is None


def test_a_folder_without_a_protocol_resumes_under_the_harness_protocol(tmp_path: Path) -> None:
    assert config_mismatch(_config(), _config(protocol="harness")) is None
    assert config_mismatch(_config(protocol="paper"), _config(protocol="paper")) is None
    said = config_mismatch(_config(protocol="paper"), _config(protocol="harness"))
    assert said == 'protocol differs ("paper" before, "harness" now)'


def test_two_writers_on_one_run_folder_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    with RunFolder.open(folder, _config()), pytest.raises(ConfigError, match="another"):
        RunFolder.open(folder, _config())
    RunFolder.open(folder, _config()).close()  # released on close


def test_find_resumable_picks_newest_matching_folder(tmp_path: Path) -> None:
    slug = model_slug("openai:m")
    assert slug == "openai-m"
    RunFolder.open(tmp_path / f"{slug}-hard-20240101T000000Z", _config()).close()
    RunFolder.open(tmp_path / f"{slug}-hard-20240102T000000Z", _config()).close()
    other = _config(seed=7)
    RunFolder.open(tmp_path / f"{slug}-hard-20240103T000000Z", other).close()
    found = find_resumable(_config(), root=tmp_path)
    assert found is not None and found.name.endswith("20240102T000000Z")
    assert find_resumable(_config(split="whole"), root=tmp_path) is None


def test_cache_round_trip_and_key_parts(tmp_path: Path) -> None:
    identity = {"backend": "openai", "model": "m", "temperature": 0.7}
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        key = cache_key(identity, "hash", 0, 0)
        assert cache.get(key) is None
        cache.put(key, CachedResponse("text", 10, 5, 0.5, "stop"))
        hit = cache.get(key)
        assert hit == CachedResponse("text", 10, 5, 0.5, "stop")
        # Each key part separates responses.
        assert cache.get(cache_key(identity, "hash", 1, 0)) is None
        assert cache.get(cache_key(identity, "hash", 0, 1)) is None
        assert cache.get(cache_key(identity, "other", 0, 0)) is None
        assert cache.get(cache_key({**identity, "temperature": 0.0}, "hash", 0, 0)) is None
    mode = sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def _writer(path: str, worker: int, count: int) -> None:
    cache = ResponseCache(path)
    for i in range(count):
        cache.put(f"{worker}-{i}", CachedResponse(f"t{worker}-{i}", i, i, 0.0, None))
    cache.close()


def test_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "c.sqlite")
    ResponseCache(path).close()
    ctx = multiprocessing.get_context("fork" if hasattr(os, "fork") else "spawn")
    procs = [ctx.Process(target=_writer, args=(path, w, 150)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with ResponseCache(path) as cache:
        assert len(cache) == 600
        assert cache.get("3-149") == CachedResponse("t3-149", 149, 149, 0.0, None)


# --- no response text can stop a run --------------------------------------------------

LONE = "Answer: 5 \ud800 and \udfff end"  # valid JSON ("\ud800"), not encodable as UTF-8


def _record_saying(text: str, *, error: str | None = None) -> Record:
    attempt = Attempt(index=0, prompt_hash="p", response=text, answer=5.0, outcome="correct")
    attempt.error = error
    return Record("airline", "a", "direct", 0, 5, "openai:m", [attempt])


def test_a_lone_surrogate_is_stored_losslessly_and_read_back_on_resume(tmp_path: Path) -> None:
    from deonticbench.store.records_file import write_replay_file

    with RunFolder.open(tmp_path / "run", _config()) as run:
        run.append(_record_saying(LONE))
        run.append(_record("b", 0))
    raw = (tmp_path / "run" / RECORDS_NAME).read_bytes()
    raw.decode("utf-8")  # the file stays valid UTF-8
    loaded = read_records(tmp_path / "run" / RECORDS_NAME)
    assert loaded.records[("airline", "a", "direct", 0)].final.response == LONE
    # A resume reads it again, and keeps appending.
    with RunFolder.open(tmp_path / "run", _config()) as run:
        assert run.done[("airline", "a", "direct", 0)].final.response == LONE
        run.append(_record("c", 0))
    assert len(read_records(tmp_path / "run" / RECORDS_NAME).records) == 3
    # The replay file holds it too.
    count = write_replay_file([_record_saying(LONE)], tmp_path / "replay.jsonl")
    assert count == 1
    line = json.loads((tmp_path / "replay.jsonl").read_bytes().decode("utf-8"))
    assert line["response"] == LONE


def test_error_records_with_a_lone_surrogate_are_rewritten_on_resume(tmp_path: Path) -> None:
    with RunFolder.open(tmp_path / "run", _config()) as run:
        run.append(_record_saying(LONE))
        failed = _record("b", 0)
        failed.attempts[0].error = "HTTP 500 after 6 tries"
        run.append(failed)
    with RunFolder.open(tmp_path / "run", _config(), retry_errors=True) as run:
        assert set(run.done) == {("airline", "a", "direct", 0)}
    kept = read_records(tmp_path / "run" / RECORDS_NAME).records
    assert kept[("airline", "a", "direct", 0)].final.response == LONE


def test_the_cache_keeps_a_lone_surrogate_and_only_ever_text(tmp_path: Path) -> None:
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.put("k", CachedResponse(LONE, 1, 2, 0.5, "stop"))
        hit = cache.get("k")
        assert hit is not None and hit.text == LONE
        cache.put("n", CachedResponse(42, 1, 2, 0.5, "stop"))  # type: ignore[arg-type]
        cache.put("l", CachedResponse(["a"], 1, 2, 0.5, "stop"))  # type: ignore[arg-type]
        assert cache.get("n") is None and cache.get("l") is None
        assert len(cache) == 1


# --- a refused start changes nothing --------------------------------------------------


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_refused_resume_leaves_every_file_byte_identical(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    with RunFolder.open(folder, _config()) as run:
        for case in "abc":
            run.append(_record(case, 0))
    lines = (folder / RECORDS_NAME).read_bytes().split(b"\n")
    lines[1] = lines[1][:20] + b"#damage#" + lines[1][20:]
    (folder / RECORDS_NAME).write_bytes(b"\n".join(lines))
    (folder / ".lock").unlink(missing_ok=True)
    before = _snapshot(folder)
    # Adding a domain is allowed and would rewrite config.json; the damage refuses it.
    more = _config(domains=["airline", "housing"], sessions=[{"started": "later"}])
    with pytest.raises(DataError, match="line 2"):
        RunFolder.open(folder, more)
    assert _snapshot(folder) == before
    # Another configuration is refused, and changes nothing either.
    with pytest.raises(ConfigError):
        RunFolder.open(folder, _config(seed=1))
    assert _snapshot(folder) == before
    # Once the damage is mended, the original settings resume: no session was recorded
    # for the settings that never ran.
    lines[1] = lines[1].replace(b"#damage#", b"")
    (folder / RECORDS_NAME).write_bytes(b"\n".join(lines))
    with RunFolder.open(folder, _config()) as run:
        assert len(run.done) == 3
    config = json.loads((folder / CONFIG_NAME).read_text())
    assert config["domains"] == ["airline"]
    assert [s["started"] for s in config["sessions"]] == ["now", "now"]


def test_statute_and_hub_pins_live_in_the_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One cache folder, whichever module asks."""
    from deonticbench.data import hub, statutes
    from deonticbench.evaluation import cache

    monkeypatch.setenv("DEONTICBENCH_CACHE", str(tmp_path / "c"))
    assert cache.default_cache_path() == tmp_path / "c" / "responses.sqlite"
    assert statutes.cache_root() == tmp_path / "c"
    assert hub._memory_file() == tmp_path / "c" / "hub-revisions.json"


def test_a_run_recorded_with_the_old_exemplars_spelling_resumes() -> None:
    # Older runs spell the seeded choice "paper"; new runs write nothing for
    # the default, or "seeded" when a spec names it: all three are one choice.
    old = _config(exemplars="paper")
    assert config_mismatch(old, _config()) is None
    assert config_mismatch(old, _config(exemplars="seeded")) is None
    assert config_mismatch(_config(), old) is None
    refused = config_mismatch(old, _config(exemplars="retrieved"))
    assert refused == 'exemplars differs (seeded (the default) before, "retrieved" now)'
