"""A run folder written before protocols, exemplar choices and case orders were recorded
opens with the documented defaults (store/run.py, docs/running.md "The run folder"), and
``deonticbench score`` reads it as any other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from deonticbench.store import read_run
from deonticbench.store.record import Attempt, Record

DATA = os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data")


def _old_folder(folder: Path) -> Path:
    # What an early version wrote: no protocol, exemplars, case_order or sessions.
    folder.mkdir()
    config = {"model": {"spec": "reference"}, "split": "smoke", "domains": ["airline"],
              "modes": ["zero-shot"], "k": {"airline": 1}, "attempts": 1}  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    lines = []
    for index, (case, gold, answer) in enumerate([("c2", 40, 40.0), ("c1", 75, 10.0)]):
        attempt = Attempt(0, f"h{index}", "```prolog\n...\n```", answer=answer,
                          outcome="correct" if answer == gold else "wrong")  # fmt: skip
        record = Record("airline", case, "zero-shot", 0, gold, "reference", [attempt])
        lines.append(json.dumps(record.to_json()))
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_an_old_folder_opens_with_the_documented_defaults(tmp_path: Path) -> None:
    run = read_run(_old_folder(tmp_path / "old"))
    assert run.protocol == "harness"  # made before the paper protocol existed
    assert run.model == "reference"
    assert run.split == "smoke"
    assert len(run.records) == 2
    assert not run.case_order  # none recorded: id order, with a note where it matters


@pytest.mark.slow
def test_score_reads_an_old_folder(tmp_path: Path) -> None:
    folder = _old_folder(tmp_path / "old")
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "score", str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "DEONTICBENCH_DATA": DATA},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Airline" in done.stdout and "50.0" in done.stdout


def _eval(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["eval", "--model", "reference", "--domains", "airline", "--split", "smoke"]
    args += ["--modes", "agent-zero-shot", "--limit", "1", "--out", str(out), "--no-cache"]
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args, *extra],
        capture_output=True,
        text=True,
        env={**os.environ, "DEONTICBENCH_DATA": DATA},
        timeout=600,
    )


@pytest.mark.slow
def test_an_agentic_folder_that_says_agent_protocol_still_resumes(tmp_path: Path) -> None:
    # Folders written before the tool mode had its own name say agent.protocol.
    out = tmp_path / "run"
    done = _eval(out)
    assert done.returncode == 0, done.stderr
    path = out / "config.json"
    config = json.loads(path.read_text())
    assert config["agent"]["tool_mode"] == "native" and "protocol" not in config["agent"]
    config["agent"] = {"protocol": config["agent"].pop("tool_mode"), **config["agent"]}
    path.write_text(json.dumps(config))
    before = len((out / "records.jsonl").read_text().splitlines())
    again = _eval(out, "--limit", "2")  # a second case: the resumed run goes on
    assert again.returncode == 0, again.stderr
    assert len((out / "records.jsonl").read_text().splitlines()) > before


def test_an_agentic_record_written_before_the_tool_mode_had_its_name_reads_as_before() -> None:
    """A record whose ``agent`` says ``protocol`` (the tool mode's old name) loads with
    that value as ``tool_mode``, and is written back under the new name only."""
    new = Record(
        "airline", "a1", "agent-zero-shot", 0, "0", "reference",
        [Attempt(index=0, prompt_hash="h", response="")],
    )  # fmt: skip
    line = new.to_json()
    line["agent"] = {
        "tool_set": "prolog", "turns": 2, "tool_calls": {"submit": 1},
        "stop_reason": "submit", "wall_s": 1.0, "protocol": "text",
    }  # fmt: skip
    old = Record.from_json(json.loads(json.dumps(line)))
    assert old.agent is not None and old.agent.tool_mode == "text"
    written = old.to_json()["agent"]
    assert written["tool_mode"] == "text" and "protocol" not in written
