"""A sandbox uid is whole again for its next command and its next holder: nothing that ran
as it is left counting against its process limit (``sandbox.clear_uid``).

As root only: that is when each sandbox runs under a uid of its own, and when a process
limit binds.  Real bwrap, real bash, real processes under real uids."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import hostile_programs as hostile
import pytest

from deonticbench.solver import sandbox
from deonticbench.solver.pool import bwrap_works
from deonticbench.solver.sandbox import claim_uid, clear_uid, host_env
from deonticbench.solver.shell import ShellLimits, run_shell, shell_argv

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids are claimed only by root"),
    pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot run here"),
]

# Forty processes at once, under the limit of 64 unless a bomb's processes are still
# counted: then bash shows "fork: retry" and waits a second or more for each.
FORKS_FORTY = "for i in $(seq 40); do sleep 0.2 & done; wait; echo forked"


def _running_as(uid: int) -> list[int]:
    return sandbox._pids_of(uid)


def _left_running(uid: int, workspace: Path, seconds: str, count: int) -> subprocess.Popen[bytes]:
    """A shell sandbox under ``uid`` still running ``count`` sleeps, as one whose harness
    was killed leaves it; returned once they all run.  Its own PID namespace reaps them
    once they are killed."""
    workspace.mkdir()
    os.chown(workspace, uid, uid)
    command = f"for i in $(seq {count}); do sleep {seconds} & done; wait"
    proc = subprocess.Popen(
        shell_argv(workspace, command, uid, ShellLimits()),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=host_env(),
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while len(_running_as(uid)) < count + 1 and time.monotonic() < deadline:  # bash too
        time.sleep(0.01)
    return proc


def _all_gone(marker: str) -> bool:
    """Whether every process with ``marker`` in its command line is gone within 5 s: a
    sandbox's namespace is torn down just after its bwrap exits."""
    deadline = time.monotonic() + 5
    while hostile.processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.01)
    return hostile.processes_with(marker) == []


@pytest.mark.slow  # each bomb runs for its two seconds
def test_a_shell_command_returns_with_nothing_left_under_its_uid(tmp_path: Path) -> None:
    uid, lock = claim_uid()
    try:
        workspace = tmp_path / "workspace"
        workspace.mkdir()
        os.chown(workspace, uid, uid)
        for _ in range(2):
            bombed = run_shell(workspace, hostile.SHELL_FORK_BOMB, uid=uid)
            # Checked at once: the bomb's processes must be gone when the call returns.
            left = _running_as(uid)
            assert "bombed" in bombed.output and "Resource temporarily" in bombed.output
            assert left == []
            forked = run_shell(workspace, FORKS_FORTY, uid=uid)
            assert forked.output.endswith("forked\n") and "fork: retry" not in forked.output
    finally:
        lock.close()


def test_clearing_a_uid_kills_its_processes_and_no_other(tmp_path: Path) -> None:
    mine, my_lock = claim_uid()
    other, other_lock = claim_uid()
    seconds = f"4{uuid.uuid4().int % 10**6}"
    try:
        sandboxes = [_left_running(mine, tmp_path / "mine", seconds, 5),
                     _left_running(other, tmp_path / "other", seconds, 1)]  # fmt: skip
        assert len(_running_as(mine)) == 6  # bash and its five sleeps
        others = _running_as(other)
        assert clear_uid(mine) is True
        assert _running_as(mine) == []
        assert _running_as(other) == others  # another uid's processes are not touched
        assert sandboxes[0].wait(timeout=10) is not None
    finally:
        clear_uid(other)
        my_lock.close()
        other_lock.close()
    sandboxes[1].wait(timeout=10)
    assert _all_gone(seconds)


def test_a_uid_something_still_runs_as_is_not_handed_out_and_is_cleared(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Two uids outside the range every sandbox claims from, so that no other test's
    # claim can take them between the claims below.
    lone = 62000 + 2 * (os.getpid() % 500)
    monkeypatch.setattr(sandbox, "_UID_RANGE", range(lone, lone + 2))
    seconds = f"5{uuid.uuid4().int % 10**6}"
    uid, lock = claim_uid()
    assert uid == lone
    left = _left_running(uid, tmp_path / "workspace", seconds, 3)
    lock.close()  # released with its processes still running
    assert len(_running_as(uid)) == 4  # bash and its three sleeps
    again, lock = claim_uid()
    try:
        assert again == lone + 1  # not the uid something still ran as
    finally:
        lock.close()
    # ... whose processes that claim killed: its sandbox ends, and once the kernel has
    # torn its PID namespace down, the uid is free again.
    assert left.wait(timeout=10) is not None
    assert _all_gone(seconds) and _running_as(uid) == []
    uid, lock = claim_uid()
    lock.close()
    assert uid == lone
