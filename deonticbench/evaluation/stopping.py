"""A run stopped by Ctrl-C or SIGTERM stops cleanly: the signal cancels the running task
once (``arun`` then keeps every finished record and says ``interrupted``), and a second
signal does not break the clean-up."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stopped_by_signals(say: Callable[[str], None]) -> Iterator[None]:
    """Within the block, Ctrl-C or SIGTERM cancels the current task once, after ``say``
    tells the user; the handlers are removed when the block ends.  Call it from the
    task to be stopped, inside a running event loop."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    stopping = False

    def stop() -> None:
        nonlocal stopping
        if stopping:
            return  # already stopping; a second Ctrl-C must not break the clean-up
        stopping = True
        say("stopping: finished records are kept...")
        task.cancel()

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop)
    try:
        yield
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)


__all__ = ["STOP_SIGNALS", "stopped_by_signals"]
