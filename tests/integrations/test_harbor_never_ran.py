"""A Harbor job whose environment could not start, from ``harbor run`` to
``import-harbor``: the sentence saying what the host lacks is on Harbor's own
output, not only in each trial's exception.txt, and the import counts the trial as never
run, not as "judged from kept artifacts"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harbor_support import BWRAP_ENV, harbor_env, require_harbor

DATA = os.environ.get("DEONTICBENCH_DATA") or "/work/shared/deonticbench-data"
SENTENCE = (
    "BwrapEnvironment runs the task on this host, which lacks swipl: install them (the "
    "task's Dockerfile is not built)."
)


def deonticbench(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_DATA"] = DATA
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


def host_without_swipl(folder: Path) -> str:
    """A PATH with every tool the task needs but swipl (and the venv's harbor)."""
    folder.mkdir()
    for tool in ("bwrap", "bash", "python3", "tmux", "sh", "env"):
        found = Path("/usr/bin", tool)
        if found.exists():
            (folder / tool).symlink_to(found)
    return os.pathsep.join([str(folder), str(Path(sys.executable).parent)])


@pytest.mark.slow
def test_a_host_without_swipl_is_said_on_harbors_output_and_the_import_says_never_ran(
    tmp_path: Path,
) -> None:
    command = require_harbor()
    tasks, jobs = tmp_path / "tasks", tmp_path / "jobs"
    exported = deonticbench(
        "export", "--format", "harbor", "--prompt-mode", "zero-shot", "--domains", "airline",
        "--limit", "1", "--out", str(tasks),
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    env = harbor_env({"PATH": host_without_swipl(tmp_path / "bin")})
    done = subprocess.run(
        [str(command), "run", "-p", str(tasks), "-a", "oracle", "-e", BWRAP_ENV,
         "-o", str(jobs), "--job-name", "nos", "-n", "1", "-y", "-q"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "EnvironmentStartError" in done.stdout
    assert f"deonticbench: {SENTENCE}" in done.stderr
    assert "Traceback" not in done.stderr  # no second error over the first (log download)
    run = tmp_path / "run"
    imported = deonticbench("import-harbor", str(jobs / "nos"), "--out", str(run))
    assert imported.returncode == 0, imported.stderr
    assert "judged from kept artifacts: 0, from the verifier's output: 0, never ran: 1" in (
        imported.stdout
    )
    assert f"EnvironmentStartError: {SENTENCE}" in " ".join(imported.stderr.split())
    (line,) = (run / "records.jsonl").read_text().splitlines()
    attempt = json.loads(line)["attempts"][0]
    assert attempt["outcome"] == "abstain"
    assert "(the agent never ran)" in attempt["abstain_reason"]
