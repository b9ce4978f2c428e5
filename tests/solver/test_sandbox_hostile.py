"""Hostile programs against the real swipl, in both sandbox kinds.

Each program must be contained (no trace outside its own temp directory, nothing
outliving it), classified into a status, and stopped within its timeout plus 2 s; and
the harness must carry on with the next program.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import hostile_programs as hostile
import pytest

from deonticbench.solver import Limits, Solver
from deonticbench.solver.pool import bwrap_works

TIMEOUT = 3.0
SANDBOXES = ["bwrap", "rlimits"] if bwrap_works() else ["rlimits"]


@pytest.fixture(params=SANDBOXES, scope="module")
def solver(request: pytest.FixtureRequest) -> Iterator[Solver]:
    os.environ["OPENAI_API_KEY"] = "sk-test-secret-value-123"
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-test-secret-456"
    with Solver(workers=2, limits=Limits(timeout_s=TIMEOUT), sandbox=request.param) as s:
        yield s


def _still_works(solver: Solver) -> None:
    execution = solver.run(":- writeln(still_alive).\n")
    assert execution.status == "ok" and execution.stdout == "still_alive\n"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside any program's temp dir, with a file in it."""
    (tmp_path / "keep.txt").write_text("precious")
    return tmp_path


def test_shell_cannot_write_outside(solver: Solver, outside: Path) -> None:
    target = outside / "from_shell.txt"
    execution = solver.run(hostile.shell_writes_outside(target))
    assert not target.exists()
    assert execution.status in ("ok", "runtime_error", "no_output")
    _still_works(solver)


def test_process_create_cannot_write_outside(solver: Solver, outside: Path) -> None:
    target = outside / "from_process.txt"
    solver.run(hostile.process_writes_outside(target))
    assert not target.exists()
    _still_works(solver)


def test_writing_a_file_outside_fails(solver: Solver, outside: Path) -> None:
    for target in (
        outside / "direct.txt",
        Path("/root/deonticbench-escape.txt"),
        Path("/etc/escape"),
    ):
        execution = solver.run(hostile.writes_file(target))
        assert not target.exists(), target
        assert "wrote" not in execution.stdout
        assert execution.status == "runtime_error"


def test_deleting_a_file_outside_fails(solver: Solver, outside: Path) -> None:
    keep = outside / "keep.txt"
    execution = solver.run(hostile.deletes_file(keep))
    assert keep.read_text() == "precious"
    assert execution.status == "runtime_error"
    assert "deleted" not in execution.stdout


def test_environment_holds_no_secret(solver: Solver) -> None:
    execution = solver.run(hostile.READS_SECRETS)
    assert "no_key" in execution.stdout
    for secret in ("sk-test-secret-value-123", "sk-ant-test-secret-456"):
        assert secret not in execution.stdout + execution.stderr


@pytest.mark.slow
@pytest.mark.skipif("bwrap" not in SANDBOXES, reason="network isolation needs bubblewrap")
def test_no_network_under_bwrap() -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(TIMEOUT + 2)
    port = server.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        try:
            accepted.append(server.accept())
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    with Solver(workers=1, limits=Limits(timeout_s=TIMEOUT), sandbox="bwrap") as solver:
        execution = solver.run(hostile.connects(port))
    thread.join()
    server.close()
    assert not accepted
    assert "connected" not in execution.stdout
    assert execution.status == "runtime_error"


@pytest.mark.slow
def test_infinite_loop_times_out(solver: Solver) -> None:
    execution = solver.run(hostile.INFINITE_LOOP)
    assert execution.status == "timeout"
    assert execution.wall_s <= TIMEOUT + 2
    _still_works(solver)


@pytest.mark.slow
def test_ignoring_sigterm_does_not_help(solver: Solver) -> None:
    started = time.monotonic()
    execution = solver.run(hostile.IGNORES_SIGTERM)
    assert execution.status == "timeout"
    assert time.monotonic() - started <= TIMEOUT + 2


@pytest.mark.slow
def test_unbounded_memory_is_a_resource_limit(solver: Solver) -> None:
    execution = solver.run(hostile.UNBOUNDED_MEMORY)
    assert execution.status in ("resource_limit", "timeout"), execution
    assert execution.wall_s <= TIMEOUT + 2
    _still_works(solver)


def test_unbounded_recursion_is_a_resource_limit(solver: Solver) -> None:
    # A smaller stack than the default 512 MB: the limit under test is met in well under a
    # second even on a loaded machine, instead of racing the 3 s wall clock.
    execution = solver.run(hostile.UNBOUNDED_RECURSION, Limits(timeout_s=TIMEOUT, stack_mb=64))
    assert execution.status == "resource_limit", execution
    _still_works(solver)


@pytest.mark.slow
def test_raised_table_space_still_bounded(solver: Solver) -> None:
    execution = solver.run(hostile.RAISED_TABLE_SPACE)
    assert execution.status in ("resource_limit", "timeout"), execution
    assert execution.wall_s <= TIMEOUT + 2


def test_output_flood_is_capped(solver: Solver) -> None:
    execution = solver.run(hostile.OUTPUT_FLOOD)
    assert execution.status == "resource_limit"
    assert execution.limit == "output"
    assert len(execution.stdout) <= solver.limits.output_bytes
    _still_works(solver)


@pytest.mark.slow
def test_fork_bomb_is_contained(solver: Solver) -> None:
    marker = f"987{uuid.uuid4().int % 10**6}"
    execution = solver.run(hostile.fork_bomb(marker))
    assert execution.wall_s <= TIMEOUT + 2
    time.sleep(0.2)
    assert hostile.processes_with(marker) == []
    _still_works(solver)


def test_background_process_does_not_outlive_the_program(solver: Solver) -> None:
    marker = f"876{uuid.uuid4().int % 10**6}"
    execution = solver.run(hostile.leaves_background_processes(marker))
    assert execution.stdout.startswith("done")
    time.sleep(0.2)
    assert hostile.processes_with(marker) == []


@pytest.mark.parametrize("code", hostile.HALT_CODES)
def test_halt_with_odd_codes(solver: Solver, code: int) -> None:
    execution = solver.run(hostile.halts_with(code))
    assert execution.exit_code == code
    assert execution.status == "runtime_error"
    assert execution.stdout == "before\n"


def test_reading_stdin_gets_end_of_file(solver: Solver) -> None:
    execution = solver.run(hostile.READS_STDIN)
    assert execution.status == "ok"
    assert execution.stdout.strip() == "end_of_file"
    assert execution.wall_s < TIMEOUT


def test_consecutive_programs_are_isolated(outside: Path) -> None:
    """One worker, two programs: the second sees nothing of the first."""
    sandbox = SANDBOXES[0]
    marker = f"765{uuid.uuid4().int % 10**6}"
    with Solver(workers=1, limits=Limits(timeout_s=TIMEOUT), sandbox=sandbox) as solver:
        one = solver.run(hostile.leaves_traces(marker))
        first_dir = one.stdout.strip().splitlines()[-1]
        time.sleep(0.1)
        assert hostile.processes_with(marker) == []
        two = solver.run(hostile.looks_for_traces(first_dir))
    assert "no_file" in two.stdout
    assert "no_tmp" in two.stdout
    assert "no_shm" in two.stdout
    assert "entries=3" in two.stdout  # '.', '..' and its own program.pl
    assert not Path(first_dir).exists() or sandbox == "bwrap"
