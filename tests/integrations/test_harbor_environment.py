"""``BwrapEnvironment`` as Harbor drives it: one sandbox per trial with no network, the
system read-only and the host's own files out of sight, a tmux server that outlives the
command that started it, timeouts and cancellation that kill, and nothing left running
after ``stop``."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from harbor_support import REPO, require_harbor


def _environment(tmp_path: Path, **config: Any) -> Any:
    require_harbor()
    from harbor.models.task.config import EnvironmentConfig
    from harbor.models.trial.paths import TrialPaths

    from deonticbench.integrations.harbor import BwrapEnvironment

    env_dir = tmp_path / "environment"
    (env_dir / "workspace").mkdir(parents=True)
    (env_dir / "workspace" / "case.txt").write_text("the facts\n")
    (env_dir / "Dockerfile").write_text(
        "FROM debian:bookworm-slim\nRUN apt-get update \\\n && true\nWORKDIR /app\n"
        "COPY workspace/ /app/\n"
    )
    settings = {"cpus": 1, "memory_mb": 2048, "network_mode": "no-network", **config}
    return BwrapEnvironment(
        environment_dir=env_dir,
        environment_name="t",
        session_id="t__env",
        trial_paths=TrialPaths(tmp_path / "trial"),
        task_env_config=EnvironmentConfig(**settings),
    )


def _alive(marker: str) -> bool:
    listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return any(marker in line and "ps -eo" not in line for line in listing.splitlines())


def test_sandbox_contains_and_stop_kills_everything(tmp_path: Path) -> None:
    env = _environment(tmp_path)
    marker = f"sleep 7{uuid.uuid4().int % 10**6}"

    async def scenario() -> None:
        await env.start(force_build=False)
        try:
            first = await env.exec("pwd; cat case.txt; nproc; ulimit -v")
            assert first.stdout.split() == ["/app", "the", "facts", "1", str(2048 * 1024)]
            shielded = await env.exec(
                f"ls {REPO} /root/.pyenv 2>&1; touch /usr/x 2>&1; "
                "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 80), 2)' "
                "2>&1 | tail -1"
            )
            text = shielded.stdout
            assert "No such file or directory" in text and "Read-only file system" in text
            assert "Network is unreachable" in text
            await env.exec(f"tmux new-session -d -s keep '{marker}'")
            assert "keep" in (await env.exec("tmux ls")).stdout  # one sandbox for all execs
            with pytest.raises(RuntimeError, match="timed out"):
                await env.exec("sleep 30", timeout_sec=1)
            cancelled = asyncio.create_task(env.exec("sleep 31; echo never"))
            await asyncio.sleep(0.5)
            cancelled.cancel()
            await asyncio.sleep(0.3)
            assert "sleep 31" not in (await env.exec("ps -eo args")).stdout
            assert _alive(marker)
            await env.upload_file(Path(__file__), "/tests/x.py")
            await env.download_file("/app/case.txt", tmp_path / "back.txt")
            assert (tmp_path / "back.txt").read_text() == "the facts\n"
        finally:
            await env.stop(delete=True)
        assert not _alive(marker)

    asyncio.run(scenario())


def test_missing_host_tool_is_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _environment(tmp_path)
    from deonticbench.integrations.harbor.environment import EnvironmentStartError

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EnvironmentStartError, match="lacks bwrap, bash, swipl, python3"):
        asyncio.run(env.start(force_build=False))
