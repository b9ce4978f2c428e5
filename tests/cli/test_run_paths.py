"""Errors in one voice: the same wrong run path gives the same sentence from every
command that reads a run folder, and a run without batches has none to list (exit 0)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DATA = os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data")
READERS = (
    ("score",),
    ("report",),
    ("analyze",),
    ("batches",),
    ("cascade", "--defer-to", "human"),
)
"""Every command that takes a run folder, with what it needs besides the path."""


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DEONTICBENCH_DATA": DATA}
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _sentences(path: Path) -> set[str]:
    said = set()
    for command, *rest in READERS:
        done = _cli(command, str(path), *rest)
        assert done.returncode == 2, (command, done.stderr)
        assert "Traceback" not in done.stderr
        said.add(done.stderr.strip())
    return said


@pytest.mark.slow
def test_a_missing_run_folder_is_one_sentence_from_every_command(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    assert _sentences(missing) == {f"error: {missing} is not a run folder: no such directory."}


@pytest.mark.slow
def test_a_file_or_an_empty_folder_is_one_sentence_from_every_command(tmp_path: Path) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    assert _sentences(a_file) == {f"error: {a_file} is not a run folder: it is a file."}
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _sentences(empty) == {
        f"error: {empty} is not a run folder: it has neither config.json nor records.jsonl."
    }


@pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")
def test_a_run_without_batches_has_nothing_to_list(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = _cli(
        "eval", "--model", "reference", "--split", "smoke", "--domains", "airline",
        "--modes", "direct", "-k", "1", "--limit", "1", "--no-cache", "--out", str(run),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = _cli("batches", str(run))
    assert listed.returncode == 0, listed.stderr
    assert "nothing to list" in listed.stdout
