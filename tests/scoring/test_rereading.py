"""``score --reading`` and the reader sensitivity, on a run folder of saved replies.

The run is made by ``eval`` under ``--protocol harness`` from a replay file whose replies
each reader reads differently (two answer lines, a sketch block before the program, an
unterminated answer line before ``halt``, housing's ``Y``, USCIS's ``Sustained``); then
``score --reading paper`` and ``reader_sensitivity`` read it again, in memory."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import upstream_reading as up
from reliability_runs import cli

from deonticbench import RunOptions, RunSpec, evaluate
from deonticbench.data.sources import resolve_source
from deonticbench.scoring.rereading import reader_sensitivity, reread_run
from deonticbench.store.run import read_run

DATA = os.environ.get("DEONTICBENCH_DATA") or str(up.MIRROR)
pytestmark = [
    pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="needs the data mirror"),
    pytest.mark.skipif(shutil.which("swipl") is None, reason="needs swipl"),
]

PROGRAM_VARIANTS = ("right_then_wrong", "two_blocks_sketch_first", "no_newline_halt")
"""harness: abstain (two answers), correct (blocks joined), correct; paper: correct (the
first line), abstain (the sketch runs), abstain (the line glued to the next path)."""
DIRECT = {"housing": "Y", "uscis": "Sustained", "sara_numeric": "Total: {g}\n\nNote: 0 items."}
"""harness: abstain, Accepted, 0; paper: yes, abstain, the total."""
SMOKE = 5


def _replies(tmp_path: Path) -> Path:
    lines: list[dict[str, Any]] = []
    for domain in DIRECT:
        rows = up.hard_rows(domain)[:SMOKE]
        variants = up.program_variants(domain)
        for row in rows:
            for sample, name in enumerate(PROGRAM_VARIANTS):
                text = variants[name](domain, row)
                lines.append(_line(domain, row, "zero-shot", sample, text))
                # A retry's reply (drawn when the harness abstained on the first).
                retry = variants["prolog_fence"](domain, row)
                lines.append({**_line(domain, row, "zero-shot", sample, retry), "attempt": 1})
                direct = DIRECT[domain].format(g=row["label"])
                lines.append(_line(domain, row, "direct", sample, direct))
    path = tmp_path / "replies.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _line(domain: str, row: dict[str, Any], mode: str, sample: int, text: str) -> dict[str, Any]:
    return {
        "domain": domain,
        "case_id": row["id"],
        "mode": mode,
        "sample": sample,
        "response": text,
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp_path = tmp_path_factory.mktemp("reread")
    spec = RunSpec(
        model=f"replay:{_replies(tmp_path)}",
        domains=tuple(DIRECT),
        split="smoke",
        modes=("direct", "zero-shot"),
        k=len(PROGRAM_VARIANTS),
        attempts=2,
        data=resolve_source(DATA),
        protocol="harness",
    )
    evaluate(spec, RunOptions(out=tmp_path / "run", cache=False))
    return tmp_path / "run"


def _digest(folder: Path) -> str:
    return hashlib.sha256((folder / "records.jsonl").read_bytes()).hexdigest()


@pytest.mark.slow
def test_score_reading_paper_reads_the_stored_replies_again_and_changes_no_file(
    run: Path,
) -> None:
    before = _digest(run)
    done = cli("score", str(run), "--reading", "paper", "--json", data=DATA)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())  # the note is wrapped to the terminal's width
    assert "read with the paper reader (the run followed the harness protocol)" in said
    assert _digest(run) == before
    same = cli("score", str(run), "--reading", "harness", data=DATA)
    assert same.returncode == 0, same.stderr
    # The harness re-reading its own run runs nothing again and changes nothing.
    said = " ".join(same.stderr.split())
    assert ": 0 program(s) run again" in said
    assert " 0 first-attempt outcome(s) changed" in said


@pytest.mark.slow
def test_each_reader_reads_each_reply_as_its_rules_say(run: Path) -> None:
    loaded = read_run(run)
    paper = reread_run(loaded, "paper")
    outcomes = {(r.domain, r.mode, r.sample): set() for r in paper.run.records}  # type: dict[tuple[str, str, int], set[str]]
    for record in paper.run.records:
        outcomes[(record.domain, record.mode, record.sample)].add(record.first.outcome)
    assert outcomes[("sara_numeric", "zero-shot", 0)] == {"correct"}
    assert outcomes[("sara_numeric", "zero-shot", 1)] == {"abstain"}
    assert outcomes[("sara_numeric", "zero-shot", 2)] == {"abstain"}
    assert outcomes[("sara_numeric", "direct", 0)] == {"correct"}
    assert outcomes[("housing", "direct", 0)] == {"correct"}  # every smoke gold is yes
    assert outcomes[("uscis", "direct", 0)] == {"abstain"}
    stored = {(r.domain, r.mode, r.sample): r.first.outcome for r in loaded.records}
    assert stored[("sara_numeric", "zero-shot", 0)] == "abstain"
    assert stored[("housing", "direct", 0)] == "abstain"


def test_reader_sensitivity_gives_each_cells_figure_under_both_readers(run: Path) -> None:
    rows = {(r.domain, r.mode): r for r in reader_sensitivity(run, bootstrap=50)}
    numeric = rows[("sara_numeric", "zero-shot")]
    assert (round(numeric.harness, 4), round(numeric.paper, 4)) == (0.6667, 0.3333)
    assert numeric.changed == numeric.n_samples == 3 * SMOKE
    assert round(numeric.difference, 4) == -0.3333
    assert rows[("sara_numeric", "direct")].harness == 0.0
    assert rows[("sara_numeric", "direct")].paper == 1.0


def test_a_retry_the_new_reading_would_not_have_made_is_dropped(run: Path) -> None:
    loaded = read_run(run)
    key = ("sara_numeric", "zero-shot", 0)  # two answer lines: the harness retried
    stored = [r for r in loaded.records if (r.domain, r.mode, r.sample) == key]
    assert all(len(r.attempts) == 2 and r.final.outcome == "correct" for r in stored)
    reread = [
        r for r in reread_run(loaded, "paper").run.records if (r.domain, r.mode, r.sample) == key
    ]
    assert len(stored) == len(reread) == SMOKE
    # The paper's reader answers on the first attempt: no retry would have followed.
    assert all(len(r.attempts) == 1 and r.final.outcome == "correct" for r in reread)


@pytest.mark.slow
def test_score_and_report_show_the_reader_sensitivity_and_the_reader_used(
    run: Path, tmp_path: Path
) -> None:
    done = cli("score", str(run), "-B", "20", "--reader-sensitivity", "--json", data=DATA)
    assert done.returncode == 0, done.stderr
    rows = {(r["domain"], r["mode"]): r for r in json.loads(done.stdout)["reader_sensitivity"]}
    numeric = rows[("sara_numeric", "zero-shot")]
    assert (round(numeric["harness"], 4), round(numeric["paper"], 4)) == (0.6667, 0.3333)
    assert round(numeric["difference"], 4) == -0.3333
    text = cli("score", str(run), "-B", "20", "--reader-sensitivity", data=DATA)
    assert "Reader sensitivity" in text.stdout and "15 of 15" in text.stdout
    # A re-read names the reader beside the protocol in Table 2.
    reread = cli("score", str(run), "-B", "20", "--reading", "paper", data=DATA)
    assert "harness, paper reader" in reread.stdout
    page = tmp_path / "report.html"
    done = cli(
        "report", str(run), "-B", "20", "--out", str(page), "--reader-sensitivity", data=DATA
    )
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    section = html[html.index('<section id="reader-sensitivity">') :]
    section = section[: section.index("</section>")]
    assert "SARA Num." in section and "-33.3" in section
