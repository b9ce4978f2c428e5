"""Showing a run as it goes, and the table at its end.

``LiveProgress`` is a runner observer.  On a terminal it redraws one line per domain x
mode in place (at most a few times a second); when stderr is a file or a pipe (CI, nohup)
it prints a plain line whenever a domain x mode passes another tenth of its samples, so
logs stay short and readable.  ``summary_table`` is computed from records alone, so it
describes resumed runs the same as fresh ones.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from ..store.record import Record
from ..vocabulary.modes import is_agentic, mode_rank

if TYPE_CHECKING:
    from ..store.folder import RunFolder
    from .batching import BatchStats

_REDRAW_S = 0.25
_PLAIN_S = 5.0


@dataclass
class _Row:
    total: int
    done: int = 0
    correct: int = 0
    first_correct: int = 0
    abstain: int = 0
    errors: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    shown_tenths: int = -1
    shown_at: float = 0.0

    def add(self, record: Record, *, spent: bool) -> None:
        self.done += 1
        final = record.final
        self.correct += final.outcome == "correct"
        self.first_correct += record.first.outcome == "correct"
        self.abstain += final.outcome == "abstain"
        self.errors += final.error is not None
        if spent:
            # Tokens of cached responses were paid for by an earlier run.
            for a in record.attempts:
                if not a.cached:
                    self.tokens_in += a.tokens_in
                    self.tokens_out += a.tokens_out

    def accuracy(self) -> str:
        return f"{100 * self.correct / self.done:5.1f}%" if self.done else "    -"

    def first_accuracy(self) -> str:
        return f"{100 * self.first_correct / self.done:5.1f}%" if self.done else "    -"


class LiveProgress:
    """Per domain x mode: done/total, running accuracy (final and first attempt),
    abstentions, request errors, tokens spent in this session, and an ETA."""

    def __init__(self, stream: TextIO | None = None, *, tty: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.rows: dict[tuple[str, str], _Row] = {}
        self._start = time.monotonic()
        self._new = 0
        self._drawn_lines = 0
        self._last_draw = 0.0

    # observer interface --------------------------------------------------------------

    def started(self, totals: Mapping[tuple[str, str], int], done: Iterable[Record]) -> None:
        self.rows = {key: _Row(total) for key, total in totals.items()}
        self._start = time.monotonic()
        for record in done:
            row = self.rows.get((record.domain, record.mode))
            if row is not None:
                row.add(record, spent=False)
        resumed = sum(r.done for r in self.rows.values())
        if resumed:
            self._print(f"resuming: {resumed} of {self._total()} samples already done")
        self._refresh(force=True)

    def recorded(self, record: Record) -> None:
        row = self.rows.get((record.domain, record.mode))
        if row is None:
            return
        row.add(record, spent=True)
        self._new += 1
        if self.tty:
            self._refresh(force=False)
        else:
            # A line per tenth of a row, but not more often than every few seconds
            # (small rows would print every record); the row's last line always shows.
            tenths = (10 * row.done) // max(row.total, 1)
            now = time.monotonic()
            finished = row.done == row.total
            if finished or (tenths > row.shown_tenths and now - row.shown_at >= _PLAIN_S):
                row.shown_tenths, row.shown_at = tenths, now
                self._print(self._line(record.domain, record.mode, row))

    def finish(self) -> None:
        if self.tty:
            self._refresh(force=True)

    # drawing ------------------------------------------------------------------------

    def _total(self) -> int:
        return sum(r.total for r in self.rows.values())

    def _done(self) -> int:
        return sum(r.done for r in self.rows.values())

    def eta(self) -> str:
        remaining = self._total() - self._done()
        if remaining <= 0:
            return "done"
        elapsed = time.monotonic() - self._start
        if self._new == 0 or elapsed <= 0:
            return "--"
        return _duration(remaining * elapsed / self._new)

    def _line(self, domain: str, mode: str, row: _Row, *, eta: bool = True) -> str:
        errors = f" err {row.errors}" if row.errors else ""
        line = (
            f"{domain:<13} {mode:<9} {row.done:>5}/{row.total:<5} acc {row.accuracy()} "
            f"(first {row.first_accuracy()}) abst {row.abstain:>4}{errors} "
            f"tok in/out {_count(row.tokens_in)}/{_count(row.tokens_out)}"
        )
        # The ETA is the whole run's; on a terminal it has its own line.
        return f"{line}  eta {self.eta()}" if eta else line

    def _refresh(self, *, force: bool) -> None:
        if not self.tty:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < _REDRAW_S:
            return
        self._last_draw = now
        columns, rows = self._terminal_size()
        lines = fit_block(self._block_rows(), self._total_line(), columns, rows)
        out = []
        if self._drawn_lines:
            # Back to the first screen row we drew: every line is one row (none wraps),
            # and the block never outgrows the screen, so this count is exact.
            out.append(f"\x1b[{self._drawn_lines}F")
        # Each line overwrites its row and clears the rest of it.  Not one "clear to the
        # end of the screen" from the top: with the block at the top-left corner, tmux
        # (and some other terminals) push the whole screen into the scrollback for it.
        out.extend(f"{line}\x1b[K\n" for line in lines)
        if len(lines) < self._drawn_lines:
            out.append("\x1b[J")  # a shorter block: clear what is left below it
        self.stream.write("".join(out))
        self.stream.flush()
        self._drawn_lines = len(lines)

    def _block_rows(self) -> list[str]:
        return [self._line(d, m, row, eta=False) for (d, m), row in self.rows.items()]

    def _total_line(self) -> str:
        return f"{self._done()}/{self._total()} samples, eta {self.eta()}"

    def _terminal_size(self) -> tuple[int, int]:
        """The size of the terminal the stream writes to, asked at every redraw (a window
        may be resized); the environment's COLUMNS/LINES or 80x24 when it cannot tell."""
        try:
            size = os.get_terminal_size(self.stream.fileno())
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            size = shutil.get_terminal_size((80, 24))
        return max(size.columns, 20), max(size.lines, 3)

    def _print(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()
        # A plain line scrolls the live block away: start a new block below it.
        self._drawn_lines = 0


class ConsoleProgress(LiveProgress):
    """The live display of ``deonticbench eval``, plus what the folder held when it was
    opened, the runner's notes, and under ``--batch`` the batches in flight."""

    batch_line = ""
    """``eval --batch``: batches in flight, requests pending / done / failed, elapsed."""

    def note(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def batches(self, stats: BatchStats) -> None:
        line = stats.line()
        if self.tty:
            self.batch_line = line
            self._refresh(force=False)
        elif line.split(",")[:2] != self.batch_line.split(",")[:2]:
            # On a log, a line when the counts move (not every second of elapsed time).
            self.batch_line = line
            self._print(line)

    def _total_line(self) -> str:
        total = super()._total_line()
        return f"{total} | {self.batch_line}" if self.batch_line and self.tty else total

    def opened(self, run: RunFolder) -> None:
        if run.loaded.truncated:
            self.note("note: cut a truncated last line from records.jsonl (crash).")
        if run.loaded.dropped_errors:
            self.note(f"redoing {run.loaded.dropped_errors} samples whose last request failed.")
        self.note(f"run folder: {run.path}")


def fit_block(lines: list[str], total: str, columns: int, rows: int) -> list[str]:
    """The live block as it fits a ``columns`` x ``rows`` terminal: each line cut to the
    width (a wrapped line would take two screen rows, and the redraw, which moves up one
    row per line, would leave copies behind), and folded when it has more lines than the
    screen less one row (the cursor's): the first rows, then one line counting the rest,
    then the total."""
    width = columns - 1  # never the last column: some terminals wrap as soon as it is used

    def cut(line: str) -> str:
        return line[:width]

    room = rows - 1
    if len(lines) + 1 > room:
        keep = max(room - 2, 0)
        hidden = len(lines) - keep
        lines = [*lines[:keep], f"... {hidden} more domain x mode rows"]
        if len(lines) + 1 > room:  # a terminal of two or three rows: the total alone
            lines = []
    return [cut(line) for line in [*lines, total]]


def _count(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}k"
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


# --- the closing table ----------------------------------------------------------------


@dataclass(frozen=True)
class SummaryRow:
    domain: str
    mode: str
    n: int
    correct: int
    wrong: int
    abstain: int
    first_correct: int
    retried: int
    errors: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else 0.0

    @property
    def first_accuracy(self) -> float:
        return self.first_correct / self.n if self.n else 0.0


def summary_rows(records: Iterable[Record], *, order: Iterable[str] = ()) -> list[SummaryRow]:
    """Per domain x mode: counts of final outcomes and of first-attempt successes;
    domains in ``order`` first (the paper's column order), then by name."""
    groups: dict[tuple[str, str], list[Record]] = {}
    for record in records:
        groups.setdefault((record.domain, record.mode), []).append(record)
    rank = {name: i for i, name in enumerate(order)}
    rows = []
    for (domain, mode), group in groups.items():
        finals = [r.final.outcome for r in group]
        rows.append(
            SummaryRow(
                domain=domain,
                mode=mode,
                n=len(group),
                correct=finals.count("correct"),
                wrong=finals.count("wrong"),
                abstain=finals.count("abstain"),
                first_correct=sum(r.first.outcome == "correct" for r in group),
                retried=sum(len(r.attempts) > 1 for r in group),
                errors=sum(r.final.error is not None for r in group),
            )
        )
    rows.sort(key=lambda r: (rank.get(r.domain, len(rank)), r.domain, mode_rank(r.mode)))
    return rows


def summary_table(records: Iterable[Record], *, order: Iterable[str] = ()) -> str:
    """A plain-text table of ``summary_rows``.  A trial is never retried, so the first
    attempt's accuracy and the retry count are shown only for prompted rows: an agentic
    row has a dash there, and a run of agentic modes alone has neither column."""
    rows = summary_rows(records, order=order)
    if not rows:
        return "no records"
    retrying = any(not is_agentic(r.mode) for r in rows)
    header: tuple[str, ...] = ("domain", "mode", "n", "correct", "wrong", "abstain", "errors")
    header += ("acc", "first acc", "retried") if retrying else ("acc",)
    body = []
    for r in rows:
        row: tuple[str, ...] = (
            r.domain,
            r.mode,
            str(r.n),
            str(r.correct),
            str(r.wrong),
            str(r.abstain),
            str(r.errors),
            f"{100 * r.accuracy:.1f}%",
        )
        if retrying:
            trial = is_agentic(r.mode)
            row += (
                "—" if trial else f"{100 * r.first_accuracy:.1f}%",
                "—" if trial else str(r.retried),
            )
        body.append(row)
    widths = [max(len(row[i]) for row in (header, *body)) for i in range(len(header))]

    def fmt(row: tuple[str, ...]) -> str:
        cells = [
            c.ljust(w) if i < 2 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        return "  ".join(cells).rstrip()

    lines = [fmt(header), fmt(tuple("-" * w for w in widths)), *(fmt(row) for row in body)]
    legend = (
        "acc: share of samples answered correctly after all attempts; first acc: on the "
        "first attempt; "
        if retrying
        else "acc: share of trials whose final program answered correctly; "
    )
    lines.append(
        legend + "errors: samples whose last request failed. "
        "Paper metrics (macro-F1 for binary domains, bootstrap CIs): deonticbench score."
    )
    return "\n".join(lines)
