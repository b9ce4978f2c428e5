"""The one sandbox policy (``deonticbench.solver.sandbox``) held against what a job of each
kind can actually do: a Prolog worker's job (both executors) and the agents' shell tool
here, a Harbor task's command in ``tests/integrations/test_harbor_environment.py``.

Each probe runs with a secret and a canary planted in the harness's environment, and must
show: no capability (effective, permitted, bounding), an unprivileged uid when the
harness is root, PID and network namespaces of its own, no host process in ``/proc``,
neither planted value in its environment or in any ``/proc/*/environ`` it can read, and
no host path written outside the sandbox's declared mounts."""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path

import hostile_programs as hostile
import pytest

from deonticbench.solver import Limits, Solver
from deonticbench.solver.pool import bwrap_works
from deonticbench.solver.sandbox import (
    SandboxPolicy,
    claim_uid,
    shell_policy,
    task_policy,
    worker_policy,
)
from deonticbench.solver.shell import run_shell

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot run here")


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A secret and a canary in the harness's environment, set before any sandbox starts."""
    secret = f"sk-canary-{uuid.uuid4().hex}"
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("DEONTICBENCH_TEST_CANARY", canary)
    return [secret, canary]


def host_folders() -> list[Path]:
    """Host folders no sandbox declares writable: the system, homes, temp folders, the
    repository and the harness's own code and interpreter."""
    folders = [Path(p) for p in ("/usr", "/etc", "/root", "/tmp", "/var/tmp", "/opt", "/dev/shm")]
    folders += [REPO, REPO / "deonticbench" / "solver", REPO / "prolog", Path.home()]
    folders.append(Path(sys.base_prefix))
    return [f for f in dict.fromkeys(folders) if f.is_dir()]


@pytest.mark.parametrize("executor", ["fork", "fresh"])
def test_a_prolog_workers_job_holds_to_the_policy(executor: str, planted: list[str]) -> None:
    targets = hostile.probe_targets(f"probe-{uuid.uuid4().hex}", host_folders())
    with Solver(workers=1, executor=executor, limits=Limits(timeout_s=10)) as solver:  # type: ignore[arg-type]
        execution = solver.run(hostile.sandbox_probe_pl(targets))
    assert execution.sandbox == "bwrap" and execution.status == "ok", execution.stderr
    assert hostile.probe_findings(execution.stdout).get("ns_pid"), execution.stdout
    assert hostile.held_to_policy(execution.stdout, planted, targets) == []


def test_a_shell_command_holds_to_the_policy(tmp_path: Path, planted: list[str]) -> None:
    targets = hostile.probe_targets(f"probe-{uuid.uuid4().hex}", host_folders())
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    uid, lock = claim_uid() if os.geteuid() == 0 else (None, None)
    try:
        if uid is not None:
            os.chown(workspace, uid, uid)
        probe = hostile.sandbox_probe_sh([*targets, "/workspace/declared"])
        result = run_shell(workspace, probe, uid=uid)
    finally:
        if lock is not None:
            lock.close()
    assert result.exit_code == 0, result.output
    assert hostile.held_to_policy(result.output, planted, targets) == []
    # The one declared mount is writable, and is the workspace.
    assert (workspace / "declared").read_text() == "x\n"


def test_every_kind_is_built_from_the_same_defaults(tmp_path: Path) -> None:
    """What no kind may differ in: namespaces, parent death, a new session, a cleared
    environment, and (as root) every capability dropped before the few a kind keeps."""
    kinds: list[SandboxPolicy] = [
        worker_policy("/tmp/jobs"),
        shell_policy(tmp_path),
        task_policy(tmp_path),
    ]
    for policy in kinds:
        argv = policy.argv()
        for option in ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
                       "--die-with-parent", "--new-session", "--clearenv"):  # fmt: skip
            assert option in argv, (policy.kind, option)
        if os.geteuid() == 0:
            assert argv[argv.index("--cap-drop") + 1] == "ALL", policy.kind
        assert "/opt" not in [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
