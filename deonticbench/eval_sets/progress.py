"""One display for every run of a set: a line per run (samples done of its total, its
running accuracy, request errors, dollars spent and its state) and the set's line
(samples, dollars against the cap).  On a terminal the block is redrawn in place; on a
log a run's line is printed when it passes another tenth, starts or ends."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from ..evaluation import progress as run_progress
from ..store.record import Record

if TYPE_CHECKING:
    from ..evaluation.spending import Budget
    from ..store.folder import RunFolder

_REDRAW_S = 0.25
_PLAIN_S = 5.0

__all__ = ["SetProgress"]


@dataclass
class _RunLine:
    name: str
    state: str = "waiting"
    total: int = 0
    done: int = 0
    correct: int = 0
    errors: int = 0
    shown_tenths: int = -1
    shown_at: float = 0.0


class _RunObserver:
    """The runner's observer for one run of the set (``runner.Observer``, with the
    folder observer's ``note`` and ``opened``)."""

    def __init__(self, display: SetProgress, line: _RunLine) -> None:
        self.display, self.line = display, line

    def started(self, totals: Mapping[tuple[str, str], int], done: Iterable[Record]) -> None:
        line = self.line
        line.total = sum(totals.values())
        kept = list(done)
        line.done = len(kept)
        line.correct = sum(1 for r in kept if r.final.outcome == "correct")
        line.errors = sum(1 for r in kept if r.final.error is not None)
        line.state = "running"
        self.display.changed(line, force=True)

    def recorded(self, record: Record) -> None:
        line = self.line
        line.done += 1
        line.correct += 1 if record.final.outcome == "correct" else 0
        line.errors += 1 if record.final.error is not None else 0
        self.display.changed(line, force=False)

    def note(self, text: str) -> None:
        self.display.say(f"{self.line.name}: {text}")

    def opened(self, run: RunFolder) -> None:
        self.display.say(f"{self.line.name}: run folder {run.path}")


class SetProgress:
    """The set's live display (stderr unless told otherwise)."""

    def __init__(self, stream: TextIO | None = None, *, tty: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.lines: dict[str, _RunLine] = {}
        self.budget: Budget | None = None
        self._drawn = 0
        self._last_draw = 0.0
        self._sizer = run_progress.LiveProgress(self.stream, tty=self.tty)

    def observer(self, name: str) -> _RunObserver:
        line = self.lines.setdefault(name, _RunLine(name))
        return _RunObserver(self, line)

    def state(self, name: str, state: str) -> None:
        line = self.lines.setdefault(name, _RunLine(name))
        line.state = state
        self.changed(line, force=True)

    def say(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
        self._drawn = 0

    def finish(self) -> None:
        if self.tty:
            self._redraw(force=True)

    def changed(self, line: _RunLine, *, force: bool) -> None:
        if self.tty:
            self._redraw(force=force)
            return
        tenths = (10 * line.done) // max(line.total, 1)
        now = time.monotonic()
        ended = line.state != "running" or line.done == line.total
        if force or ended or (tenths > line.shown_tenths and now - line.shown_at >= _PLAIN_S):
            if (line.shown_tenths, line.state) == (tenths, "done") and not force:
                return
            line.shown_tenths, line.shown_at = tenths, now
            self.say(self._line(line))

    def _line(self, line: _RunLine) -> str:
        wide = max([4, *(len(n) for n in self.lines)])
        accuracy = f"{100 * line.correct / line.done:5.1f}%" if line.done else "    -"
        spent = self._spent(line.name)
        return (
            f"{line.name:<{wide}}  {line.state:<11} {line.done:>6}/{line.total:<6} "
            f"correct {accuracy}  errors {line.errors:<4} {spent}"
        )

    def _spent(self, name: str) -> str:
        if self.budget is None:
            return ""
        if name in self.budget.unpriced:
            return "unpriced"
        return f"${self.budget.spent_by_run.get(name, 0.0):,.4f}"

    def _total_line(self) -> str:
        done = sum(line.done for line in self.lines.values())
        total = sum(line.total for line in self.lines.values())
        text = f"set: {done}/{total} samples"
        if self.budget is not None:
            text += f", ${self.budget.spent_usd:,.4f} spent"
            if self.budget.cap_usd is not None:
                text += f" of ${self.budget.cap_usd:,.2f}"
        return text

    def _redraw(self, *, force: bool) -> None:
        now = time.monotonic()
        if not force and now - self._last_draw < _REDRAW_S:
            return
        self._last_draw = now
        columns, rows = self._sizer._terminal_size()
        block = run_progress.fit_block(
            [self._line(line) for line in self.lines.values()], self._total_line(), columns, rows
        )
        out = [f"\x1b[{self._drawn}F"] if self._drawn else []
        out.extend(f"{text}\x1b[K\n" for text in block)
        if len(block) < self._drawn:
            out.append("\x1b[J")
        self.stream.write("".join(out))
        self.stream.flush()
        self._drawn = len(block)
