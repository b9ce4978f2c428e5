"""Reports derived from another program's report (analysis.derive) are the reports the
analyser gives the program itself, field by field, on every hard reference program of
airline, housing and sara_numeric as the paper protocol and the harness run them (real swipl, real
sandbox); and each check of the derivation refuses what it guards against, where
leaving it out would give a wrong report."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from deonticbench.analysis.derive import (
    analyse_deriving,
    derive_report,
    find_derivations,
    prefix_lines,
)
from deonticbench.analysis.engine import analyse_many, canonical
from deonticbench.analysis.run import ReportCache, analyse_programs, reference_program
from deonticbench.data.cases import load_cases
from deonticbench.data.domains import get_domain
from deonticbench.models.reference import GoldMaterial, reference_text
from deonticbench.reading.judging import Reply, read_attempt
from deonticbench.reading.paper import NEUTRAL_FIRST_LINE
from deonticbench.reading.reader import reader_for
from deonticbench.solver import Solver

DOMAINS = {"airline": 80, "housing": 78, "sara_numeric": 3}
"""The domains whose paper-protocol reference programs keep upstream's label line (and,
for housing, get the neutral first line before it), and how many of their hard cases
do (sara_numeric's other 32 are the same program under either protocol)."""


def _paper_and_harness(domain_name: str) -> list[tuple[str, str]]:
    """Each hard case's reference program as the paper protocol's reference run has
    it (the reference backend's reply read by the paper reader) and as the harness
    runs it, both as analysed (canonical)."""
    domain = get_domain(domain_name)
    pairs = []
    for case in load_cases(domain_name, "hard"):
        reply = reference_text(GoldMaterial(case.gold, case.reference_prolog), "zero-shot")
        paper = read_attempt(Reply(reply), domain, reader_for("paper")).text
        pairs.append((canonical(paper), canonical(reference_program(domain, case))))
    return pairs


def same_analysis(report: Any) -> Any:
    """A report without what differs between two analyses of one program anyway: its
    index in the batch and the module and file named after it, the addresses of clauses
    SWI-Prolog prints in some warnings, and the order of ``fail_rules`` (the order the
    loaded module lists its predicates in, which the batch's earlier programs change)."""
    text = json.dumps(report)
    text = re.sub(r"deonticbench_target_\d+", "deonticbench_target", text)
    text = re.sub(r"target_\d+\.pl", "target.pl", text)
    text = re.sub(r"<clause>\(0x[0-9a-f]+\)", "<clause>", text)
    placeless = json.loads(text)
    placeless.pop("index", None)
    static = placeless.get("static")
    if static is not None:
        static["fail_rules"] = sorted(static["fail_rules"], key=json.dumps)
    return placeless


@pytest.mark.slow
def test_every_derived_report_is_the_one_the_program_gets_analysed() -> None:
    by_domain = {name: _paper_and_harness(name) for name in DOMAINS}
    differing = {name: [p for p in pairs if p[0] != p[1]] for name, pairs in by_domain.items()}
    assert {name: len(pairs) for name, pairs in differing.items()} == DOMAINS
    pairs = [pair for name in DOMAINS for pair in by_domain[name]]
    programs = list(dict.fromkeys(text for pair in pairs for text in pair))
    derivations = find_derivations(programs)
    assert {harness: d.longer for harness, d in derivations.items()} == {
        harness: paper for name in DOMAINS for paper, harness in differing[name]
    }
    printed: dict[int, str] = {}
    with Solver(workers=2) as solver:
        analysed = analyse_many(programs, "full", solver, printed=printed)
    at = {program: index for index, program in enumerate(programs)}
    for harness, derivation in derivations.items():
        longer = at[derivation.longer]
        made = derive_report(analysed[longer], derivation.lines, printed[longer])
        assert made is not None, harness[:80]
        alone = analysed[at[harness]]
        assert "analyser_error" not in alone
        expected, got = same_analysis(alone), same_analysis(made)
        assert set(got) == set(expected)
        for field in expected["static"]:
            assert got["static"][field] == expected["static"][field], (field, harness[:80])
        assert len(got["runs"]) == len(expected["runs"]), harness[:80]
        for run, expected_run in zip(got["runs"], expected["runs"], strict=True):
            for field, value in expected_run.items():
                assert run[field] == value, (field, harness[:80])
        assert got == expected
        # The derived report shares what carries no line with the longer one's, which
        # must stay the report its own program was given.
        assert analysed[longer] == json.loads(printed[longer]), derivation.longer[:80]


SHORTER = (
    "seen(none).\n"
    "main :- ( seen(X) -> writeln(X) ; writeln(none) ).\n"
    "%  a clause that ends up on line 4 or 5\n"
    "helper(1).\n"
    ":- initialization(main, main).\n"
)


def _analyse_both(longer: str, shorter: str) -> tuple[dict[str, Any], dict[str, Any]]:
    with Solver(workers=1) as solver:
        longer_report, shorter_report = analyse_many([longer, shorter], "full", solver)
    return longer_report, shorter_report


def test_a_derivation_needs_the_prefix_line_count_and_the_report_it_shifts() -> None:
    longer = NEUTRAL_FIRST_LINE + ':- format("Label: ~w~n", ["yes"]).\n' + SHORTER
    assert prefix_lines(longer, SHORTER) == 2
    longer_report, shorter_report = _analyse_both(longer, SHORTER)
    derived = derive_report(longer_report, 2)
    assert derived is not None
    assert same_analysis(derived) == same_analysis(shorter_report)
    # The longer program's report itself is not the shorter's: lines, directives, runs.
    assert same_analysis(longer_report) != same_analysis(shorter_report)


def test_a_script_line_is_never_moved_off_line_one() -> None:
    """SWI-Prolog skips ``#!`` on line 1 only: on line 2 it is a syntax error."""
    shorter = "#!/usr/bin/env swipl\n" + SHORTER
    longer = NEUTRAL_FIRST_LINE + shorter
    assert prefix_lines(longer, shorter) is None
    assert find_derivations([longer, shorter]) == {}
    longer_report, shorter_report = _analyse_both(longer, shorter)
    shifted = derive_report(longer_report, 1)
    assert shifted is None or same_analysis(shifted) != same_analysis(shorter_report)


def test_a_label_directive_that_changes_state_is_analysed_not_derived() -> None:
    """SWI-Prolog's reader finds any directive holding ``Label:``; one that asserts a
    fact changes what the rest of the program prints."""
    shorter = SHORTER.replace("seen(none).\n", ":- dynamic seen/1.\n")
    longer = ':- assertz(seen("Label: 1")).\n' + shorter
    assert prefix_lines(longer, shorter) == 1  # the texts pass: the report must not
    longer_report, shorter_report = _analyse_both(longer, shorter)
    assert longer_report["runs"][-1]["output"] == "Label: 1\n"
    assert derive_report(longer_report, 1) is None
    with Solver(workers=1) as solver:
        reports, derived = analyse_deriving([longer, shorter], "full", solver)
    assert derived == 0
    assert same_analysis(reports[1]) == same_analysis(shorter_report)
    outputs = [run["output"] for run in reports[1]["runs"]]
    assert outputs == ["none\n"]  # not the longer program's "Label: 1"


@pytest.mark.parametrize(
    "prefix",
    [
        ":- set_prolog_flag(double_quotes, codes).\n",  # changes how the rest is read
        "fact(1).\n",  # a clause, not a directive
        ':- format("Label: ~w~n", ["yes"]). extra(1).\n',  # more than the directive
        ":- true.\r\n",
    ],
)
def test_only_the_neutral_line_and_label_directives_make_a_prefix(prefix: str) -> None:
    assert prefix_lines(prefix + SHORTER, SHORTER) is None


def test_a_module_header_stays_the_first_term() -> None:
    shorter = ":- module(m, []).\n" + SHORTER
    assert prefix_lines(NEUTRAL_FIRST_LINE + shorter, shorter) is None


def test_messages_citing_the_file_are_shifted_and_one_on_the_prefix_refuses() -> None:
    discontiguous = "p(1).\nq(1).\np(2).\n"
    longer = NEUTRAL_FIRST_LINE + discontiguous
    longer_report, shorter_report = _analyse_both(longer, discontiguous)
    assert "target_0.pl:2" in json.dumps(longer_report)  # p/1 first defined on line 2
    derived = derive_report(longer_report, 1)
    assert derived is not None
    assert same_analysis(derived) == same_analysis(shorter_report)
    assert derive_report(longer_report, 2) is None  # the cited line 2 would be a prefix's


def test_analyse_programs_counts_a_derived_report(tmp_path: Any) -> None:
    longer = ':- format("~w~n", ["Label: 1166"]).\n' + SHORTER
    cache = ReportCache(tmp_path / "cache.sqlite")
    with Solver(workers=1) as solver:
        tally: dict[str, int] = {}
        reports, fresh = analyse_programs([longer, SHORTER], cache, solver, tally=tally)
    cache.close()
    assert (fresh, tally) == (2, {"derived": 1})
    assert reports[canonical(SHORTER)] is not None
    assert ReportCache(tmp_path / "cache.sqlite").get(canonical(SHORTER)) is not None


def test_the_cache_keeps_a_derived_report_as_the_way_to_derive_it(tmp_path: Any) -> None:
    """Not the derived report's JSON (writing it cost as much as deriving it): the key
    of the longer program's report and the lines to take off, derived again when read;
    with the longer program's report gone, the shorter program is analysed again."""
    longer = ':- format("~w~n", ["Label: 1166"]).\n' + SHORTER
    path = tmp_path / "cache.sqlite"
    with Solver(workers=1) as solver:
        cache = ReportCache(path)
        reports, _ = analyse_programs([longer, SHORTER], cache, solver)
        cache.close()
        kept = ReportCache(path)
        rows = dict(kept._db.execute("SELECT key, report FROM reports").fetchall())
        pointer = json.loads(rows[kept.key(canonical(SHORTER))])
        assert pointer == {"derived_from": kept.key(canonical(longer)), "lines": 1}
        assert kept.get(canonical(SHORTER)) == reports[canonical(SHORTER)]
        kept._db.execute("DELETE FROM reports WHERE key = ?", (kept.key(canonical(longer)),))
        assert kept.get(canonical(SHORTER)) is None
        tally: dict[str, int] = {}
        again, fresh = analyse_programs([SHORTER], kept, solver, tally=tally)
        kept.close()
    assert (fresh, tally) == (1, {"derived": 0})
    assert same_analysis(again[canonical(SHORTER)]) == same_analysis(reports[canonical(SHORTER)])
