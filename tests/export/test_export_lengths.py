"""export --tokenizer / --max-completion-tokens / --drop-over-length, with a
tokenizer.json the test builds with the real ``tokenizers`` package; never a download."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)
tokenizers = pytest.importorskip("tokenizers")


def build_tokenizer(path: Path) -> Path:
    """A word-level tokenizer: every run of word characters or punctuation is a token."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(
        ["main :- format ( X ) , Y is Z * 2 ."], trainers.WordLevelTrainer(special_tokens=["[UNK]"])
    )
    tokenizer.save(str(path))
    return path


def export(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", "export", "--format", "trl-sft",
         "--out", str(tmp_path / "out"), "--domains", "airline", "--limit", "4", *extra],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


def test_lengths_reported_and_over_length_dropped(tmp_path: Path) -> None:
    path = build_tokenizer(tmp_path / "tokenizer.json")
    counter = tokenizers.Tokenizer.from_file(str(path))
    done = export(tmp_path, "--tokenizer", str(path))
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    lengths = manifest["completion_tokens"]["domains"]["airline"]
    rows = [json.loads(x) for x in (tmp_path / "out" / "train.jsonl").read_text().splitlines()]
    counts = sorted(
        len(counter.encode(r["completion"][0]["content"], add_special_tokens=False).ids)
        for r in rows
    )
    assert lengths["n"] == len(rows) == 4
    assert lengths["max"] == counts[-1] and lengths["p50"] == counts[1]
    assert f"airline: completion tokens p50 {counts[1]}" in done.stdout
    cap = counts[1]  # two completions are at most this long, two longer
    over = sum(1 for c in counts if c > cap)
    (tmp_path / "out").rename(tmp_path / "first")
    done = export(tmp_path, "--tokenizer", str(path), "--max-completion-tokens", str(cap),
                  "--drop-over-length")  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["completion_tokens"]["domains"]["airline"]["over"] == over
    assert manifest["completion_tokens"]["dropped_over_length"] is True
    assert manifest["rows"] == 4 - over
    assert f"{over} over {cap} tokens dropped" in done.stdout


def test_a_tokenizer_not_here_is_refused_without_a_download(tmp_path: Path) -> None:
    done = export(tmp_path, "--tokenizer", "Qwen/Qwen2.5-32B-Instruct")
    assert done.returncode != 0
    assert "nothing is downloaded" in done.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "hub").exists()
    done = export(tmp_path, "--max-completion-tokens", "10")
    assert done.returncode != 0 and "need --tokenizer" in done.stderr


def test_a_model_in_the_local_cache_is_found_by_name(tmp_path: Path) -> None:
    snapshot = tmp_path / "hub" / "models--acme--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    build_tokenizer(snapshot / "tokenizer.json")
    done = export(tmp_path, "--tokenizer", "acme/tiny")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["completion_tokens"]["tokenizer"] == "acme/tiny"
