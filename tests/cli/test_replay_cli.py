"""``deonticbench eval --model replay:...`` as a user runs it (a subprocess): a replay that
cannot give what was saved says so, and a replayed agentic trial sees what the original
trial saw, a malformed call included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_runs import turn_number
from fakeproviders import FakeProvider, FakeRequest, ToolTurn

DATA = os.environ.get("DEONTICBENCH_DATA") or "/work/shared/deonticbench-data"
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)
SMOKE = ("--domains", "airline", "--split", "smoke", "-k", "1", "--limit", "2")


def deonticbench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_DATA"] = DATA
    env["DEONTICBENCH_CACHE"] = str(tmp_path / "cache")
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip


def one_sentence(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    return line


def test_an_empty_replay_file_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    done = deonticbench(tmp_path, "eval", "--model", "replay:empty.jsonl", *SMOKE,
                        "--modes", "direct", "--out", "run")  # fmt: skip
    assert one_sentence(done) == "error: replay: empty.jsonl holds no saved response to replay."
    assert not (tmp_path / "run").exists()


def test_a_missing_run_folder_is_not_called_an_unreadable_file(tmp_path: Path) -> None:
    done = deonticbench(tmp_path, "eval", "--model", "replay:runs/gone", *SMOKE,
                        "--modes", "direct", "--out", "run")  # fmt: skip
    line = one_sentence(done)
    assert "runs/gone does not exist; name a replay file (.jsonl) or a run folder" in line
    assert "cannot be read" not in line


@pytest.fixture
def agentic(tmp_path: Path) -> Path:
    done = deonticbench(tmp_path, "eval", "--model", "reference", *SMOKE,
                        "--modes", "agent-zero-shot", "--out", "ref")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return tmp_path / "ref"


@pytest.mark.slow
def test_a_truncated_trajectory_is_one_sentence_before_the_run(
    tmp_path: Path, agentic: Path
) -> None:
    trajectory = sorted((agentic / "trajectories").rglob("*.json"))[0]
    trajectory.write_bytes(trajectory.read_bytes()[:200])
    done = deonticbench(tmp_path, "eval", "--model", f"replay:{agentic}", *SMOKE,
                        "--modes", "agent-zero-shot", "--out", "again")  # fmt: skip
    line = one_sentence(done)
    assert f"the trajectory {trajectory} is not valid JSON" in line
    assert not (tmp_path / "again").exists()


@pytest.mark.slow
def test_a_trajectory_that_ends_early_is_counted_in_the_closing_output(
    tmp_path: Path, agentic: Path
) -> None:
    trajectory = sorted((agentic / "trajectories").rglob("*.json"))[0]
    atif = json.loads(trajectory.read_text())
    first_agent = next(i for i, s in enumerate(atif["steps"]) if s["source"] == "agent")
    atif["steps"] = atif["steps"][: first_agent + 1]
    trajectory.write_text(json.dumps(atif))
    done = deonticbench(tmp_path, "eval", "--model", f"replay:{agentic}", *SMOKE,
                        "--modes", "agent-zero-shot", "--out", "again")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "note: 1 sample(s) found no saved response in replay:" in done.stdout
    assert "(or a saved trajectory that ended early); they are recorded as errors." in done.stdout


@pytest.fixture
def malformed_agent() -> Iterator[FakeProvider]:
    def reply(request: FakeRequest) -> str | ToolTurn:
        turn = turn_number(request)
        if turn == 0:
            # Cut off mid-object: the arguments are not valid JSON.
            return ToolTurn("", [("write_file", '{"path": "solution.pl", "content": "a :- ')])
        if turn == 1:
            return ToolTurn("", [("read_file", {"path": "solution.pl"})])
        return ToolTurn("", [("submit", {})])

    with FakeProvider(reply) as server:
        yield server


def _observations(folder: Path) -> list[list[str]]:
    (trajectory,) = sorted((folder / "trajectories").rglob("*.json"))
    steps = json.loads(trajectory.read_text())["steps"]
    return [
        [r["content"] for r in (s.get("observation") or {}).get("results", [])]
        for s in steps
        if s["source"] == "agent"
    ]


@pytest.mark.slow
def test_a_malformed_call_keeps_its_text_and_replays_the_same_observation(
    tmp_path: Path, malformed_agent: FakeProvider
) -> None:
    model = f"openai-compatible:fake@{malformed_agent.openai_url}"
    first = deonticbench(tmp_path, "eval", "--model", model, "--domains", "airline",
                         "--split", "smoke", "-k", "1", "--limit", "1",
                         "--modes", "agent-zero-shot", "--out", "orig")  # fmt: skip
    assert first.returncode == 0, first.stderr
    (trajectory,) = sorted((tmp_path / "orig" / "trajectories").rglob("*.json"))
    step = next(s for s in json.loads(trajectory.read_text())["steps"] if s["source"] == "agent")
    kept = step["extra"]["malformed_calls"]["0"]
    assert kept["arguments"] == '{"path": "solution.pl", "content": "a :- '
    assert "not valid JSON" in kept["error"]
    again = deonticbench(tmp_path, "eval", "--model", f"replay:{tmp_path / 'orig'}",
                         "--domains", "airline", "--split", "smoke", "-k", "1", "--limit", "1",
                         "--modes", "agent-zero-shot", "--out", "replayed")  # fmt: skip
    assert again.returncode == 0, again.stderr
    original = _observations(tmp_path / "orig")
    assert "could not be read" in original[0][0]
    assert _observations(tmp_path / "replayed") == original
