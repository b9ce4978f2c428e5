"""One job's private directory, command line and environment, and its run in a fresh
``swipl`` process (the ``fresh`` executor, and the fallback of ``fork``)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time

from .capabilities import narrow_capabilities
from .capture import read_outputs
from .limits import job_rlimits
from .reaping import clean_job, kill_everything, rmtree, signal_as

TYPE_CHECKING = False  # typing costs its import; mypy reads the names below all the same
if TYPE_CHECKING:
    from typing import Any


def _job_preexec(job: dict[str, Any], uid: int | None) -> Any:
    """A fresh job's set-up in its child: no capability, then its uid, then its rlimits
    (RLIMIT_NPROC binds the uid it is set under)."""

    def apply() -> None:
        if uid is not None:
            narrow_capabilities(0)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        for which, values in job_rlimits(job, os.getuid()):
            resource.setrlimit(which, values)

    return apply


def _read_capped(
    proc: subprocess.Popen[bytes],
    job: dict[str, Any],
    started: float,
    uid: int | None,
    spool: str,
) -> dict[str, Any]:
    """Collect stdout/stderr up to the cap while enforcing the wall clock."""
    assert proc.stdout is not None and proc.stderr is not None
    outputs = {proc.stdout.fileno(): "stdout", proc.stderr.fileno(): "stderr"}
    return read_outputs(
        outputs,
        job,
        started,
        lambda: proc.poll() is not None,
        spool,
        terminate=lambda: signal_as(uid, proc.pid, signal.SIGTERM),
    )


def prepare_job(job: dict[str, Any], uid: int | None, workroot: str) -> tuple[str, str]:
    """The job's private directory with its program in it: (directory, program path).

    Its path is the same for every job of a worker (a worker runs one job at a time, and
    the directory is new each time): so is a program's environment (HOME and TMPDIR name
    it), which the fork server therefore starts with, and a forked child's
    /proc/self/environ reads as a fresh process's does."""
    jobdir = job_dir(workroot)
    if os.path.lexists(jobdir):
        rmtree(jobdir)  # what a job that crashed the supervisor left
    os.mkdir(jobdir, 0o700)
    program = os.path.join(jobdir, "program.pl")
    with open(program, "w", encoding="utf-8") as fh:
        fh.write(job["program"])
    if uid is not None:
        os.chown(jobdir, uid, uid)
        os.chown(program, uid, uid)
    return jobdir, program


def job_dir(workroot: str) -> str:
    return os.path.join(workroot, "job")


def swipl_argv(job: dict[str, Any], program: str) -> list[str]:
    """The command a program runs as; a forked child takes it as its ``os_argv`` flag
    (and, without ``-t``, runs the interactive toplevel: ``"toplevel": "eof"``, which
    reads end-of-file from stdin, /dev/null, as ``swipl -q -f FILE < /dev/null`` does)."""
    toplevel = [] if job.get("toplevel") == "eof" else ["-t", "halt"]
    return [
        job.get("swipl", "swipl"),
        f"--stack-limit={int(job['stack_mb'])}m",
        "--no-packs",  # add-ons are not part of the benchmark's Prolog, and scanning costs
        "-q",
        "-f",
        program,
        *toplevel,
    ]


def job_env(jobdir: str) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": jobdir, "TMPDIR": jobdir, "LANG": "C.UTF-8"}


def job_report(
    returncode: int, captured: dict[str, Any], wall: float, leftovers: int
) -> dict[str, Any]:
    return {
        "exit_code": returncode if returncode >= 0 else None,
        "signal": -returncode if returncode < 0 else None,
        "limit": captured["limit"],
        "stdout": captured["stdout"].decode("utf-8", "replace"),
        "stderr": captured["stderr"].decode("utf-8", "replace"),
        "wall_s": round(wall, 6),
        "leftover_processes": leftovers,
    }


def run_job(job: dict[str, Any], uid: int | None, workroot: str) -> dict[str, Any]:
    """Run one program in a fresh ``swipl`` process."""
    jobdir, program = prepare_job(job, uid, workroot)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            swipl_argv(job, program),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=jobdir,
            env=job_env(jobdir),
            start_new_session=True,
            preexec_fn=_job_preexec(job, uid),
            close_fds=True,
        )
    except OSError as exc:
        rmtree(jobdir)
        return {"error": f"could not start swipl: {exc}", "wall_s": 0.0}
    captured = _read_capped(proc, job, started, uid, workroot)
    if captured["limit"] is not None:
        kill_everything(uid, keep=proc.pid)
    try:
        returncode = proc.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        kill_everything(uid, keep=proc.pid)
        returncode = proc.wait()
    wall = time.monotonic() - started
    leftovers = kill_everything(uid)
    clean_job(jobdir, uid)
    return job_report(returncode, captured, wall, leftovers)
