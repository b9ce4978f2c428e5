"""``BwrapEnvironment`` as Harbor drives it: one sandbox per trial with no network, the
system read-only and the host's own files out of sight, a tmux server that outlives the
command that started it, timeouts and cancellation that kill, and nothing left running
after ``stop``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import hostile_programs as hostile
import pytest
from click.testing import CliRunner
from harbor_support import REPO, harbor_run, require_harbor

DATA = os.environ.get("DEONTICBENCH_DATA", "")


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


@pytest.mark.slow
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


def _planted(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A secret and a canary in the harness's environment, as ``harbor run`` would have."""
    planted = {
        "OPENAI_API_KEY": f"sk-canary-{uuid.uuid4().hex}",
        "DEONTICBENCH_TEST_CANARY": f"canary-{uuid.uuid4().hex}",
    }
    for name, value in planted.items():
        monkeypatch.setenv(name, value)
    return planted


def _host_folders(tmp_path: Path) -> list[Path]:
    """Host folders a task may not write (its root is its own, under ``tmp_path``)."""
    folders = [Path(p) for p in ("/usr", "/etc", "/root", "/tmp", "/var/tmp", "/opt")]
    folders += [REPO, REPO / "deonticbench", Path.home(), Path(sys.base_prefix), tmp_path]
    return [f for f in dict.fromkeys(folders) if f.is_dir()]


def test_a_task_command_holds_to_the_policy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command Harbor sends, checked from inside: no capability, an unprivileged uid,
    its own PID and network namespaces, none of the harness's variables anywhere it can
    read, no host path written; the ``env`` Harbor passes is still honoured, and what
    Harbor's agents and verifier write (``/app``, ``/logs/verifier``, ``/tmp``) is
    writable."""
    planted = _planted(monkeypatch)
    env = _environment(tmp_path)
    targets = hostile.probe_targets(f"probe-{uuid.uuid4().hex}", _host_folders(tmp_path))
    writable = ["/app/declared", "/logs/verifier/declared", "/tmp/declared"]

    async def scenario() -> tuple[str, str]:
        await env.start(force_build=False)
        try:
            probe = await env.exec(hostile.sandbox_probe_sh([*targets, *writable]))
            passed = await env.exec("echo $TASK_VAR", env={"TASK_VAR": "from-harbor"})
            return probe.stdout + probe.stderr, passed.stdout
        finally:
            await env.stop(delete=False)

    output, passed = asyncio.run(scenario())
    assert hostile.held_to_policy(output, list(planted.values()), targets) == []
    assert passed == "from-harbor\n"
    # Paths such as /tmp or /root are the task's own (in its root), not the host's.
    wrote = hostile.probe_findings(output).get("wrote", [])
    assert set(writable) <= set(wrote), output
    assert (env._root / "app" / "case.txt").read_text() == "the facts\n"


@pytest.mark.slow
@pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)
def test_harbor_run_probe_finds_no_secret(tmp_path: Path) -> None:
    """The environment-leak probe through Harbor's own loader and ``harbor run``: an exported
    airline task whose oracle prints its environment and every ``/proc/*/environ`` it
    can read, run with a secret and a canary in ``harbor run``'s environment.  Nothing
    of the trial (its output, logs, results) holds either, and it ran unprivileged."""
    require_harbor()
    from deonticbench.cli import cli

    tasks = tmp_path / "tasks"
    exported = CliRunner().invoke(cli, ["export", "--format", "harbor", "--prompt-mode",
                                        "zero-shot", "--domains", "airline", "--limit", "1",
                                        "--out", str(tasks)])  # fmt: skip
    assert exported.exit_code == 0, exported.output
    (task,) = [p for p in tasks.iterdir() if (p / "solution").is_dir()]
    probe = hostile.sandbox_probe_sh(["/app/declared"])
    (task / "solution" / "solve.sh").write_text(
        "#!/bin/bash\n(\n" + probe + ") > /logs/agent/probe.txt 2>&1\ncat /logs/agent/probe.txt\n"
    )
    planted = {
        "OPENAI_API_KEY": f"sk-canary-{uuid.uuid4().hex}",
        "DEONTICBENCH_TEST_CANARY": f"canary-{uuid.uuid4().hex}",
    }
    job = harbor_run(tasks, tmp_path / "jobs", "probe", "oracle", planted=planted)
    probes = list(job.rglob("probe.txt"))
    assert probes, sorted(str(p.relative_to(job)) for p in job.rglob("*"))
    output = probes[0].read_text()
    assert hostile.held_to_policy(output, list(planted.values()), []) == []
    assert "readable=/proc/1/environ" not in output
    for path in job.rglob("*"):
        if path.is_file():
            text = path.read_bytes()
            for value in planted.values():
                assert value.encode() not in text, f"{value[:12]}... is in {path}"
