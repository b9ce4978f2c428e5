"""How the analyser's reports reach Python, through real parts (real swipl, the real
sandbox, real sqlite): the analyser's own JSON writer, the cache keeping the printed
line, a worker going on to its next job while the last one's reports are read, the
garbage collector paused while a run's reports are compared, and the memo of proofs
staying bounded."""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from small_programs import SMALL_PROGRAMS

from deonticbench._paths import PROLOG
from deonticbench.analysis import proof as proof_module
from deonticbench.analysis.engine import analyse_many
from deonticbench.analysis.proof import ProofMemo, walk
from deonticbench.analysis.run import CACHE_FILE, ReportCache, analyse_programs, analyse_run
from deonticbench.solver import Solver

PROGRAMS = SMALL_PROGRAMS

# Values of every kind a report holds, with the strings a JSON writer must escape.
VALUES = (
    '_{s: "q\\"uote \\\\ back\\ttab\\nnl\\u0001ctl é ✓", a: plain_atom, n: [1, -2.5, 0.1, '
    "1.0e20, 123456789012345678901234567890, -0.0], t: true, f: false, z: null, e: [], "
    'd: _{}, nested: [_{k: [[]]}, ""]}'
)


def _swipl_json(goal: str, folder: Path) -> Any:
    script = folder / "write.pl"
    script.write_text(
        f":- use_module('{PROLOG / 'analyse.pl'}').\n"
        ":- use_module(library(http/json)).\n"
        f":- initialization((V = {VALUES}, R is 1 rdiv 3, {goal}, nl), main).\n",
        encoding="utf-8",
    )
    done = subprocess.run(["swipl", "-q", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_analysers_writer_reads_back_as_the_librarys_writer(tmp_path: Path) -> None:
    ours = _swipl_json("deonticbench_analyse:write_json([V, R])", tmp_path)
    library = _swipl_json("json_write_dict(current_output, [V, R], [width(0)])", tmp_path)
    assert ours == library
    assert ours[0]["s"] == 'q"uote \\ back\ttab\nnl\x01ctl é ✓'
    assert ours[1] == pytest.approx(1 / 3)


def test_the_cache_keeps_the_line_the_analyser_printed(tmp_path: Path) -> None:
    with Solver(workers=1) as solver:
        printed: dict[int, str] = {}
        reports = analyse_many(PROGRAMS, "full", solver, printed=printed)
        assert sorted(printed) == list(range(len(PROGRAMS)))
        for index, report in enumerate(reports):
            assert json.loads(printed[index]) == report
        cache = ReportCache(tmp_path / CACHE_FILE)
        analysed, fresh = analyse_programs(PROGRAMS, cache, solver)
        cache.close()
    assert fresh == len(PROGRAMS)
    with sqlite3.connect(tmp_path / CACHE_FILE) as db:
        texts = [row[0] for row in db.execute("SELECT report FROM reports")]
    assert len(texts) == len(PROGRAMS)
    for text in texts:
        # the analyser's compact line, not Python's serialisation of what it parsed
        assert json.dumps(json.loads(text)) != text
        assert json.loads(text) in analysed.values()


def test_a_worker_runs_its_next_job_while_the_last_is_read() -> None:
    second_started = threading.Event()
    seen: list[bool] = []
    with Solver(workers=1) as solver:
        run = solver.run
        calls = 0

        def counting_run(program: str, limits: Any = None, **options: Any) -> Any:
            nonlocal calls
            calls += 1
            if calls == 2:
                second_started.set()
            return run(program, limits, **options)

        solver.run = counting_run  # type: ignore[method-assign]

        def on_job(found: dict[int, dict[str, Any]]) -> None:
            if not seen:  # the first job's reports: is the worker busy meanwhile?
                seen.append(second_started.wait(timeout=30))

        reports = analyse_many(PROGRAMS, "full", solver, batch=2, on_job=on_job)
    assert seen == [True]
    assert all("analyser_error" not in r for r in reports)


def _reference_run(tmp_path: Path, domains: str, k: int) -> Path:
    """A reference model's run of the smoke split, zero-shot, K samples a case."""
    run = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "eval", "--model", "reference",
         "--split", "smoke", "--domains", domains, "--modes", "zero-shot",
         "-k", str(k), "--out", str(run), "--no-cache"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return run


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)
def test_a_runs_reports_are_compared_with_the_collector_paused(tmp_path: Path) -> None:
    run = _reference_run(tmp_path, "sara_numeric,airline", k=1)
    passes: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    assert gc.isenabled()
    gc.collect()  # the generations' counts start from zero
    gc.callbacks.append(count)
    try:
        rows, counts = analyse_run(run, workers=1)
        during = list(passes)
    finally:
        gc.callbacks.remove(count)
    assert counts["analysed"] > 0 and rows
    # at most the one pass once the collector is back on, after the reports are gone
    # (with it on throughout, a pass every 700 allocations walked them)
    assert len(during) <= 1, during
    assert gc.isenabled()


def test_the_memo_of_proofs_stays_bounded() -> None:
    proofs = [({"k": "fact", "g": f"p({i})", "v": [i]},) for i in range(1000)]
    for proof in proofs:
        assert walk(proof)[0][0]["v"] == [proof[0]["v"][0]]
    assert len(proof_module._flat) <= 64  # a reward server reads proofs for days
    memo: ProofMemo[int] = ProofMemo(len, size=8)
    for proof in proofs:
        memo(proof)
    assert len(memo) == 8
    assert memo(proofs[-1]) == 1


def test_program_texts_reach_the_analyser_as_they_are(tmp_path: Path) -> None:
    """A batch's driver carries each program as a string literal (``prolog_string``):
    SWI-Prolog's reader must give back every text exactly, whatever characters it
    holds (every control character, quotes, backslashes, escapes that look like
    escapes, non-ASCII)."""
    from deonticbench.analysis.engine import prolog_string

    texts = [
        "".join(chr(c) for c in range(128)),
        'p("a\\\\b").\n:- format("~w~n", [\'Label: 1\']).\r\n\ttab\x0bvt\x1bESC',
        "\\x41\\ \\n not a newline, é λ € 𝔸",
        "",
    ]
    source = tmp_path / "literals.pl"
    source.write_text("".join(f"t({prolog_string(text)}).\n" for text in texts), encoding="utf-8")
    done = subprocess.run(
        ["swipl", "--no-packs", "-q", "-g",
         f"set_prolog_flag(double_quotes, string), load_files('{source}', [encoding(utf8)]),"
         " forall(t(S), (string_codes(S, Cs), writeq(Cs), nl))", "-t", "halt"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    read_back = [json.loads(line) for line in done.stdout.splitlines()]
    assert read_back == [[ord(c) for c in text] for text in texts]


@pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)
def test_samples_holding_one_attempt_share_one_diagnosis(tmp_path: Path) -> None:
    run = _reference_run(tmp_path, "sara_numeric", k=3)
    # One sample of the first case read another answer from the same program: it must
    # get a diagnosis of its own (wrong, with a category), not its siblings'.
    records = [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]
    case = records[0]["case_id"]
    changed = next(r for r in records if r["case_id"] == case and r["sample"] == 2)
    for holder in (changed, changed["attempts"][0]):
        holder.update(answer=1.0, outcome="wrong")
    changed.update(first_answer=1.0, first_outcome="wrong")
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))

    rows, _counts = analyse_run(run, workers=1)
    first = {(r.case_id, r.sample): r.diagnosis for r in rows if r.stage == "first"}
    for case_id in {c for c, _ in first}:
        if case_id != case:
            assert first[(case_id, 0)] is first[(case_id, 1)] is first[(case_id, 2)]
    assert first[(case, 0)] is first[(case, 1)]
    assert first[(case, 0)].category is None and first[(case, 0)].outcome == "correct"
    assert first[(case, 2)].outcome == "wrong" and first[(case, 2)].category is not None
