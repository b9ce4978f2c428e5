"""The live progress block in a real pseudo-terminal: tmux runs the program at a given
size, and ``capture-pane`` reads back the screen and its scrollback.

tmux is a required system package (scripts/system-deps.sh); the test is skipped only on a
machine without it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deonticbench.data.domains import DOMAINS
from deonticbench.vocabulary.modes import MODES

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed")

# A real LiveProgress on the pane's terminal, redrawing after every record (the redraw
# interval set to 0), with every domain x mode of the paper: 15 rows of about 95
# characters, wider than 80 columns and taller than a 10-row terminal.
DRIVER = r"""
import sys
from deonticbench.evaluation import progress
from deonticbench.data.domains import DOMAINS
from deonticbench.vocabulary.modes import MODES
from deonticbench.store.record import Attempt, Record

progress._REDRAW_S = 0.0
live = progress.LiveProgress()
assert live.tty, "stderr must be the pane's terminal"
keys = [(d, m) for d in DOMAINS for m in MODES]
live.started({key: 20 for key in keys}, [])
for sample in range(20):
    for domain, mode in keys:
        attempt = Attempt(index=0, prompt_hash="p", response="r", outcome="correct",
                          tokens_in=123_456, tokens_out=54_321)
        live.recorded(Record(domain, f"c{sample}", mode, 0, 1, "m", [attempt]))
live.finish()
print("__END__", flush=True)
"""


@pytest.fixture
def driver(tmp_path: Path) -> Path:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    return script


@pytest.fixture
def tmux() -> Iterator[list[str]]:
    """A private tmux server on its own socket, killed afterwards and its socket removed.
    (A short folder of its own: a socket path must stay under about 100 bytes.)"""
    assert TMUX is not None
    folder = Path(tempfile.mkdtemp(prefix="dbtmux-"))
    command = [TMUX, "-S", str(folder / "s"), "-f", "/dev/null"]
    try:
        yield command
    finally:
        subprocess.run([*command, "kill-server"], capture_output=True, timeout=10)
        shutil.rmtree(folder, ignore_errors=True)


def run_in_pane(tmux: list[str], columns: int, rows: int, script: Path) -> list[str]:
    """Run a Python script in a detached pane of ``columns`` x ``rows``; return every
    row of the pane's history and screen once it has printed __END__."""
    shell = f"'{sys.executable}' '{script}'; sleep 60"
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    environment.pop("COLUMNS", None)
    environment.pop("LINES", None)
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "p", "-x", str(columns), "-y", str(rows), shell],
        env=environment,
        check=True,
        timeout=10,
    )
    deadline = time.monotonic() + 30
    shown = ""
    while time.monotonic() < deadline:
        shown = subprocess.run(
            [*tmux, "capture-pane", "-p", "-t", "p", "-S", "-", "-E", "-"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout
        if "__END__" in shown:
            return shown.rstrip("\n").splitlines()
        time.sleep(0.1)
    raise AssertionError(f"the program never finished; the pane shows:\n{shown}")


def row_label(domain: str, mode: str) -> str:
    return f"{domain:<13} {mode:<9}"


@pytest.mark.parametrize(("columns", "rows"), [(80, 24), (160, 50)])
def test_the_block_is_drawn_once_whatever_the_width(
    tmux: list[str], driver: Path, columns: int, rows: int
) -> None:
    screen = run_in_pane(tmux, columns, rows, driver)
    assert all(len(line) <= columns for line in screen)
    # Redrawn in place 300 times, and yet every row is in the history exactly once: no
    # stale copies of the block in the scrollback.
    for domain in DOMAINS:
        for mode in MODES:
            copies = [line for line in screen if line.startswith(row_label(domain, mode))]
            assert len(copies) == 1, (domain, mode, copies)
            assert "20/20" in copies[0]
    totals = [line for line in screen if "samples, eta" in line]
    assert totals == ["300/300 samples, eta done"]
    if columns >= 160:  # wide enough: nothing was cut
        assert all("tok in/out 2.5M/1.1M" in line for line in screen if " acc " in line)


def test_a_block_taller_than_the_terminal_is_folded_not_scrolled(
    tmux: list[str], driver: Path
) -> None:
    screen = run_in_pane(tmux, 80, 10, driver)
    assert all(len(line) <= 80 for line in screen)
    rows_shown = [line for line in screen if " acc " in line]
    # 9 screen rows for the block (one is the cursor's): 7 rows, the fold line, the total.
    assert len(rows_shown) == 7
    assert len(set(rows_shown)) == 7
    folds = [line for line in screen if "more domain x mode rows" in line]
    assert folds == ["... 8 more domain x mode rows"]
    assert [line for line in screen if "samples, eta" in line] == ["300/300 samples, eta done"]
