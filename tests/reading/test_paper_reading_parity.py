"""The paper reader reads every sample as upstream's own scripts do.

On every hard case of the five domains, a reply set of every wrapping, answer-line
variant, broken, looping and entry-point-less program (``upstream_reading``) goes
through upstream's ``process_generated_prolog.py`` and ``run_swipl.sh`` (subprocesses,
from the shared mirror) and ``bootstrap_outputs.py``'s parsers and ``_is_correct``, and
through the paper reader with programs run in our sandbox; every sample's outcome
(correct, wrong, abstain) must be the same.  Direct replies are read by
``parse_source_json`` beside the reader's ``read_direct``.  Both sides run programs
under the same limit: 10 s, and 2 s for the looping ones, run apart (``TIMEOUT_DURATION``
upstream, ``Limits(timeout_s=...)`` here).  The harness's reader differs from upstream
on hundreds of these samples, which the test checks too.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import upstream_reading as up

from deonticbench.data.cases import normalise_gold
from deonticbench.data.domains import get_domain
from deonticbench.reading import Answer, reader_for
from deonticbench.solver import Limits, Solver

pytestmark = [
    pytest.mark.skipif(not up.available(), reason="needs upstream's scripts (DEONTICBENCH_DATA)"),
    pytest.mark.skipif(shutil.which("swipl") is None, reason="needs swipl"),
]

TIMEOUT_S = 10
"""Every program but the looping ones: far above what any of them needs, so that a slow
machine cannot time one side out and not the other."""
LOOP_TIMEOUT_S = 2
"""The looping programs, run apart: ``TIMEOUT_DURATION=2`` upstream, ``Limits(timeout_s=2)``
here (then 2 s more for a program that outlives SIGTERM, on both sides)."""


def _ours_programs(
    solver: Solver,
    domain_name: str,
    replies: list[list[up.Reply]],
    golds: list[Any],
    timeout_s: int,
    reading: str = "paper",
) -> list[list[str]]:
    """Every reply's outcome by one of our readers, its programs run in our sandbox."""
    reader = reader_for(reading)
    domain = get_domain(domain_name)
    programs = []
    for case_replies in replies:
        for reply in case_replies:
            program = reader.extract(reply.text)
            programs.append(None if program is None else reader.prepare(domain, program).text)
    limits = Limits(timeout_s=timeout_s)
    ran = [p for p in programs if p is not None]
    executions = iter(solver.map(ran, limits, toplevel=reader.toplevel))
    answers = iter(
        Answer.abstain("no program")
        if p is None
        else reader.read_execution(domain, next(executions))
        for p in programs
    )
    return [
        [reader.judge_answer(domain, next(answers), gold) for _ in case_replies]
        for case_replies, gold in zip(replies, golds, strict=True)
    ]


def _mismatches(
    domain: str,
    replies: list[list[up.Reply]],
    theirs: Sequence[Sequence[str]],
    ours: Sequence[Sequence[str]],
) -> list[str]:
    found = []
    for index, (case_replies, t, o) in enumerate(zip(replies, theirs, ours, strict=True)):
        assert len(t) == len(o) == len(case_replies), (domain, index, t, o)
        for reply, a, b in zip(case_replies, t, o, strict=True):
            if a != b:
                found.append(f"{domain} case {index} {reply.variant}: upstream {a}, paper {b}")
    return found


@pytest.mark.slow
def test_every_program_and_direct_sample_reads_as_upstream_reads_it(tmp_path: Path) -> None:
    rows = {d: up.hard_rows(d) for d in up.DOMAINS}
    labels = {d: [up.upstream_label(d, r["label"]) for r in rows[d]] for d in up.DOMAINS}
    golds = {d: [normalise_gold(get_domain(d), r["label"]) for r in rows[d]] for d in up.DOMAINS}
    # Per domain: every case's replies, and apart, the first case's looping programs.
    batches = {
        (d, "programs"): (up.program_replies(d, rows[d]), labels[d], golds[d], TIMEOUT_S)
        for d in up.DOMAINS
    } | {
        (d, "loops"): (
            [up.loop_replies(d, rows[d][0])],
            labels[d][:1],
            golds[d][:1],
            LOOP_TIMEOUT_S,
        )
        for d in up.DOMAINS
    }
    running = {
        key: up.run_programs(
            key[0],
            [[r.text for r in case] for case in replies],
            lbls,
            tmp_path / "_".join(key),
            timeout,
        )
        for key, (replies, lbls, _, timeout) in batches.items()
    }
    # The looping programs only wait out their clock: they run beside the rest, all of a
    # domain's at once in a pool of their own, instead of two at a time after it (that
    # queue was half this test's time).
    with (
        Solver(workers=2) as solver,
        Solver(workers=len(up.LOOPS)) as waiting,
        ThreadPoolExecutor(1) as beside,
    ):
        looped = beside.submit(
            lambda: {
                key: _ours_programs(waiting, key[0], replies, gold, timeout)
                for key, (replies, _, gold, timeout) in batches.items()
                if key[1] == "loops"
            }
        )
        ours = {
            key: _ours_programs(solver, key[0], replies, gold, timeout)
            for key, (replies, _, gold, timeout) in batches.items()
            if key[1] == "programs"
        }
        ours |= looped.result()
        harness = {
            key: _ours_programs(solver, key[0], replies, gold, timeout, "harness")
            for key, (replies, _, gold, timeout) in batches.items()
            if key[1] == "programs"
        }
    for key, process in running.items():
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, f"{key}: upstream's scripts failed: {err[-2000:]}"
    mismatches: list[str] = []
    harness_differs: list[str] = []
    compared = Counter[str]()
    for key, (replies, lbls, _, _) in batches.items():
        theirs = up.read_programs(key[0], tmp_path / "_".join(key), lbls)
        mismatches += _mismatches(key[0], replies, theirs, ours[key])
        if key in harness:
            harness_differs += _mismatches(key[0], replies, theirs, harness[key])
        compared.update(o for case in theirs for o in case)

    reader = reader_for("paper")
    for d in up.DOMAINS:
        domain = get_domain(d)
        direct = [up.direct_replies(d, row) for row in rows[d]]
        theirs = up.read_direct(d, [[r.text for r in c] for c in direct], labels[d], tmp_path / d)
        mine = [
            [reader.judge_answer(domain, reader.read_direct(domain, r.text), gold) for r in case]
            for case, gold in zip(direct, golds[d], strict=True)
        ]
        mismatches += _mismatches(d, direct, theirs, mine)
        harness_differs += _mismatches(d, direct, theirs, _harness_direct(d, direct, golds[d]))
        compared.update(o for case in theirs for o in case)

    print(f"compared {sum(compared.values())} samples {dict(compared)}: {len(mismatches)} differ;")
    print(f"the harness's reader reads {len(harness_differs)} of them otherwise")
    assert not mismatches, f"{len(mismatches)} samples differ:\n" + "\n".join(mismatches[:60])
    # The set exercises all three outcomes in quantity (not a set that only abstains).
    assert min(compared.values()) > 300, compared
    # And it tells readers apart: the harness's reader reads hundreds of these samples
    # otherwise.
    assert len(harness_differs) > 300, len(harness_differs)


SMOKE_CASES = 5
"""The smoke split: the first five hard cases of a domain (upstream derives it so)."""


@pytest.mark.slow
def test_replies_that_meet_the_sandbox_limits_read_as_upstream_reads_them(
    tmp_path: Path,
) -> None:
    """A long trace before the answer line, a flood of warnings on stderr and a script
    line first, on every smoke case of the five domains: the paper reader runs programs as
    upstream does, so that no output cap of 64 KiB and no missing line 1 makes one of
    these samples abstain (or answer) where upstream answers (or abstains)."""
    rows = {d: up.hard_rows(d)[:SMOKE_CASES] for d in up.DOMAINS}
    labels = {d: [up.upstream_label(d, r["label"]) for r in rows[d]] for d in up.DOMAINS}
    golds = {d: [normalise_gold(get_domain(d), r["label"]) for r in rows[d]] for d in up.DOMAINS}
    replies = {d: up.limit_replies(d, rows[d]) for d in up.DOMAINS}
    running = {
        d: up.run_programs(
            d, [[r.text for r in case] for case in replies[d]], labels[d], tmp_path / d, TIMEOUT_S
        )
        for d in up.DOMAINS
    }
    with Solver(workers=2) as solver:
        ours = {d: _ours_programs(solver, d, replies[d], golds[d], TIMEOUT_S) for d in up.DOMAINS}
    mismatches: list[str] = []
    compared = Counter[str]()
    for d, process in running.items():
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, f"{d}: upstream's scripts failed: {err[-2000:]}"
        theirs = up.read_programs(d, tmp_path / d, labels[d])
        mismatches += _mismatches(d, replies[d], theirs, ours[d])
        compared.update(o for case in theirs for o in case)
    print(f"compared {sum(compared.values())} samples {dict(compared)}: {len(mismatches)} differ")
    assert not mismatches, f"{len(mismatches)} samples differ:\n" + "\n".join(mismatches)
    # Upstream answers most of these (the shapes are meant to be read), and the script
    # line costs some housing/uscis programs their first clause.
    assert compared["correct"] > compared["abstain"] > 0, compared


def _harness_direct(domain_name: str, direct: list[list[up.Reply]], golds: list[Any]) -> list:
    reader = reader_for("harness")
    domain = get_domain(domain_name)
    return [
        [reader.judge_answer(domain, reader.read_direct(domain, r.text), gold) for r in case]
        for case, gold in zip(direct, golds, strict=True)
    ]
