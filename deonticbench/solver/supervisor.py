"""The warm worker: runs inside the sandbox and executes one program at a time.

Started once per worker as ``python3 -I -S supervisor.py --uid U --workdir D`` (inside
bubblewrap when it works), it reads one JSON job per line on stdin and answers one JSON
result per line on stdout.  Starting the sandbox once per worker instead of once per
program is what makes the pool fast; what keeps programs apart is done here per job:

* a fresh ``swipl`` process in a new session, in a fresh private directory;
* an unprivileged uid of its own when we are root (so RLIMIT_NPROC applies, and the
  program cannot touch the supervisor), and rlimits for CPU, address space, file size,
  open files and processes; stdin is /dev/null; the environment is empty but for PATH;
* the wall clock and the output size enforced here, by killing;
* after every job, *every* process the job left behind is killed (this process is a
  child subreaper, so even processes that escaped into a new session stay our
  descendants; as root we also kill everything running under the job's uid), and every
  file it left in the writable places is removed.

Standard library only, and no import of the package: it starts with ``-I -S`` in a bare
sandbox.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

PR_SET_CHILD_SUBREAPER = 36
SCRATCH_DIRS = ("/dev/shm", "/var/tmp", "/dev/mqueue")


def _set_subreaper() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except OSError:
        pass


def _descendants(root: int) -> dict[int, tuple[int, str]]:
    """Every process whose ancestry reaches ``root``, as pid -> (parent pid, state)."""
    table: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields resume after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), fields[0].decode())
    found: dict[int, tuple[int, str]] = {}
    frontier = {root}
    while frontier:
        nxt = {pid for pid, (ppid, _) in table.items() if ppid in frontier and pid not in found}
        found.update({pid: table[pid] for pid in nxt})
        frontier = nxt
    return found


def _kill_uid(uid: int) -> None:
    """Kill every process of ``uid``: a child takes the uid and signals -1."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        os._exit(0)
    os.waitpid(pid, 0)


def kill_everything(uid: int | None, keep: int | None = None) -> int:
    """Kill all the job's processes until none is left; returns how many were killed.

    Zombies that are our children are reaped, except ``keep`` (the job's main process,
    whose exit status its ``Popen`` collects).
    """
    me = os.getpid()
    killed = 0
    for _ in range(200):
        if uid is not None:
            _kill_uid(uid)
        procs = _descendants(me)
        live = [pid for pid, (_, state) in procs.items() if state != "Z"]
        zombies = [pid for pid, (ppid, state) in procs.items() if state == "Z" and ppid == me]
        for pid in live:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        for pid in zombies:
            if pid != keep:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
        if not live and all(pid == keep for pid in zombies):
            return killed
        time.sleep(0.002)
    return killed


def _limits_preexec(job: dict[str, Any]) -> Any:
    mb = 1024 * 1024

    def apply() -> None:
        cpu = int(job["cpu_s"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        mem = int(job["memory_mb"]) * mb
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        fsize = int(job["file_size_mb"]) * mb
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
        nproc = int(job["processes"])
        if os.getuid() != 0:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    return apply


def _read_capped(
    proc: subprocess.Popen[bytes], job: dict[str, Any], started: float
) -> dict[str, Any]:
    """Collect stdout/stderr up to the cap while enforcing the wall clock."""
    cap = int(job["output_bytes"])
    deadline = started + float(job["timeout_s"])
    buffers = {"stdout": bytearray(), "stderr": bytearray()}
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, "stdout")
    sel.register(proc.stderr, selectors.EVENT_READ, "stderr")
    limit: str | None = None
    exited_at: float | None = None
    while sel.get_map():
        now = time.monotonic()
        if now >= deadline:
            limit = "timeout"
            break
        if exited_at is None and proc.poll() is not None:
            exited_at = now
        # Once swipl itself has exited, a background process may hold the pipes open:
        # give it a moment to flush, then stop listening (it will be killed).
        if exited_at is not None and now - exited_at > 0.05:
            break
        for key, _ in sel.select(timeout=0.02 if exited_at else min(0.25, deadline - now)):
            chunk = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            buf = buffers[key.data]
            buf += chunk
            if len(buf) > cap:
                limit = "output"
        if limit:
            break
    sel.close()
    return {
        "limit": limit,
        "stdout": bytes(buffers["stdout"][:cap]),
        "stderr": bytes(buffers["stderr"][:cap]),
    }


def run_job(job: dict[str, Any], uid: int | None, workroot: str, seq: int) -> dict[str, Any]:
    jobdir = os.path.join(workroot, f"job-{os.getpid()}-{seq}")
    os.mkdir(jobdir, 0o700)
    program = os.path.join(jobdir, "program.pl")
    with open(program, "w", encoding="utf-8") as fh:
        fh.write(job["program"])
    if uid is not None:
        os.chown(jobdir, uid, uid)
        os.chown(program, uid, uid)
    env = {"PATH": "/usr/bin:/bin", "HOME": jobdir, "TMPDIR": jobdir, "LANG": "C.UTF-8"}
    argv = [
        job.get("swipl", "swipl"),
        f"--stack-limit={int(job['stack_mb'])}m",
        "--no-packs",  # add-ons are not part of the benchmark's Prolog, and scanning costs
        "-q",
        "-f",
        program,
        "-t",
        "halt",
    ]
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=jobdir,
            env=env,
            start_new_session=True,
            user=uid,
            group=uid,
            extra_groups=[] if uid is not None else None,
            preexec_fn=_limits_preexec(job),
            close_fds=True,
        )
    except OSError as exc:
        shutil.rmtree(jobdir, ignore_errors=True)
        return {"error": f"could not start swipl: {exc}", "wall_s": 0.0}
    captured = _read_capped(proc, job, started)
    if captured["limit"] is not None:
        kill_everything(uid, keep=proc.pid)
    try:
        returncode = proc.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        kill_everything(uid, keep=proc.pid)
        returncode = proc.wait()
    wall = time.monotonic() - started
    leftovers = kill_everything(uid)
    _clean(jobdir, uid)
    return {
        "exit_code": returncode if returncode >= 0 else None,
        "signal": -returncode if returncode < 0 else None,
        "limit": captured["limit"],
        "stdout": captured["stdout"].decode("utf-8", "replace"),
        "stderr": captured["stderr"].decode("utf-8", "replace"),
        "wall_s": round(wall, 6),
        "leftover_processes": leftovers,
    }


def _clean(jobdir: str, uid: int | None) -> None:
    """Remove the job's directory and anything the job left in shared scratch places."""
    _rmtree(jobdir)
    for scratch in SCRATCH_DIRS:
        try:
            entries = os.listdir(scratch)
        except OSError:
            continue
        for name in entries:
            path = os.path.join(scratch, name)
            try:
                owner = os.lstat(path).st_uid
            except OSError:
                continue
            # In our own sandbox everything there is the job's; outside it, only the
            # job uid's files are (when we have one).
            if (uid is not None and owner == uid) or (uid is None and _in_sandbox()):
                _rmtree(path)


def _rmtree(path: str) -> None:
    def unlock(func: Any, target: str, _exc: Any) -> None:
        try:
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
            func(target)
        except OSError:
            pass

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, onerror=unlock)
    else:
        try:
            os.unlink(path)
        except OSError:
            pass


def _in_sandbox() -> bool:
    return os.environ.get("DEONTICBENCH_SANDBOX") == "bwrap"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uid", type=int, default=None)
    parser.add_argument("--workdir")
    parser.add_argument("--check", action="store_true", help="exit at once: the sandbox probe")
    args = parser.parse_args()
    if args.check:
        return
    _set_subreaper()
    os.makedirs(args.workdir, mode=0o711, exist_ok=True)
    if args.uid is not None:
        kill_everything(args.uid)  # a previous worker's leftovers under our uid
    out = sys.stdout
    seq = 0
    out.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        seq += 1
        try:
            result = run_job(json.loads(line), args.uid, args.workdir, seq)
        except Exception as exc:  # the supervisor must survive any one job
            kill_everything(args.uid)
            result = {"error": f"supervisor: {type(exc).__name__}: {exc}", "wall_s": 0.0}
        out.write(json.dumps(result) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
