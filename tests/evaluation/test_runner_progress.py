"""The live progress display and the closing summary table."""

from __future__ import annotations

import io

from deonticbench.evaluation.progress import LiveProgress, summary_rows, summary_table
from deonticbench.store.record import Attempt, Record


def record(case: str, mode: str, outcomes: list[str], *, error: bool = False) -> Record:
    attempts = [
        Attempt(
            index=i,
            prompt_hash="p",
            response=None if error else "text",
            error="HTTP 500 after 6 tries" if error else None,
            outcome=o,  # type: ignore[arg-type]
            tokens_in=100,
            tokens_out=10,
        )
        for i, o in enumerate(outcomes)
    ]
    return Record("airline", case, mode, 0, 5, "m", attempts)  # type: ignore[arg-type]


def test_summary_counts_final_and_first_attempt_outcomes() -> None:
    records = [
        record("a", "zero-shot", ["abstain", "correct"]),
        record("b", "zero-shot", ["wrong"]),
        record("c", "zero-shot", ["correct"]),
        record("d", "zero-shot", ["abstain", "abstain"], error=True),
        record("a", "direct", ["correct"]),
    ]
    rows = {r.mode: r for r in summary_rows(records)}
    zs = rows["zero-shot"]
    assert (zs.n, zs.correct, zs.wrong, zs.abstain, zs.retried, zs.errors) == (4, 2, 1, 1, 2, 1)
    assert zs.accuracy == 0.5 and zs.first_accuracy == 0.25
    table = summary_table(records, order=["airline"])
    lines = table.splitlines()
    # direct before zero-shot, whatever order the records came in
    assert lines[2].split()[:2] == ["airline", "direct"]
    assert lines[3].split()[-3:] == ["50.0%", "25.0%", "2"]


def test_plain_progress_prints_whole_lines_without_terminal_codes() -> None:
    stream = io.StringIO()
    progress = LiveProgress(stream, tty=False)
    progress.started({("airline", "zero-shot"): 3}, [record("a", "zero-shot", ["correct"])])
    progress.recorded(record("b", "zero-shot", ["wrong"]))
    progress.recorded(record("c", "zero-shot", ["correct"]))
    out = stream.getvalue()
    assert "\x1b" not in out
    assert "resuming: 1 of 3 samples already done" in out
    last = out.strip().splitlines()[-1]
    assert "3/3" in last and "66.7%" in last and "eta done" in last
    # Tokens of records from an earlier session are not counted as spent now.
    assert "in/out 200/20" in last


def test_terminal_progress_redraws_in_place() -> None:
    stream = io.StringIO()
    progress = LiveProgress(stream, tty=True)
    progress.started({("airline", "direct"): 2, ("airline", "zero-shot"): 2}, [])
    progress.recorded(record("a", "direct", ["correct"]))
    progress.finish()
    out = stream.getvalue()
    # Each redraw after the first moves up over the block it drew (3 lines) and
    # overwrites each row, clearing the rest of it.
    assert "\x1b[3F" in out
    assert out.endswith("1/4 samples, eta " + progress.eta() + "\x1b[K\n")


def test_the_block_fits_the_terminal() -> None:
    from deonticbench.evaluation.progress import fit_block

    rows = [f"row {i} " + "x" * 200 for i in range(15)]
    wide = fit_block(rows, "total", 160, 50)
    assert len(wide) == 16 and all(len(line) <= 159 for line in wide)
    folded = fit_block(rows, "total", 80, 10)
    assert len(folded) == 9 and folded[-2:] == ["... 8 more domain x mode rows", "total"]
    assert all(len(line) <= 79 for line in folded)
    assert fit_block(rows, "total", 80, 3) == ["... 15 more domain x mode rows", "total"]
    assert fit_block(rows, "total", 80, 2) == ["total"]


def test_an_agent_only_summary_has_no_first_attempt_or_retry_columns() -> None:
    """A trial never retries: "first acc" and "retried" would mean nothing for it."""
    records = [
        record("a", "agent-zero-shot", ["correct"]),
        record("b", "agent-zero-shot", ["wrong"]),
    ]
    table = summary_table(records)
    header = table.splitlines()[0].split()
    assert header[-1] == "acc" and "first" not in header and "retried" not in header
    assert "first acc" not in table.splitlines()[-1]


def test_a_mixed_summary_dashes_the_retry_columns_of_its_agentic_rows() -> None:
    records = [
        record("a", "zero-shot", ["abstain", "correct"]),
        record("a", "agent-zero-shot", ["correct"]),
    ]
    lines = summary_table(records).splitlines()
    assert lines[0].split()[-3:] == ["first", "acc", "retried"]
    agent = next(line for line in lines if "agent-zero-shot" in line)
    assert agent.split()[-2:] == ["—", "—"]


def test_the_summary_footer_calls_attempt_zero_the_first_attempt() -> None:
    """The word "paper" names the paper's protocol, never the first attempt."""
    table = summary_table([record("a", "direct", ["wrong", "correct"])])
    footer = table.splitlines()[-1]
    assert "first acc: on the first attempt; " in footer
    assert "paper" not in footer
