"""No program forked from the fork server can affect a later one.

Each hostile program below attacks the fork server or the process state every child
starts from (signals, ptrace, /proc, flags, operators, modules, clauses, hooks, files,
processes, forged replies), most of them aiming to make the next program print a chosen
answer.  After each, an ordinary program must run exactly as it did before any attack,
from the same, never restarted, fork server.  And when the fork server does die, the
worker restarts it and retries the job once, then reports it.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deonticbench.solver import Limits, Solver
from deonticbench.solver.pool import bwrap_works, supervisor_command

SANDBOXES = ["bwrap", "rlimits"] if bwrap_works() else ["rlimits"]
AS_ROOT = os.geteuid() == 0

# Prints what any of the attacks below would change, then an answer line.
VICTIM = """\
p(X) :- true.
:- initialization(main).
main :-
    X = "ab", ( string(X) -> writeln(dq_string) ; writeln(dq_other) ),
    current_prolog_flag(unknown, U), writeln(unknown(U)),
    current_prolog_flag(occurs_check, O), writeln(occurs_check(O)),
    current_prolog_flag(stack_limit, L), writeln(stack_limit(L)),
    ( current_op(_, _, ===>) -> writeln(saw_op) ; writeln(no_op) ),
    ( current_op(P, T, is) -> writeln(op(P, T, is)) ; writeln(no_is) ),
    ( current_predicate(user:poisoned/0) -> writeln(saw_clause) ; writeln(no_clause) ),
    ( predicate_property(user:message_hook(_, _, _), number_of_clauses(N)), N > 0
    -> writeln(saw_hook) ; writeln(no_hook) ),
    ( nb_current(poison, _) -> writeln(saw_gvar) ; writeln(no_gvar) ),
    ( recorded(poison, _) -> writeln(saw_record) ; writeln(no_record) ),
    ( current_module(poison_module) -> writeln(saw_module) ; writeln(no_module) ),
    ( catch(lists:append([a], [b], [a, b]), _, fail) -> writeln(lists_ok) ; writeln(lists_bad) ),
    Y is 7 * 2,
    format("Total cost: ~w~n", [Y]).
"""

_PPID = (
    "server_pid(P) :- read_file_to_string('/proc/self/stat', S, []),"
    " split_string(S, ' ', '', [_, _, _, PS|_]), number_string(P, PS).\n"
)

# A helper process that tries what Prolog cannot: ptrace and /proc/<pid>/mem.  (The
# system's python3: the one running the tests may sit under a home the job cannot enter.)
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")
_PTRACE = (
    "import ctypes, os, sys\n"
    "pid = int(sys.argv[1])\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "print('attach', libc.ptrace(16, pid, 0, 0), ctypes.get_errno())\n"
    "print('seize', libc.ptrace(0x4206, pid, 0, 0), ctypes.get_errno())\n"
    "for mode in (os.O_RDONLY, os.O_WRONLY):\n"
    "    try:\n"
    "        os.close(os.open(f'/proc/{pid}/mem', mode)); print('mem opened', mode)\n"
    "    except OSError as exc:\n"
    "        print('mem', mode, exc.errno)\n"
)

ATTACKS = {
    "signals the server": _PPID
    + ":- use_module(library(unix)).\n"
    + ":- server_pid(P), forall(member(S, [kill, term, stop, int, usr1, hup]),"
    " (catch(kill(P, S), E, (print_message(informational, E))))), writeln(signalled).\n"
    ":- catch(kill(0, term), _, true).\n",
    "ptraces and opens the server's memory": _PPID
    + ":- use_module(library(process)).\n"
    + ":- server_pid(P), number_string(P, PS), process_create(path(python3),"
    f" ['-I', '-S', '-c', {_PTRACE!r}, PS], [stdout(pipe(O))]),"
    " read_string(O, _, Out), write(Out).\n"
    ":- server_pid(P), forall(member(F, [mem, environ, maps, fd]),"
    " (format(atom(Path), '/proc/~w/~w', [P, F]),"
    " catch((open(Path, read, S), close(S), writeln(opened(F))), E, true))).\n",
    "forges server replies on every descriptor": ":- forall(between(0, 64, N),"
    " catch((format(atom(F), '/proc/self/fd/~w', [N]), open(F, append, S),"
    " format(S, 'exited 0~nstarted 1~nready 1~n', []), close(S)), _, true)).\n"
    ":- writeln('Total cost: 999').\n",
    "changes global flags": ":- set_prolog_flag(double_quotes, atom).\n"
    ":- set_prolog_flag(unknown, fail).\n:- set_prolog_flag(occurs_check, true).\n"
    ":- set_prolog_flag(stack_limit, 10000000).\n:- set_prolog_flag(verbose, normal).\n"
    ":- set_prolog_flag(user:double_quotes, codes).\n",
    "changes operators": ":- op(700, xfx, ===>).\n:- op(0, xfx, is).\n"
    ":- op(200, xfy, user:(===>)).\n",
    "changes modules": ":- assertz(lists:append(_, _, _)).\n"
    ":- assertz(poison_module:p).\n:- add_import_module(user, poison_module, start).\n"
    ":- catch(redefine_system_predicate(format(_, _)), _, true).\n"
    "format(_, _) :- writeln('Total cost: 999').\n"
    ":- delete_import_module(user, system).\n",
    "asserts clauses and hooks": ":- assertz(user:poisoned).\n"
    ":- asserta((user:message_hook(_, _, _) :- writeln('Total cost: 999'))).\n"
    ":- asserta((user:goal_expansion(format(_, _), writeln('Total cost: 999')))).\n"
    ":- asserta((user:term_expansion(_, (:- writeln('Total cost: 999'))))).\n"
    ":- assertz((user:portray(_) :- write('Total cost: 999'))).\n",
    "sets globals and records": ":- nb_setval(poison, 1), recorda(poison, 1),"
    " flag(poison, _, 1), at_halt(writeln('Total cost: 999')).\n",
    "leaves files for the next job": ":- catch(make_directory('.config'), _, true),"
    " catch(make_directory('.config/swi-prolog'), _, true),"
    " open('.config/swi-prolog/init.pl', write, S), writeln(S, ':- writeln(poison).'),"
    " close(S).\n"
    ":- forall(member(F, ['/tmp/poison', '/tmp/jobs/poison', '/dev/shm/poison',"
    " '/var/tmp/poison', '/tmp/jobs/io/stdout']),"
    " catch((open(F, write, S), writeln(S, 'Total cost: 999'), close(S)), _, true)).\n",
    "leaves processes to rewrite the next job's program": ":- use_module(library(process)).\n"
    ":- use_module(library(unix)).\n"
    ":- working_directory(D, D), atom_concat(D, 'program.pl', F),"
    " format(atom(Cmd), 'for i in $(seq 100); do sleep 0.02;"
    " echo \":- writeln(\\'Total cost: 999\\').\" > ~w; done', [F]),"
    " process_create(path(setsid), [sh, '-c', Cmd], [detached(true)]),"
    " process_create(path(sh), ['-c', Cmd], []).\n"
    ":- fork(P), ( P == child -> sleep(0.5), writeln('Total cost: 999'), halt ; true ).\n",
}


def _tree() -> dict[int, tuple[int, bytes]]:
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            table[int(entry)] = (int(stat[stat.rfind(b")") + 2 :].split()[1]), cmdline)
    return table


def fork_servers(solver: Solver) -> list[int]:
    """Host pids of the solver's fork servers (the children of a supervisor that run
    fork_server:serve; their own children carry the same command line)."""
    table = _tree()
    roots = {w.proc.pid for w in solver._all if w.proc is not None}
    inside: set[int] = set()
    frontier = roots
    while frontier:
        frontier = {pid for pid, (ppid, _) in table.items() if ppid in frontier} - inside
        inside |= frontier
    return [
        pid
        for pid in inside
        if b"fork_server:serve" in table[pid][1]
        and supervisor_command()[-1].encode() in table.get(table[pid][0], (0, b""))[1]
    ]


def _observed(solver: Solver, program: str) -> tuple[object, ...]:
    e = solver.run(program)
    return (e.status, e.stdout, e.stderr, e.exit_code, e.warnings)


@pytest.fixture(params=SANDBOXES, scope="module")
def solver(request: pytest.FixtureRequest) -> Iterator[Solver]:
    with Solver(workers=1, limits=Limits(timeout_s=5), sandbox=request.param, executor="fork") as s:
        yield s


def test_children_run_under_another_uid_than_the_server(solver: Solver) -> None:
    program = (
        _PPID + ":- server_pid(P), format(atom(F), '/proc/~w/status', [P]),"
        " read_file_to_string(F, S, []), split_string(S, '\\n', '', Ls),"
        " forall((member(L, Ls), sub_string(L, 0, _, _, 'Uid')), format('server ~w~n', [L])).\n"
        ":- read_file_to_string('/proc/self/status', S, []), split_string(S, '\\n', '', Ls),"
        " forall((member(L, Ls), sub_string(L, 0, _, _, 'Uid')), format('child ~w~n', [L])).\n"
    )
    execution = solver.run(program)
    assert solver._all[0].last_report["executor"] == "fork"
    server, child = execution.stdout.splitlines()
    server_uids = server.split("\t")[1:]
    child_uids = child.split("\t")[1:]
    assert len(server_uids) == len(child_uids) == 4
    if AS_ROOT:
        assert set(server_uids) == {"0"}
        assert not set(child_uids) & set(server_uids)


@pytest.mark.slow
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_no_attack_reaches_the_next_program(solver: Solver, attack: str) -> None:
    before = _observed(solver, VICTIM)
    assert before[0] == "ok" and before[1].endswith("Total cost: 14\n"), before
    servers = fork_servers(solver)
    assert len(servers) == 1
    solver.run(ATTACKS[attack])
    after = _observed(solver, VICTIM)
    assert after == before
    # The same fork server, never restarted, serves the next program.
    assert fork_servers(solver) == servers
    assert solver._all[0].last_report["fork_restarts"] == 0


def test_attacks_are_denied(solver: Solver) -> None:
    """The signals and the ptrace above fail for want of permission, not by luck."""
    signals = solver.run(ATTACKS["signals the server"])
    assert "signalled" in signals.stdout
    traced = solver.run(ATTACKS["ptraces and opens the server's memory"])
    if SYSTEM_PYTHON:
        assert "attach -1 1" in traced.stdout  # EPERM
        assert "seize -1 1" in traced.stdout
    assert "mem opened" not in traced.stdout
    assert "opened(" not in traced.stdout


def _kill_servers_of(
    solver: Solver, *, every: float | None, after: float, stop: threading.Event
) -> None:
    time.sleep(after)
    while not stop.is_set():
        for pid in fork_servers(solver):
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        if every is None:
            return
        time.sleep(every)


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_dead_fork_server_is_restarted_and_its_job_retried_once(sandbox: str) -> None:
    program = ":- sleep(1.0), writeln(done).\n"
    with Solver(workers=1, sandbox=sandbox, executor="fork") as solver:  # type: ignore[arg-type]
        solver.run(":- writeln(warm).\n")
        stop = threading.Event()
        killer = threading.Thread(
            target=_kill_servers_of,
            args=(solver,),
            kwargs={"every": None, "after": 0.3, "stop": stop},
        )
        killer.start()
        execution = solver.run(program)
        killer.join()
        assert execution.status == "ok" and execution.stdout == "done\n"
        assert solver._all[0].last_report["fork_restarts"] == 1
        assert solver._all[0].last_report["executor"] == "fork"

        # Killed again and again: the retry dies too, and the job is reported.
        stop = threading.Event()
        killer = threading.Thread(
            target=_kill_servers_of,
            args=(solver,),
            kwargs={"every": 0.05, "after": 0.3, "stop": stop},
        )
        killer.start()
        execution = solver.run(program)
        stop.set()
        killer.join()
        assert execution.status == "crashed"
        assert "fork server died twice" in execution.stderr
        # And the worker carries on, with a new fork server.
        assert solver.run(":- writeln(again).\n").stdout == "again\n"
        assert solver._all[0].last_report["executor"] == "fork"
        assert len(fork_servers(solver)) == 1


def test_fresh_executor_starts_no_fork_server() -> None:
    with Solver(workers=1, executor="fresh") as solver:
        assert solver.run(":- writeln(a).\n").stdout == "a\n"
        assert fork_servers(solver) == []
        assert solver.executor == "fresh"
    assert sys.version_info >= (3, 10)


_LOADED = (
    ":- ( current_predicate(deonticbench_analyse:deonticbench_analyse_batch/2)"
    " -> writeln(loaded) ; writeln(pristine) ).\n"
)
_LEAK = ":- assertz(deonticbench_analyse:left_behind(1)), writeln(asserted).\n"
_SEES_LEAK = (
    ":- ( catch(deonticbench_analyse:left_behind(_), _, fail)"
    " -> writeln(leaked) ; writeln(clean) ).\n"
)


@pytest.mark.skipif("bwrap" not in SANDBOXES, reason="bubblewrap cannot run here")
def test_a_preloaded_server_serves_only_the_jobs_that_ask_and_keeps_nothing_between_them() -> None:
    """The analyser's jobs ask for a SWI-Prolog that loaded prolog/analyse.pl: they find
    it loaded before they load anything, from one second fork server that stays up; a
    program that does not ask runs in a pristine SWI-Prolog; and what one preloaded job
    changes in the loaded module is gone for the next."""
    with Solver(workers=1, sandbox="bwrap", executor="fork") as solver:
        first = solver.run(_LOADED, preload="analyse.pl")
        servers = sorted(fork_servers(solver))
        plain = solver.run(_LOADED)
        solver.run(_LEAK, preload="analyse.pl")
        after = solver.run(_SEES_LEAK, preload="analyse.pl")
        again = solver.run(_LOADED, preload="analyse.pl")
        unknown = solver.run(_LOADED, preload="no_such_file.pl")
        outside = solver.run(_LOADED, preload="../prolog/analyse.pl")
        assert sorted(fork_servers(solver)) == servers  # the same two, never restarted
        report = solver._all[0].last_report
    assert (first.stdout, again.stdout) == ("loaded\n", "loaded\n")
    assert len(servers) == 2
    assert plain.stdout == "pristine\n"
    assert after.stdout == "clean\n"
    assert (unknown.stdout, outside.stdout) == ("pristine\n", "pristine\n")
    assert report["fork_restarts"] == 0


def test_under_process_limits_a_preload_is_ignored() -> None:
    """Without bubblewrap the job's uid may not read the harness's files at a fixed
    path: no server preloads anything, and the job runs as any program does."""
    with Solver(workers=1, sandbox="rlimits", executor="fork") as solver:
        assert solver.run(_LOADED, preload="analyse.pl").stdout == "pristine\n"
