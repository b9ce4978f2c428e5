"""The paper reader reads every sample as upstream's own scripts do.

On every hard case of the five domains, a reply set of every wrapping, answer-line
variant, broken, looping and entry-point-less program (``upstream_reading``) goes
through upstream's ``process_generated_prolog.py`` and ``run_swipl.sh`` (subprocesses,
from the shared mirror) and ``bootstrap_outputs.py``'s parsers and ``_is_correct``, and
through the paper reader with programs run in our sandbox; every sample's outcome
(correct, wrong, abstain) must be the same.  Direct replies are read by
``parse_source_json`` beside the reader's ``read_direct``.  Both sides run programs
under a 2 s limit (``TIMEOUT_DURATION=2``, ``Limits(timeout_s=2)``).
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import upstream_reading as up

from deonticbench.data.cases import normalise_gold
from deonticbench.data.domains import get_domain
from deonticbench.reading import reader_for
from deonticbench.solver import Limits, Solver

pytestmark = [
    pytest.mark.skipif(not up.available(), reason="needs upstream's scripts (DEONTICBENCH_DATA)"),
    pytest.mark.skipif(shutil.which("swipl") is None, reason="needs swipl"),
]

TIMEOUT_S = 2


def _ours_programs(
    solver: Solver, domain_name: str, replies: list[list[up.Reply]], golds: list[Any]
) -> list[list[str]]:
    reader = reader_for("paper")
    domain = get_domain(domain_name)
    prepared = []
    for case_replies in replies:
        for reply in case_replies:
            program = reader.extract(reply.text)
            assert program is not None  # the paper reader always has a program
            prepared.append(reader.prepare(domain, program).text)
    executions = iter(solver.map(prepared, toplevel=reader.toplevel))
    return [
        [
            reader.judge(domain, reader.read_execution(domain, next(executions)), gold)
            for _ in case_replies
        ]
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


def test_every_program_and_direct_sample_reads_as_upstream_reads_it(tmp_path: Path) -> None:
    rows = {d: up.hard_rows(d) for d in up.DOMAINS}
    labels = {d: [up.upstream_label(d, r["label"]) for r in rows[d]] for d in up.DOMAINS}
    golds = {d: [normalise_gold(get_domain(d), r["label"]) for r in rows[d]] for d in up.DOMAINS}
    programs = {d: up.program_replies(d, rows[d]) for d in up.DOMAINS}
    running = {
        d: up.run_programs(
            d,
            [[r.text for r in case] for case in programs[d]],
            labels[d],
            tmp_path / d,
            TIMEOUT_S,
        )
        for d in up.DOMAINS
    }
    with Solver(workers=2, limits=Limits(timeout_s=TIMEOUT_S)) as solver:
        ours = {d: _ours_programs(solver, d, programs[d], golds[d]) for d in up.DOMAINS}
    for d, process in running.items():
        _, err = process.communicate(timeout=600)
        assert process.returncode == 0, f"{d}: upstream's scripts failed: {err[-2000:]}"
    mismatches: list[str] = []
    compared = Counter[str]()
    for d in up.DOMAINS:
        theirs = up.read_programs(d, tmp_path / d, labels[d])
        mismatches += _mismatches(d, programs[d], theirs, ours[d])
        compared.update(o for case in theirs for o in case)

    reader = reader_for("paper")
    for d in up.DOMAINS:
        domain = get_domain(d)
        direct = [up.direct_replies(d, row) for row in rows[d]]
        theirs = up.read_direct(d, [[r.text for r in c] for c in direct], labels[d], tmp_path / d)
        mine = [
            [reader.judge(domain, reader.read_direct(domain, r.text), gold) for r in case]
            for case, gold in zip(direct, golds[d], strict=True)
        ]
        mismatches += _mismatches(d, direct, theirs, mine)
        compared.update(o for case in theirs for o in case)

    assert not mismatches, f"{len(mismatches)} samples differ:\n" + "\n".join(mismatches[:60])
    # The set exercises all three outcomes in quantity (not a set that only abstains).
    assert min(compared.values()) > 300, compared
