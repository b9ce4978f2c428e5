"""The supervisor's command line and its loop: one JSON job per line on stdin, one JSON
result per line on stdout (see the package's docstring)."""

from __future__ import annotations

import json
import os
import sys

from .executor import Executor
from .reaping import kill_everything, set_subreaper

_OPTIONS = {
    "--uid": "uid",
    "--workdir": "workdir",
    "--executor": "executor",
    "--fork-server": "fork_server",
    "--prolog-dir": "prolog_dir",
}


class Arguments:
    """The command line the pool starts a supervisor with (pool.py writes it)."""

    def __init__(self, argv: list[str]) -> None:
        self.uid: int | None = None
        self.workdir = ""
        self.executor = "fresh"
        self.fork_server: str | None = None
        self.prolog_dir: str | None = None
        self.check = False
        words = iter(argv)
        for word in words:
            if word == "--check":
                self.check = True
                continue
            name = _OPTIONS.get(word)
            value = next(words, None)
            if name is None or value is None:
                sys.exit(f"supervisor: unknown argument or missing value: {word}")
            setattr(self, name, int(value) if name == "uid" else value)
        if self.executor not in ("fork", "fresh"):
            sys.exit(f"supervisor: unknown executor {self.executor!r}")
        if not self.check and not self.workdir:
            sys.exit("supervisor: --workdir is required")


def main() -> None:
    args = Arguments(sys.argv[1:])
    if args.check:
        return
    os.makedirs(args.workdir, mode=0o711, exist_ok=True)
    if args.uid is not None:
        kill_everything(args.uid)  # a previous worker's leftovers under our uid
    executor = Executor(args.executor, args.fork_server, args.uid, args.workdir, args.prolog_dir)
    # While the fork server boots: no job runs before this, so every process a job
    # starts, even one that escapes into a new session, stays our descendant.
    set_subreaper()
    executor.await_ready()
    out = sys.stdout
    hello = {"ready": True, "pid": os.getpid(), "executor": executor.kind}
    if executor.fallback:
        hello["fallback"] = executor.fallback
    out.write(json.dumps(hello) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            result = executor.run(json.loads(line))
        except Exception as exc:  # the supervisor must survive any one job
            kill_everything(args.uid, spare=executor.server_pids())
            result = {"error": f"supervisor: {type(exc).__name__}: {exc}", "wall_s": 0.0}
        out.write(json.dumps(result) + "\n")
        out.flush()
    executor.stop()
