"""The executor: each job in a forked child when the fork server works, else in a fresh
process."""

from __future__ import annotations

import os

from .fork_server import ForkServer, ForkServerDied, ForkServerUnavailable, run_forked
from .jobs import run_job

TYPE_CHECKING = False  # typing costs its import; mypy reads the names below all the same
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# Failed starts in a row after which a worker stops trying its fork server.
_FORK_SERVER_STARTS = 3


class Executor:
    """Runs each job in a forked child when the fork server works, else in a fresh
    process; restarts a dead fork server and retries its job once.

    A job may name a file of the harness's own Prolog (``"preload": "analyse.pl"``, a
    plain name in ``prolog_dir``): it then runs in a child of a second fork server that
    loaded that file before serving, started on the first such job and kept, so a job
    that begins by loading the file finds it loaded.  Programs never run there (their
    jobs name no file), and if that server cannot start or dies, such jobs run in the
    plain server, which loads the file in each child as before."""

    def __init__(
        self,
        kind: str,
        script: str | None,
        uid: int | None,
        workroot: str,
        prolog_dir: str | None = None,
    ) -> None:
        self.uid = uid
        self.workroot = workroot
        self.script = script
        self.prolog_dir = prolog_dir
        self.preloaded: dict[str, ForkServer | None] = {}
        """Fork servers by the file they preloaded; None once one could not serve."""
        self.restarts = 0
        self.failed_starts = 0
        self.fallback: str | None = None
        self.server = (
            ForkServer(script, workroot, drops_uid=uid is not None)
            if kind == "fork" and script
            else None
        )
        self._awaited = False
        if self.server is not None:
            self._or_fall_back(self.server.launch)

    def await_ready(self) -> None:
        """Wait for the fork server launched by the constructor (if it cannot start,
        programs run in fresh processes)."""
        self._awaited = True
        if self.server is not None:
            self._or_fall_back(self.server.await_ready)

    def _or_fall_back(self, step: Callable[[], None]) -> None:
        try:
            step()
        except ForkServerUnavailable as exc:
            self._fall_back(str(exc))

    @property
    def kind(self) -> str:
        return "fork" if self.server is not None else "fresh"

    def _fall_back(self, reason: str) -> None:
        if self.server is not None:
            self.server.stop()
        self.server, self.fallback = None, reason

    def server_pids(self) -> set[int]:
        """Every running fork server of this worker (spared when a job's processes are
        killed)."""
        servers = [self.server, *self.preloaded.values()]
        return {s.pid for s in servers if s is not None and s.pid is not None}

    def _preloaded_server(self, name: object) -> ForkServer | None:
        if self.server is None or not self.prolog_dir or not self.script:
            return None
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            return None
        if name not in self.preloaded:
            path = os.path.join(self.prolog_dir, name)
            server: ForkServer | None = None
            if os.path.isfile(path):
                server = ForkServer(
                    self.script, self.workroot, preload=path, drops_uid=self.uid is not None
                )
                try:
                    server.start()
                except ForkServerUnavailable:
                    server = None
            self.preloaded[name] = server
        return self.preloaded[name]

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        """Run one job: a dead fork server is restarted and the job retried once; a
        second death is reported as the job's result."""
        if not self._awaited:
            self.await_ready()
        name = job.get("preload")
        preloaded = self._preloaded_server(name) if name is not None else None
        if preloaded is not None:
            try:
                if not preloaded.running:
                    preloaded.start()
                return self._forked(job, preloaded)
            except (ForkServerDied, ForkServerUnavailable):
                preloaded.stop()  # from now on such jobs run in the plain server
                self.preloaded[str(name)] = None
        died: list[str] = []
        while self.server is not None and len(died) < 2:
            try:
                if not self.server.running:
                    self._restart()
                return self._forked(job, self.server)
            except (ForkServerDied, ForkServerUnavailable) as exc:
                died.append(str(exc))
                if self.server is not None:
                    self.server.stop()
        if died and self.server is not None:
            return self._tag(
                {"error": f"the fork server died twice running this program: {died[-1]}"}
            )
        return self._tag(run_job(job, self.uid, self.workroot))

    def _forked(self, job: dict[str, Any], server: ForkServer) -> dict[str, Any]:
        return self._tag(run_forked(job, self.uid, self.workroot, server, self.server_pids()))

    def _restart(self) -> None:
        """Start the fork server again; after several failed starts in a row, give up on
        it and run programs in fresh processes (same results, slower)."""
        assert self.server is not None
        self.restarts += 1
        try:
            self.server.start()
        except ForkServerUnavailable as exc:
            self.failed_starts += 1
            if self.failed_starts >= _FORK_SERVER_STARTS:
                self._fall_back(str(exc))
            raise
        self.failed_starts = 0

    def _tag(self, result: dict[str, Any]) -> dict[str, Any]:
        result.setdefault("wall_s", 0.0)
        result["executor"] = self.kind
        result["fork_restarts"] = self.restarts
        return result

    def stop(self) -> None:
        for server in (self.server, *self.preloaded.values()):
            if server is not None:
                server.stop()
