"""The process inside a ``BwrapEnvironment`` sandbox that runs Harbor's commands.

Started once per environment as ``python3 -I -S _exec_server.py SOCKET CPUS MEMORY_MB``
inside bubblewrap; it listens on a Unix socket in the environment's root folder and runs
each command it is sent as ``bash -c`` in its own process group, so that every command
shares one sandbox (one PID namespace: a tmux server started by one command is there for
the next) and dies with it.  One JSON request per connection (command, cwd, env,
timeout), one JSON reply (stdout, stderr, return code, whether it timed out).  A client
that goes away (Harbor cancelled the call) kills its command.

Standard library only, and no import of the package: it runs as a bare script.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
from typing import Any

BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "LANG": "C.UTF-8",
    "TERM": "xterm",
}


def _limit_resources(cpus: int, memory_mb: int) -> None:
    """The task's limits, inherited by every command: its CPU count as an affinity mask
    (cgroups need privileges this sandbox does not assume) and its memory as each
    process's address space."""
    if cpus > 0 and hasattr(os, "sched_setaffinity"):
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, allowed[: max(1, cpus)])
    if memory_mb > 0:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _read_request(conn: socket.socket) -> dict[str, Any]:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    request: dict[str, Any] = json.loads(data)
    return request


def _serve(conn: socket.socket) -> None:
    with conn:
        request = _read_request(conn)
        env = {**BASE_ENV, **(request.get("env") or {})}
        cwd = request.get("cwd") or "/"
        try:
            proc = subprocess.Popen(
                ["bash", "-c", request["command"]],
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            reply = {"stdout": "", "stderr": f"cannot run bash in {cwd}: {exc}", "rc": 127}
            conn.sendall(json.dumps(reply).encode() + b"\n")
            return
        finished = threading.Event()

        def watch_client() -> None:
            # The client sends nothing more: an empty read means it went away.
            try:
                conn.recv(1)
            except OSError:
                pass
            if not finished.is_set():
                _kill_group(proc.pid)

        threading.Thread(target=watch_client, daemon=True).start()
        timed_out = False
        try:
            out, err = proc.communicate(timeout=request.get("timeout"))
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc.pid)
            out, err = proc.communicate()
        finished.set()
        reply = {
            "stdout": out.decode("utf-8", "replace"),
            "stderr": err.decode("utf-8", "replace"),
            "rc": proc.returncode,
            "timed_out": timed_out,
        }
        try:
            conn.sendall(json.dumps(reply).encode() + b"\n")
        except OSError:
            pass


def main() -> None:
    path, cpus, memory_mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    _limit_resources(cpus, memory_mb)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
