"""``read_run``: the one way to open a run folder, into the ``Run`` every reader takes.

The config is read when the folder is opened, the records when they are asked for: a
pass over them streams records.jsonl a line at a time, so a large run never sits in
memory whole unless a reader asks for the list."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from synthetic_runs import write_synthetic_run

import deonticbench
from deonticbench.api import write_run_results
from deonticbench.errors import DataError
from deonticbench.store import Run, read_run
from deonticbench.store.folder import RunFolderError
from deonticbench.store.record import Attempt, Record


def _record(case_id: str, reply: str = "r") -> Record:
    attempt = Attempt(0, "h", reply, answer=1.0, outcome="correct")
    return Record("airline", case_id, "direct", 0, 1, "m", [attempt])  # type: ignore[arg-type]


def _append(folder: Path, *records: Record) -> None:
    with open(folder / "records.jsonl", "a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(r.to_json()) + "\n" for r in records)


def test_the_package_opens_a_run_with_read_run() -> None:
    assert deonticbench.read_run is read_run and deonticbench.Run is Run


def test_the_records_are_read_when_asked_for_not_when_the_folder_opens(tmp_path: Path) -> None:
    folder = write_synthetic_run(tmp_path / "run", "openai:gpt-4.1")
    run = read_run(folder)
    assert run.path == folder and run.config["model"] == "openai:gpt-4.1"
    assert run.spec is not None and run.spec.model == run.model == "openai:gpt-4.1"
    assert not run.records.loaded
    # A record written after the folder was opened is read: nothing was read up front.
    _append(folder, _record("late"))
    first = next(iter(run.records))
    keys = [r.key for r in run.records]
    assert keys[0] == first.key and keys[-1] == _record("late").key
    assert not run.records.loaded  # passes keep nothing
    assert len(run.records) == len(keys) and run.records.loaded
    assert run.records[-1].case_id == "late" and [r.key for r in run.records] == keys


def test_a_pass_over_a_large_run_holds_one_record_at_a_time(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model": "m", "split": "hard"}))
    _append(folder, *(_record(f"c{i}", reply="x" * 2000) for i in range(3000)))
    run = read_run(folder)
    tracemalloc.start()
    try:
        assert sum(1 for _ in run.records) == 3000
        _, streamed = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        assert len(run.records.load()) == 3000
        _, loaded = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # The list holds every reply (6 MB of them); a pass holds one and the keys.
    assert streamed * 4 < loaded, (streamed, loaded)


def test_a_run_has_its_results_and_a_run_passes_through(tmp_path: Path) -> None:
    folder = write_synthetic_run(tmp_path / "run", "openai:gpt-4.1")
    run = read_run(folder)
    assert run.results is None  # not scored yet
    write_run_results(run)
    assert read_run(folder).results is not None
    assert read_run(folder).results["model"] == "openai:gpt-4.1"  # type: ignore[index]
    assert read_run(run) is run
    with pytest.raises(RunFolderError, match="is not a run folder"):
        read_run(tmp_path / "nowhere")


def test_strict_reading_refuses_a_damaged_config_now_and_a_damaged_line_when_read(
    tmp_path: Path,
) -> None:
    folder = write_synthetic_run(tmp_path / "run", "m")
    lines = (folder / "records.jsonl").read_text().splitlines()
    lines[3] = lines[3][:20]
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    run = read_run(folder, policy="strict")  # opening reads no record
    with pytest.raises(DataError, match="line 4 is not a valid record"):
        list(run.records)
    forgiving = read_run(folder)
    assert len(forgiving.records) == len(lines) - 1 and forgiving.report.n_skipped == 1
    (folder / "config.json").write_text("{")
    with pytest.raises(DataError, match="cannot be read as a run configuration"):
        read_run(folder, policy="strict")
    assert read_run(folder).config == {}  # forgiving: left out with a note
