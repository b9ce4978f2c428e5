"""Work done once per test session and read by many tests, under pytest-xdist too.

``shared_folder(factory, name, build)`` returns a folder that ``build`` filled: the first
worker to ask builds it (under a lock, in a folder of its own, renamed into place when
complete), and every other worker, and every later test, reads what it wrote.  The
folder lives beside the workers' temporary folders (pytest's ``basetemp`` of the run),
so that each run of the suite builds it afresh and never reads another run's.  What is
in it is read only: a test that changes it copies it first."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest


def _session_root(factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    # Under xdist each worker's basetemp is a folder of the controller's: share that.
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_folder(
    factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    root = _session_root(factory)
    folder = root / f"shared-{name}"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not folder.is_dir():
            partial = root / f"shared-{name}.partial"
            shutil.rmtree(partial, ignore_errors=True)  # a worker that failed half-way
            partial.mkdir()
            build(partial)
            partial.rename(folder)
    return folder
