"""The code, tests, benchmarks, scripts and docs state what is, not how it came to be.

A docstring, comment or doc page names no tracker issue by its number and tells no story
of what earlier code did or where the work goes next: a test docstring says what the test
checks, a comment why the code is as it is, a benchmark its goal.  The history is kept in
CHANGELOG.md and git, which this test does not read; nor does it read the tests' data
files (fixtures, golden runs).

The patterns are spelled with ``[ ]`` for a space, so that this file does not match them.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("deonticbench", "benchmarks", "scripts", "docs")
PROSE_SUFFIXES = {".py", ".md", ".sh", ".html", ".js", ".css", ".toml", ".txt"}
HISTORY = {
    "an issue number": re.compile(r"\bissues?[ ]\d+\b", re.IGNORECASE),
    "a next stop": re.compile(r"\bthe[ ]next[ ]stop\b", re.IGNORECASE),
    "a story of earlier code": re.compile(r"\bthe[ ]code[ ]before\b", re.IGNORECASE),
}


def _prose_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder in FOLDERS:
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in PROSE_SUFFIXES]
    # Only the tests' Python files: the rest of tests/ is data (fixtures, golden runs).
    files += (ROOT / "tests").rglob("*.py")
    return sorted(p for p in files if p.is_file() and "__pycache__" not in p.parts)


def test_no_prose_narrates_history() -> None:
    found = []
    for path in _prose_files():
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for number, line in enumerate(lines, 1):
            for what, pattern in HISTORY.items():
                if pattern.search(line):
                    where = path.relative_to(ROOT)
                    found.append(f"{where}:{number}: {what}: {line.strip()[:120]}")
    why = "state what is (history belongs in CHANGELOG.md and git):\n"
    assert not found, why + "\n".join(found)


def test_the_scan_sees_the_tree() -> None:
    files = {p.relative_to(ROOT).as_posix() for p in _prose_files()}
    assert {"README.md", "docs/architecture.md", "tests/test_prose.py"} <= files
    assert "CHANGELOG.md" not in files
    assert not any(f.startswith("tests/") and not f.endswith(".py") for f in files)
