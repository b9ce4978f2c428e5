"""validate and exec end to end: the real command, the real swipl, the mirror."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args], capture_output=True, text=True, timeout=600
    )


@pytest.fixture(scope="module")
def hard_report() -> dict[str, object]:
    done = run_cli("validate", "--split", "hard", "--json")
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_validate_json_shape_and_counts(hard_report: dict[str, object]) -> None:
    assert hard_report["split"] == "hard"
    domains = hard_report["domains"]
    assert isinstance(domains, dict)
    expected = {"sara_numeric": 35, "sara_binary": 30, "airline": 80, "housing": 78, "uscis": 28}
    assert {name: d["cases"] for name, d in domains.items()} == expected
    for d in domains.values():
        assert d["agree"] + d["disagree"] + d["abstain"] == d["cases"]
        assert len(d["disagree_ids"]) == d["disagree"]
        assert len(d["abstain_ids"]) == d["abstain"]
    # The numeric domains' and housing's reference programs reproduce every label.
    for name in ("sara_numeric", "airline", "housing"):
        assert domains[name]["agree"] == domains[name]["cases"], domains[name]


def test_validate_is_repeatable(hard_report: dict[str, object]) -> None:
    again = run_cli("validate", "--split", "hard", "--json", "--domains", "sara_binary,uscis")
    assert again.returncode == 0, again.stderr
    second = json.loads(again.stdout)["domains"]
    first = hard_report["domains"]
    assert isinstance(first, dict)
    for name in ("sara_binary", "uscis"):
        for key in ("agree", "disagree", "abstain", "disagree_ids", "abstain_ids"):
            assert second[name][key] == first[name][key]


def test_validate_table_output() -> None:
    done = run_cli("validate", "--split", "smoke", "--domains", "airline,housing")
    assert done.returncode == 0, done.stderr
    assert "domain" in done.stdout and "airline" in done.stdout and "housing" in done.stdout


def test_validate_bad_input_is_one_sentence() -> None:
    done = run_cli("validate", "--domains", "nonsense")
    assert done.returncode != 0
    assert "unknown domain" in done.stderr and "Traceback" not in done.stderr
    missing = run_cli("validate", "--data-dir", "/nonexistent/folder")
    assert missing.returncode != 0 and "Traceback" not in missing.stderr


def test_exec_json(tmp_path: Path) -> None:
    program = tmp_path / "p.pl"
    program.write_text(":- format('Total cost: ~w~n', [1166]).\n:- halt.\n")
    done = run_cli("exec", str(program), "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    for key in ("status", "stdout", "stderr", "exit_code", "wall_s", "sandbox", "answer"):
        assert key in payload
    assert payload["status"] == "ok" and payload["answer"] == 1166.0


def test_exec_with_domain_repairs_and_reports(tmp_path: Path) -> None:
    program = tmp_path / "u.pl"
    program.write_text(
        "eligibility_met.\ndecision(R) :- (eligibility_met -> R = 'Accepted' ; R = 'Dismissed').\n"
    )
    done = run_cli("exec", str(program), "--domain", "uscis", "--json")
    payload = json.loads(done.stdout)
    assert payload["answer"] == "Accepted"
    assert payload["repairs"]


def test_exec_failing_program_exits_nonzero(tmp_path: Path) -> None:
    program = tmp_path / "bad.pl"
    program.write_text("foo(.\n")
    done = run_cli("exec", str(program), "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["status"] == "syntax_error"
    assert json.loads(done.stdout)["answer"] is None
    gone = run_cli("exec", str(tmp_path / "missing.pl"))
    assert gone.returncode == 2 and "cannot read" in gone.stderr


def test_exec_runs_the_program_inside_a_saved_response(tmp_path: Path) -> None:
    response = tmp_path / "response.md"
    response.write_text(
        "Here is my program:\n```prolog\n:- format('Tax result: ~w~n', [42]).\n:- halt.\n```\n"
    )
    done = run_cli("exec", str(response), "--domain", "sara_numeric", "--json")
    payload = json.loads(done.stdout)
    assert payload["status"] == "ok" and payload["answer"] == 42.0
    assert any("fenced" in note for note in payload["repairs"])


def test_nonsense_numbers_are_refused() -> None:
    for args in (("validate", "--timeout", "0"), ("validate", "--workers", "0")):
        done = run_cli(*args)
        assert done.returncode == 2 and "Invalid value" in done.stderr
    done = run_cli("exec", "/dev/null", "--timeout", "-1")
    assert done.returncode == 2 and "Invalid value" in done.stderr


def test_validate_runs_with_either_executor() -> None:
    reports = {}
    for executor in ("fork", "fresh"):
        done = run_cli(
            "validate", "--split", "smoke", "--domains", "airline", "--json", "--executor", executor
        )
        assert done.returncode == 0, done.stderr
        reports[executor] = json.loads(done.stdout)
        assert reports[executor]["executor"] == executor
    assert reports["fork"]["domains"]["airline"]["agree"] == 5
    fork_view = {k: v for k, v in reports["fork"]["domains"]["airline"].items() if k != "seconds"}
    fresh_view = {k: v for k, v in reports["fresh"]["domains"]["airline"].items() if k != "seconds"}
    assert fork_view == fresh_view
    bad = run_cli("validate", "--split", "smoke", "--executor", "thread")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


def test_exec_takes_the_executor(tmp_path: Path) -> None:
    program = tmp_path / "p.pl"
    program.write_text(":- initialization(main, main).\nmain :- writeln(hi), halt(4).\n")
    seen = []
    for executor in ("fork", "fresh"):
        done = run_cli("exec", str(program), "--json", "--executor", executor)
        payload = json.loads(done.stdout)
        seen.append((payload["status"], payload["stdout"], payload["exit_code"]))
    assert seen == [("runtime_error", "hi\n", 4)] * 2


def test_validate_runs_programs_without_label_first_and_reports_in_case_order() -> None:
    """The pool takes a domain's programs without ``Label:`` before those the label
    reader must read (they run while it reads); the report still lists every case in
    its split's order, each with its own program's answer."""
    from deonticbench.data.cases import load_cases, resolve_source
    from deonticbench.data.domains import get_domain
    from deonticbench.evaluation.validate import reference_program, validate
    from deonticbench.solver import Execution, Solver

    domain = get_domain("sara_numeric")
    cases = load_cases(domain, "hard", resolve_source())
    ran: list[str] = []
    with Solver(workers=1) as solver:
        run = solver.run

        def recording(program: str, limits: object = None, **how: object) -> Execution:
            ran.append(program)
            return run(program, limits, **how)  # type: ignore[arg-type]

        solver.run = recording  # type: ignore[method-assign]
        (report,) = validate([domain], "hard", solver=solver)
    marked = ["Label:" in case.reference_prolog for case in cases]
    assert 0 < sum(marked) < len(cases)  # the split has both kinds
    assert not marked[-1]  # and a label-free program after a marked one
    prepared = {reference_program(domain, case).text: i for i, case in enumerate(cases)}
    order = [prepared[program] for program in ran]
    assert sorted(order) == list(range(len(cases)))
    assert [marked[i] for i in order] == sorted(marked)  # all label-free ones first
    assert [check.case_id for check in report.checks] == [case.id for case in cases]
    assert {check.outcome for check in report.checks} == {"correct"}
