"""Shared by every test folder: the helpers in ``tests/support/`` (loopback fake providers
and hub, the browser driver, hostile programs, inspect's scripted model) import by name,
and the two test loops' rules (``fast_loop``: README, "Development") apply.

Under pytest-xdist each worker has a temporary folder of its own, so that tests which
check what a run left in the temporary folder see only their own worker's files."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

SUPPORT = Path(__file__).resolve().parent / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

pytest_plugins = ["fast_loop"]

# The suite starts hundreds of Python processes (the CLI, upstream's scripts, the fakes'
# servers).  Where the environment turns bytecode caching off (PYTHONDONTWRITEBYTECODE, as
# on the project's machines), each of them compiles every module of the package it
# imports again: about a third of a CLI command's start-up.  The tests cache bytecode as
# Python does by default; nothing is written that git does not ignore.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

_WORKER_TMP = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        # Short: Ray's socket paths under the temporary folder must stay under 107 bytes.
        folder = tempfile.mkdtemp(prefix=f"{worker}-", dir="/tmp")
        # As /tmp is: an rlimits sandbox's jobs run under other uids and must reach the
        # folders their workers make here.
        os.chmod(folder, 0o1777)
        config.stash[_WORKER_TMP] = folder
        os.environ["TMPDIR"] = folder
        tempfile.tempdir = None  # gettempdir() reads TMPDIR again


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = config.stash.get(_WORKER_TMP, None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
