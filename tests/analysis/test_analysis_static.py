"""Static analysis read by SWI-Prolog itself (prolog/analyse.pl via library(prolog_xref)),
run in the real sandbox; and the signature set S(P) with its Jaccard index."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from deonticbench.analysis import analyse_static, signature_jaccard
from deonticbench.solver import Solver
from deonticbench.solver.pool import SANDBOX_PROLOG, bwrap_works

PROGRAM = """\
% tax facts
income(alice, 1000).
rate(0.1).
tax(P, T) :- income(P, I), rate(R), T is I * R, Unused = 1.
total(T) :- tax(alice, T), helper(T).
broken( :- .
atom_length(a, 1).
decide :- fail.
:- initialization(main, main).
main :- total(T), format("Tax result: ~w~n", [T]).
"""


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with Solver(workers=1) as s:
        yield s


def test_defined_called_undefined_errors_and_warnings(solver: Solver) -> None:
    report = analyse_static(PROGRAM, solver)
    lines = {(d.name, d.arity): d.line for d in report.defined}
    assert lines[("income", 2)] == 2
    assert lines[("tax", 2)] == 4
    assert lines[("main", 0)] == 10
    assert ("tax", 2) in report.called and ("income", 2) in report.called
    assert [(u.name, u.arity, u.called_by) for u in report.undefined] == [("helper", 1, "total/1")]
    # format/2 and is/2 are built in: called but never undefined
    assert report.undefined_signatures == {("helper", 1)}
    (syntax,) = report.syntax_errors
    assert syntax.line == 6 and syntax.column is not None and "Syntax error" in syntax.message
    kinds = {(w.kind, w.line) for w in report.warnings}
    assert ("singleton", 4) in kinds
    assert any(w.kind == "redefined_builtin" for w in report.warnings)
    assert [(f.name, f.line) for f in report.fail_rules] == [("decide", 8)]


def test_signatures_ignore_comments_layout_and_builtins(solver: Solver) -> None:
    a = analyse_static(PROGRAM, solver)
    stripped = "\n".join(line for line in PROGRAM.splitlines() if not line.startswith("%")).replace(
        ":- income", ":-\n    income"
    )
    b = analyse_static(stripped + "\n% a trailing comment\n", solver)
    assert a.signatures == b.signatures
    assert ("income", 2) in a.signatures and ("helper", 1) in a.signatures
    assert ("format", 2) not in a.signatures and ("is", 2) not in a.signatures
    assert signature_jaccard(a.signatures, b.signatures) == 1.0


def test_jaccard_index() -> None:
    assert signature_jaccard({("a", 1), ("b", 2)}, {("a", 1), ("c", 0)}) == pytest.approx(1 / 3)
    assert signature_jaccard(set(), set()) == 1.0
    assert signature_jaccard({("a", 1)}, set()) == 0.0


def test_directives_are_never_run(solver: Solver, tmp_path: Path) -> None:
    # Run, these would loop forever and print; read, they are only recorded.
    looping = ":- repeat, fail.\n:- format('ran~n').\np(1).\n"
    report = analyse_static(looping, solver)
    assert [(d.name, d.arity) for d in report.defined] == [("p", 1)]


def test_reference_program_against_itself(solver: Solver) -> None:
    data = Path(os.environ.get("DEONTICBENCH_DATA", "../shared/deonticbench-data"))
    cases = json.loads((data / "data" / "sara_numeric" / "smoke.json").read_text())
    program = cases[0]["reference_prolog"]
    report = analyse_static(program, solver)
    assert not report.syntax_errors
    assert len(report.signatures) > 10
    other = analyse_static(cases[1]["reference_prolog"], solver)
    assert 0.0 < signature_jaccard(report.signatures, other.signatures) < 1.0


def test_same_report_without_bubblewrap() -> None:
    # Under plain rlimits the analyser's text travels inside the job itself.
    with Solver(workers=1, sandbox="rlimits") as plain:
        report = analyse_static(PROGRAM, plain)
    assert report.undefined_signatures == {("helper", 1)}


@pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot create namespaces here")
def test_prolog_folder_is_visible_read_only_in_the_sandbox(solver: Solver) -> None:
    probe = (
        ":- initialization(main, main).\n"
        f"main :- ( exists_file('{SANDBOX_PROLOG}/analyse.pl') -> writeln(visible) ; true ),\n"
        f"    catch(( open('{SANDBOX_PROLOG}/analyse.pl', append, S), close(S),\n"
        "            writeln(writable) ), _, writeln(read_only)).\n"
    )
    execution = solver.run(probe)
    assert execution.stdout.split() == ["visible", "read_only"]
