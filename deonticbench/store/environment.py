"""The environment a run was made in: Python, packages, SWI-Prolog, the harness commit."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from .._paths import ROOT


def environment_facts() -> dict[str, Any]:
    """Versions that produced a run: Python, packages, SWI-Prolog, the harness commit."""
    # start-up: importlib.metadata and platform only when a run's provenance is written
    import platform
    from importlib import metadata

    packages: dict[str, str | None] = {}
    for name in ("deonticbench", "openai", "anthropic", "click", "numpy", "datasets"):
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None

    def run(*argv: str) -> str | None:
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = run("git", "-C", str(ROOT), "rev-parse", "HEAD")
    dirty = None
    if commit is not None:
        status = run("git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no")
        dirty = bool(status)
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": packages,
        "swipl": run("swipl", "--version"),
        "git_commit": commit,
        "git_dirty": dirty,
    }
