"""``deonticbench eval`` as a user runs it (a subprocess against the loopback fake
provider): what a run silently lacked or left out is said, and options that cannot work
together are one sentence."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeproviders import FakeProvider

from deonticbench.store.records_file import read_records

DATA = os.environ.get("DEONTICBENCH_DATA") or "/work/shared/deonticbench-data"
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)


def deonticbench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_DATA"] = DATA
    env["DEONTICBENCH_CACHE"] = str(tmp_path / "cache")
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider(lambda r: "The total is 10.\nAnswer: 10") as server:
        yield server


@pytest.mark.slow
def test_a_second_logprob_run_asks_again_rather_than_take_cached_text(
    tmp_path: Path, fake: FakeProvider
) -> None:
    common = ("--model", f"openai-compatible:fake@{fake.openai_url}", "--domains", "airline",
              "--split", "smoke", "--modes", "direct", "-k", "1", "--limit", "2",
              "--confidence", "logprob")  # fmt: skip
    first = deonticbench(tmp_path, "eval", *common, "--out", "one")
    assert first.returncode == 0, first.stderr
    second = deonticbench(tmp_path, "eval", *common, "--out", "two")
    assert second.returncode == 0, second.stderr
    assert "does not read the response cache (it keeps no log-probabilities)" in second.stderr
    assert len(fake.generation_requests()) == 4  # the second run asked too
    records = read_records(tmp_path / "two" / "records.jsonl").records.values()
    assert records and all(r.final.logprobs for r in records)


def test_logprob_with_a_backend_that_has_none_is_one_sentence(tmp_path: Path) -> None:
    done = deonticbench(tmp_path, "eval", "--model", "reference", "--domains", "airline",
                        "--split", "smoke", "--modes", "direct", "--confidence", "logprob",
                        "--out", "run")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        "error: --confidence logprob asks an OpenAI-compatible server for token "
        "log-probabilities; reference gives none (use openai: or openai-compatible:).\n"
    )
    assert not (tmp_path / "run").exists()


def _config(folder: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((folder / "config.json").read_text())
    return loaded


def test_resuming_with_the_default_exemplars_names_the_default(tmp_path: Path) -> None:
    common = ("eval", "--model", "reference", "--domains", "airline", "--split", "smoke",
              "--modes", "few-shot", "--limit", "1", "--out", "run")  # fmt: skip
    first = deonticbench(tmp_path, *common, "--exemplars", "retrieved")
    assert first.returncode == 0, first.stderr
    again = deonticbench(tmp_path, *common)
    assert again.returncode == 2
    assert '(exemplars differs ("retrieved" before, seeded (the default) now))' in again.stderr
    assert "null" not in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_the_closing_output_says_what_the_settings_left_unchanged(tmp_path: Path) -> None:
    done = deonticbench(tmp_path, "eval", "--model", "reference", "--domains", "airline",
                        "--split", "smoke", "--modes", "rules-given", "--distractors", "2",
                        "--out", "run")  # fmt: skip
    assert done.returncode == 0, done.stderr
    settings = _config(tmp_path / "run")["settings"]
    assert isinstance(settings, dict) and settings
    for text in settings.values():
        assert f"note: {text}" in done.stdout
    assert "note: airline: no distractor statutes;" in done.stdout
