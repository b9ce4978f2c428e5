"""The hostile programs of the sandbox tests, in one place: ``test_sandbox_hostile`` checks
that each is contained, and ``test_executor_differential`` that each gives the same result
under both executors.

Programs that name something outside the sandbox take it as a parameter: a directory
outside any program's reach, a loopback port nobody may connect to, and a marker that the
processes a program starts carry in their command line (so a test can look for them).
"""

from __future__ import annotations

import os
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


# --- shell commands (the agents' bash tool) ---

SHELL_FORK_BOMB = "( :(){ :|:& };: ) & while ((SECONDS < 2)); do true; done; echo bombed"
"""A bash fork bomb that meets the process limit, then ``bombed`` on stdout.  The shell
forks once, before the bomb, and then only waits on builtins: in the classic
``:(){ :|:& };: ; echo bombed`` the shell's own second fork races the bomb for the
last process slots, and on a loaded machine bash retries it for 15 s."""


def processes_with(marker: str) -> list[int]:
    """The pids whose command line holds ``marker`` (a number no other test uses)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


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


# --- the sandbox policy's probe (tests/solver/test_sandbox_policy.py, the Harbor tests) ---


def probe_targets(marker: str, folders: list[Path]) -> list[str]:
    """Where a probe tries to write: ``marker`` in each folder (the test then checks the
    host, where none of them may exist)."""
    return [str(folder / marker) for folder in folders]


def sandbox_probe_sh(targets: list[str]) -> str:
    """A bash probe of what a sandbox's command holds: its capabilities and uid, its
    namespaces, every process it sees (with its command line), its environment and every
    ``/proc/*/environ`` it can read, and which of ``targets`` it could write."""
    writes = " ".join(f"'{t}'" for t in targets)
    return (
        "awk '/^(Uid|CapEff|CapPrm|CapBnd):/ { print substr($1, 1, length($1) - 1) \"=\" $2 }'"
        " /proc/self/status\n"
        'echo "ns_pid=$(readlink /proc/self/ns/pid)"\n'
        'echo "ns_net=$(readlink /proc/self/ns/net)"\n'
        "for p in /proc/[0-9]*; do "
        "echo \"proc=${p#/proc/} $(tr '\\0' ' ' < $p/cmdline 2>/dev/null)\"; done\n"
        "echo '--- env'; env\n"
        "for f in /proc/[0-9]*/environ; do "
        'if cat "$f" >/dev/null 2>&1; then echo "readable=$f"; '
        "tr '\\0' '\\n' < \"$f\"; fi; done\n"
        f"for t in {writes}; do "
        'if (echo x > "$t") 2>/dev/null; then echo "wrote=$t"; fi; done\n'
    )


def sandbox_probe_pl(targets: list[str]) -> str:
    """The same probe as a Prolog program (a worker's job has no shell of its own to
    trust): it reads ``/proc`` with Prolog's own file predicates."""
    atoms = ", ".join(f"'{t}'" for t in targets)
    return (
        ':- read_file_to_string(\'/proc/self/status\', S, []), split_string(S, "\\n", "", Ls),'
        ' forall(( member(L, Ls), member(K, ["Uid", "CapEff", "CapPrm", "CapBnd"]),'
        ' string_concat(K, ":", P), string_concat(P, R, L) ),'
        ' ( split_string(R, "\\t ", "\\t ", [V|_]), format(\'~w=~w~n\', [K, V]) )).\n'
        ":- read_link('/proc/self/ns/pid', P, _), format('ns_pid=~w~n', [P]).\n"
        ":- read_link('/proc/self/ns/net', N, _), format('ns_net=~w~n', [N]).\n"
        ":- directory_files('/proc', Fs), forall(( member(F, Fs), atom_number(F, _) ),"
        " ( atomic_list_concat(['/proc/', F, '/cmdline'], C),"
        ' catch(read_file_to_string(C, T, []), _, T = ""),'
        ' split_string(T, "\\u0000", "", W), atomic_list_concat(W, \' \', A),'
        " format('proc=~w ~w~n', [F, A]) )).\n"
        ":- writeln('--- env'), directory_files('/proc', Fs), forall(( member(F, Fs),"
        " atom_number(F, _), atomic_list_concat(['/proc/', F, '/environ'], E),"
        " catch(read_file_to_string(E, T, []), _, fail) ),"
        ' ( format(\'readable=~w~n\', [E]), split_string(T, "\\u0000", "", Vs),'
        " forall(member(V, Vs), writeln(V)) )).\n"
        f":- forall(member(T, [{atoms}]),"
        " catch(( open(T, write, S), write(S, x), close(S), format('wrote=~w~n', [T]) ),"
        " _, true)).\n"
    )


def probe_findings(output: str) -> dict[str, list[str]]:
    """A probe's output as key -> values (``proc``, ``wrote``, ``readable``... may repeat)."""
    found: dict[str, list[str]] = {}
    for line in output.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in {"Uid", "CapEff", "CapPrm", "CapBnd", "ns_pid", "ns_net", "proc",
                           "readable", "wrote"}:  # fmt: skip
            found.setdefault(key, []).append(value)
    return found


def held_to_policy(output: str, secrets: list[str], targets: list[str]) -> list[str]:
    """What a probe's output shows against the policy, as one sentence per breach (an
    empty list: none).  ``secrets`` are values planted in the harness's environment;
    ``targets`` the host paths the probe tried to write, none of which may exist."""
    import os

    found = probe_findings(output)
    breaches = []
    for key in ("CapEff", "CapPrm", "CapBnd"):
        if found.get(key) != ["0000000000000000"]:
            breaches.append(f"{key} is {found.get(key)}")
    if os.geteuid() == 0 and found.get("Uid", ["0"]) == ["0"]:
        breaches.append("the command ran as uid 0")
    for key, link in (("ns_pid", "/proc/self/ns/pid"), ("ns_net", "/proc/self/ns/net")):
        if not found.get(key) or found[key] == [os.readlink(link)]:
            breaches.append(f"{key} is the host's ({found.get(key)})")
    procs = found.get("proc", [])
    # The harness's own process (this test's interpreter) is the host process most
    # certainly running: its command line must not be among the sandbox's.
    own = Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    commands = [p.partition(" ")[2].strip() for p in procs]
    if not procs or own in commands or len(procs) > 40:
        breaches.append(f"host processes are visible: {procs[:10]}")
    for secret in secrets:
        if secret in output:
            breaches.append(f"the planted {secret[:12]}... is visible")
    for target in targets:
        if os.path.lexists(target):
            os.unlink(target)
            breaches.append(f"the host path {target} was written")
    return breaches
