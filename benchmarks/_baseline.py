"""The baseline every executor benchmark measures against: a plain one-after-another
``swipl -q -f`` loop over program files, no sandbox, no answer reading."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path


def plain_loop(paths: list[Path]) -> float:
    """Seconds to run every program in ``paths`` with a fresh ``swipl``, one at a time."""
    started = time.perf_counter()
    for path in paths:
        subprocess.run(
            ["swipl", "-q", "-f", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
        )
    return time.perf_counter() - started
