"""The harness's sandbox pool, shared by every sample of a process: programs run in
warm sandboxed workers exactly as in ``deonticbench eval`` (no Docker, no inspect
sandbox), one pool per set of limits, closed when the process exits."""

from __future__ import annotations

import asyncio
import atexit
import functools
import threading
from concurrent.futures import ThreadPoolExecutor

from ...solver import Execution, Limits, Solver, Toplevel

_pools: dict[Limits, tuple[Solver, ThreadPoolExecutor]] = {}
_pools_lock = threading.Lock()


def _pool(limits: Limits) -> tuple[Solver, ThreadPoolExecutor]:
    with _pools_lock:
        if limits not in _pools:
            solver = Solver(limits=limits)
            # Executions wait for a worker in threads of their own, as many as workers,
            # so that a queue of programs never holds the event loop's default threads.
            threads = ThreadPoolExecutor(solver.size, thread_name_prefix="deonticbench-sandbox")
            _pools[limits] = (solver, threads)
        return _pools[limits]


async def execute(program: str, timeout: float, toplevel: Toplevel = "halt") -> Execution:
    """Run a program in the harness's sandbox pool (one per process and limits), as the
    reader that reads it says (``toplevel``)."""
    solver, threads = _pool(Limits(timeout_s=float(timeout)))
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(
        threads, functools.partial(solver.run, program, toplevel=toplevel)
    )


@atexit.register
def _close_pools() -> None:
    with _pools_lock:
        for solver, threads in _pools.values():
            threads.shutdown(wait=False, cancel_futures=True)
            solver.close()
        _pools.clear()
