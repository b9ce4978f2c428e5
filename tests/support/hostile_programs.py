"""The hostile programs of the sandbox tests, in one place: ``test_sandbox_hostile`` checks
that each is contained, and ``test_executor_differential`` that each gives the same result
under both executors.

Programs that name something outside the sandbox take it as a parameter: a directory
outside any program's reach, a loopback port nobody may connect to, and a marker that the
processes a program starts carry in their command line (so a test can look for them).
"""

from __future__ import annotations

from pathlib import Path

HALT_CODES = (1, 2, 3, 127, 255)


def shell_writes_outside(target: Path) -> str:
    return f":- catch(shell('echo pwned > {target}'), E, (print_message(error, E))).\n"


def process_writes_outside(target: Path) -> str:
    return (
        ":- use_module(library(process)).\n"
        f":- process_create(path(sh), ['-c', 'echo pwned > {target}'], [process(P)]),"
        " process_wait(P, S), writeln(S).\n"
    )


def writes_file(target: Path) -> str:
    return f":- open('{target}', write, S), write(S, pwned), close(S), writeln(wrote).\n"


def deletes_file(target: Path) -> str:
    return f":- delete_file('{target}'), writeln(deleted).\n"


READS_SECRETS = (
    ":- ( getenv('OPENAI_API_KEY', V) -> format('key=~w~n', [V]) ; writeln(no_key) ).\n"
    ":- read_file_to_string('/proc/self/environ', S, []), writeln(S).\n"
    ":- forall(member(P, ['/proc/1/environ', '/proc/2/environ']),"
    " catch((read_file_to_string(P, T, []), writeln(T)), _, true)).\n"
)


def connects(port: int) -> str:
    return (
        ":- use_module(library(socket)).\n"
        f":- tcp_connect('127.0.0.1':{port}, S, []), writeln(connected), close(S).\n"
    )


INFINITE_LOOP = "loop :- loop.\n:- loop.\n"
IGNORES_SIGTERM = ":- on_signal(term, _, true), on_signal(int, _, true).\nspin :- spin.\n:- spin.\n"
UNBOUNDED_MEMORY = (
    ":- set_prolog_flag(stack_limit, 100 000 000 000).\n"
    "grow(L) :- length(X, 1000000), grow([X|L]).\n:- grow([]).\n"
)
UNBOUNDED_RECURSION = "r(N) :- M is N + 1, r(M), true.\n:- r(0).\n"
RAISED_TABLE_SPACE = (
    ":- set_prolog_flag(table_space, 100 000 000 000).\n"
    ":- table p/1.\np(X) :- between(1, inf, X).\n:- p(_), fail ; true.\n"
)
OUTPUT_FLOOD = ":- repeat, write(xxxxxxxxxxxxxxxxxxxxxxxx), fail.\n"
READS_STDIN = ":- read(X), writeln(X).\n"


def halts_with(code: int) -> str:
    return f":- writeln(before), halt({code}).\n"


def fork_bomb(marker: str) -> str:
    return (
        ":- use_module(library(process)).\n"
        f"spawn :- catch(process_create(path(sleep), ['{marker}'], []), _, true).\n"
        ":- forall(between(1, 500, _), spawn), writeln(spawned).\n"
    )


def leaves_background_processes(marker: str) -> str:
    return (
        ":- use_module(library(process)).\n"
        f":- process_create(path(setsid), ['sh', '-c', 'sleep {marker} &'], [detached(true)]).\n"
        f":- process_create(path(sh), ['-c', 'nohup sleep {marker} >/dev/null 2>&1 &'], []).\n"
        ":- writeln(done).\n"
    )


def leaves_traces(marker: str) -> str:
    """The first of two consecutive programs: files everywhere it may write, a detached
    process, and its own directory's name on stdout."""
    return (
        ":- use_module(library(process)).\n"
        ":- open('secret.txt', write, S), write(S, first), close(S).\n"
        ":- catch((open('/tmp/left.txt', write, S2), close(S2)), _, true).\n"
        ":- catch((open('/dev/shm/left.txt', write, S3), close(S3)), _, true).\n"
        f":- process_create(path(setsid), ['sleep', '{marker}'], [detached(true)]).\n"
        ":- working_directory(D, D), writeln(D).\n"
    )


def looks_for_traces(first_dir: str) -> str:
    """The second of two consecutive programs: does it see anything of the first?"""
    return (
        f":- ( exists_file('{first_dir}secret.txt') -> writeln(saw_file) ; writeln(no_file) ).\n"
        ":- ( exists_file('/tmp/left.txt') -> writeln(saw_tmp) ; writeln(no_tmp) ).\n"
        ":- ( exists_file('/dev/shm/left.txt') -> writeln(saw_shm) ; writeln(no_shm) ).\n"
        ":- directory_files('.', Fs), length(Fs, N), format('entries=~w~n', [N]).\n"
    )


def all_programs(outside: Path, port: int, marker: str) -> dict[str, str]:
    """Every hostile program above, by name, for tests that run them all."""
    programs = {
        "shell_writes_outside": shell_writes_outside(outside / "from_shell.txt"),
        "process_writes_outside": process_writes_outside(outside / "from_process.txt"),
        "writes_outside": writes_file(outside / "direct.txt"),
        "writes_root_home": writes_file(Path("/root/deonticbench-escape.txt")),
        "writes_etc": writes_file(Path("/etc/escape")),
        "deletes_outside": deletes_file(outside / "keep.txt"),
        "reads_secrets": READS_SECRETS,
        "connects": connects(port),
        "infinite_loop": INFINITE_LOOP,
        "ignores_sigterm": IGNORES_SIGTERM,
        "unbounded_memory": UNBOUNDED_MEMORY,
        "unbounded_recursion": UNBOUNDED_RECURSION,
        "raised_table_space": RAISED_TABLE_SPACE,
        "output_flood": OUTPUT_FLOOD,
        "reads_stdin": READS_STDIN,
        "fork_bomb": fork_bomb(marker),
        "leaves_background_processes": leaves_background_processes(marker),
        "leaves_traces": leaves_traces(marker),
        "looks_for_traces": looks_for_traces("/tmp/jobs/job/"),
    }
    programs.update({f"halts_{code}": halts_with(code) for code in HALT_CODES})
    return programs
