"""DAR's own ``tests/test.sh`` (bash, real ``swipl``, read from the shared mirror) against
``reading.dar_verifier`` on a bank of final states: the same reward (1, 0 or none), the same
stdout byte for byte (what DAR's scorer reads), and, where no reward is written, the
same reason (test.sh ended by ``set -e``, or still running when Harbor stops it).

test.sh runs from a temporary copy in which only its absolute paths are rewritten to a
temporary root (``/tests/``, ``/app/``, ``/logs/verifier``: the test checks that
undoing exactly those substitutions gives the mirror's bytes back) and its ``TIMEOUT=30``
is lowered to ``TIMEOUT_S`` (the judge gets the same timeout), so the loops cost
seconds; the script then runs as Harbor runs it: ``bash`` with stdin at /dev/null,
stopped (its whole process group) at a stand-in for Harbor's verifier timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from deonticbench.errors import SandboxError
from deonticbench.reading import dar_verifier
from deonticbench.solver import Execution, Solver

MIRROR = Path(__file__).resolve().parents[3] / "shared" / "harbor-deonticbench"
SCRIPTS = {
    "program": MIRROR / "adapters/deonticbench_fewshot/template/tests/test.sh",
    "direct": MIRROR / "adapters/deonticbench_direct/template/tests/test.sh",
}
TIMEOUT_S = 2
HARBOR_STOP_S = TIMEOUT_S + 4.0
"""Stands in for Harbor's 120 s: well past test.sh's own timeout and the judge's grace."""

pytestmark = [
    pytest.mark.skipif(not MIRROR.is_dir(), reason="needs DAR's mirror (shared/)"),
    pytest.mark.skipif(shutil.which("swipl") is None, reason="needs swipl"),
]

MAIN = ":- initialization(main, main).\n"


@dataclass(frozen=True)
class Entry:
    name: str
    mode: str  # "program" (solution.pl) or "direct" (output/answer.txt)
    expected: str
    content: str | None  # None: the file is missing


def _says(*lines: str) -> str:
    body = ", ".join(f"write('{line}'), nl" for line in lines)
    return f"{MAIN}main :- {body}.\n"


BANK = [
    Entry("plain", "program", "1166", _says("Answer: 1166")),
    Entry("two answer lines joined", "program", "1166", _says("Answer: 11", "Answer: 66")),
    Entry("two answer lines, wrong", "program", "1166", _says("Answer: 1166", "Answer: 1166")),
    Entry("decimal cut", "program", "1166", _says("Answer: 1166.9")),
    Entry("decimal below", "program", "1166", _says("Answer: 1165.99")),
    Entry("dollar", "program", "1166", _says("Answer: $1166")),
    Entry("thousands", "program", "1166", _says("Answer: 1,166")),
    Entry("spaces inside", "program", "1166", _says("Answer: 1 166")),
    Entry("negative", "program", "-5", _says("Answer: -5.0")),
    Entry("lower case", "program", "1166", _says("answer: 1166")),
    Entry("upper case", "program", "1166", _says("ANSWER: 1166")),
    Entry("indented", "program", "1166", _says("  Answer: 1166")),
    Entry("no answer line", "program", "1166", _says("Result: 1166")),
    Entry("empty answer", "program", "1166", _says("Answer:   ")),
    Entry("echo option", "program", "1166", _says("Answer: -n")),
    Entry("class", "program", "Accepted", _says("Answer: ACCEPTED")),
    Entry("class with period", "program", "accepted", _says("Answer: Accepted.")),
    Entry("class non-ascii", "program", "\u00e9t\u00e9", _says("Answer: \u00c9T\u00c9")),
    Entry(
        "syntax error, answer after",
        "program",
        "1166",
        "broken( :- .\n" + _says("Answer: 1166"),
    ),
    Entry("syntax error only", "program", "1166", "main :- write('Answer: 1166'.\n"),
    Entry("runtime error", "program", "1166", f"{MAIN}main :- X is foo + 1, write(X), nl.\n"),
    Entry(
        "runtime error after answer",
        "program",
        "1166",
        f"{MAIN}main :- write('Answer: 1166'), nl, X is foo + 1, write(X).\n",
    ),
    Entry(
        "stderr", "program", "1166", f"{MAIN}main :- format(user_error, 'Answer: 1166~n', []).\n"
    ),
    Entry("no halt", "program", "1166", ":- write('Answer: 1166'), nl.\n"),
    Entry("no halt, unterminated", "program", "1166", ":- write('Answer: 1166').\n"),
    Entry("halt in directive", "program", "1166", ":- write('Answer: 1166'), nl, halt.\n"),
    Entry(
        "loop killed by timeout",
        "program",
        "1166",
        f"{MAIN}main :- write('Answer: 1166'), nl, flush_output, repeat, fail.\n",
    ),
    Entry(
        "loop killed by timeout, unflushed",
        "program",
        "1166",
        f"{MAIN}main :- write('Answer: 1166'), nl, repeat, fail.\n",
    ),
    Entry(
        "directive loop outlives SIGTERM",
        "program",
        "1166",
        ":- write('Answer: 1166'), nl, flush_output, repeat, fail.\n",
    ),
    Entry("missing solution", "program", "1166", None),
    Entry("direct", "direct", "1166", "Answer: 1166\n"),
    Entry("direct reasoning first", "direct", "1166", "Tax is 1166.\nAnswer: 1166.00\n"),
    Entry("direct thousands", "direct", "1166", "answer: $1,166\n"),
    Entry("direct two lines", "direct", "1166", "Answer: 11\nAnswer: 66"),
    Entry("direct no answer line", "direct", "1166", "The tax is 1166.\n"),
    Entry("direct upper case", "direct", "accepted", "ANSWER: accepted\n"),
    Entry("direct class", "direct", "Dismissed", "Answer: dismissed\r\n"),
    Entry("direct missing", "direct", "1166", None),
]


@dataclass(frozen=True)
class ScriptRun:
    reward: int | None
    stdout: str
    stopped: bool
    """Still running at ``HARBOR_STOP_S``: stopped as Harbor stops it."""


def _rewritten(script: str, root: Path) -> str:
    rewritten = (
        script.replace("/tests/", f"{root}/tests/")
        .replace("/app/", f"{root}/app/")
        .replace("/logs/verifier", f"{root}/logs/verifier")
        .replace("TIMEOUT=30\n", f"TIMEOUT={TIMEOUT_S}\n")
    )
    undone = (
        rewritten.replace(f"{root}/tests/", "/tests/")
        .replace(f"{root}/app/", "/app/")
        .replace(f"{root}/logs/verifier", "/logs/verifier")
        .replace(f"TIMEOUT={TIMEOUT_S}\n", "TIMEOUT=30\n")
    )
    assert undone == script, "only the paths and the timeout may change"
    assert "/app/" not in rewritten.replace(f"{root}/app/", "")
    return rewritten


def _final_state(root: Path, entry: Entry) -> Path:
    app = root / "app"
    (app / "output").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "tests" / "expected_label.txt").write_text(entry.expected + "\n", encoding="utf-8")
    if entry.content is not None:
        target = app / (
            dar_verifier.SOLUTION_FILE if entry.mode == "program" else dar_verifier.ANSWER_FILE
        )
        target.write_text(entry.content, encoding="utf-8")
    return app


def _run_test_sh(root: Path, mode: str) -> ScriptRun:
    script = root / "test.sh"
    script.write_text(_rewritten(SCRIPTS[mode].read_text(encoding="utf-8"), root))
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", "HOME": str(root)}
    proc = subprocess.Popen(
        ["bash", str(script)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # Harbor: ``(test.sh) > test-stdout.txt 2>&1``
        cwd=root,
        env=env,
        start_new_session=True,
    )
    stopped = False
    try:
        out, _ = proc.communicate(timeout=HARBOR_STOP_S)
    except subprocess.TimeoutExpired:
        _kill_session(proc.pid)
        out, _ = proc.communicate()
        stopped = True
    finally:
        _kill_session(proc.pid)
    reward_file = root / "logs" / "verifier" / "reward.txt"
    reward = int(reward_file.read_text()) if reward_file.exists() else None
    # The messages naming a missing file name it at its path in the container.
    return ScriptRun(reward, out.decode("utf-8").replace(f"{root}/app/", "/app/"), stopped)


def _kill_session(sid: int) -> None:
    """Kill every process of the script's session.  ``timeout`` moves the program into a
    process group of its own, so killing the script's group would leave a program that
    ignores SIGTERM spinning after the test; the session holds them all."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        # The fields after the command name (which may hold spaces) in parentheses:
        # state, ppid, pgrp, session.
        if int(stat.rsplit(")", 1)[1].split()[3]) == sid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


@pytest.fixture(scope="module")
def solver() -> Iterator[Solver]:
    with Solver(workers=1) as pool:
        yield pool


@pytest.mark.slow
@pytest.mark.parametrize("entry", BANK, ids=[e.name for e in BANK])
def test_judge_matches_dar_test_sh(entry: Entry, solver: Solver, tmp_path: Path) -> None:
    app = _final_state(tmp_path, entry)
    script = _run_test_sh(tmp_path, entry.mode)
    verdict = asyncio.run(
        dar_verifier.ajudge_dar_app(
            app,
            entry.expected + "\n",
            direct=entry.mode == "direct",
            solver=solver,
            timeout_s=TIMEOUT_S,
        )
    )
    assert (verdict.reward, verdict.stdout) == (script.reward, script.stdout)
    if script.reward is None:
        expected_reason = (
            dar_verifier.VERIFIER_TIMEOUT if script.stopped else dar_verifier.NO_REWARD_FILE
        )
        assert verdict.exception == expected_reason
    else:
        assert verdict.exception is None and not script.stopped


def test_bank_covers_every_outcome(tmp_path: Path) -> None:
    """The bank is not all one outcome: DAR's script gives 1, 0, no reward and a stop
    across it (checked on a few entries, cheaply)."""
    names = {
        "plain": 1,
        "thousands": 0,
        "no answer line": None,
        "lower case": 1,
        "upper case": 0,
    }
    by_name = {e.name: e for e in BANK}
    for i, (name, reward) in enumerate(names.items()):
        root = tmp_path / str(i)
        root.mkdir()
        _final_state(root, by_name[name])
        assert _run_test_sh(root, by_name[name].mode).reward == reward, name


def test_a_symlink_is_not_followed(solver: Solver, tmp_path: Path) -> None:
    """Where the judge departs from test.sh on purpose: DAR's ``[ -f ]`` follows a
    symlink, which in its container reaches only the container; here it could reach the
    host's files (a reference program), so a symlinked solution.pl, or one under a
    symlinked folder, counts as missing."""
    outside = tmp_path / "outside"
    (outside / "output").mkdir(parents=True)
    (outside / "solution.pl").write_text(_says("Answer: 1166"), encoding="utf-8")
    (outside / "output" / "answer.txt").write_text("Answer: 1166\n", encoding="utf-8")
    app = tmp_path / "app"
    app.mkdir()
    (app / "solution.pl").symlink_to(outside / "solution.pl")
    (app / "output").symlink_to(outside / "output")

    def judged(direct: bool) -> dar_verifier.DarVerdict:
        return asyncio.run(dar_verifier.ajudge_dar_app(app, "1166", direct=direct, solver=solver))

    assert judged(direct=False).reward == 0
    assert judged(direct=True).reward == 0
    (app / "solution.pl").unlink()
    (app / "solution.pl").write_text(_says("Answer: 1166"), encoding="utf-8")
    assert judged(direct=False).reward == 1


def test_a_failed_sandbox_is_not_read_as_no_answer() -> None:
    """A run the sandbox failed to make (the worker died: no exit status, no signal) is
    refused, never read as a program that printed no ``Answer:`` line."""
    failed = Execution(
        status="crashed",
        stdout="",
        stderr="the sandbox worker died or stopped answering",
        exit_code=None,
        wall_s=0.0,
        warnings=0,
        sandbox="bwrap",
    )
    with pytest.raises(SandboxError, match="sandbox failed"):
        dar_verifier.verdict_of_run("1166", failed)
    segfault = dataclasses.replace(failed, signal=11, stdout="Answer: 1166\n")
    # test.sh reads what it printed
    assert dar_verifier.verdict_of_run("1166", segfault).reward == 1


def test_the_program_cannot_read_the_label(solver: Solver, tmp_path: Path) -> None:
    """Where DAR's container leaks (``/tests/expected_label.txt`` is there while test.sh
    runs the program), the judge's sandbox does not: a program that prints the label file
    as its answer earns nothing, though test.sh itself credits the same program."""
    entry = Entry("reads the label", "program", "1166", "")
    app = _final_state(tmp_path, entry)
    label = tmp_path / "tests" / "expected_label.txt"
    program = (
        f"{MAIN}main :- read_file_to_string('{label}', S, []), "
        'split_string(S, "", " \\n", [L]), format(\'Answer: ~w~n\', [L]).\n'
    )
    (app / dar_verifier.SOLUTION_FILE).write_text(program, encoding="utf-8")
    assert _run_test_sh(tmp_path, "program").reward == 1
    verdict = asyncio.run(dar_verifier.ajudge_dar_app(app, "1166", direct=False, solver=solver))
    if verdict.execution is not None and verdict.execution.sandbox != "bwrap":
        pytest.skip("without bubblewrap the host's files are visible to programs")
    assert verdict.reward is None and verdict.exception == dar_verifier.NO_REWARD_FILE


@dataclass
class _Spinner:
    """The busy core's spinner: its CPU seconds and lifetime, known once it is reaped."""

    cpu_s: float = 0.0
    lived_s: float = 0.0


@contextlib.contextmanager
def _one_busy_core(seconds: float) -> Iterator[_Spinner]:
    """This thread, and every thread and process started from it while the block runs,
    confined to one core that a spinner (bounded in time) keeps busy: every core a program
    started here may use is busy, while the machine's other cores stay free for the rest
    of the suite."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    spin = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass\n"
    found = _Spinner()
    try:
        started = time.monotonic()
        spinner = subprocess.Popen(["python3", "-c", spin])
        try:
            yield found
        finally:
            spinner.kill()
            _, _, usage = os.wait4(spinner.pid, 0)
            spinner.returncode = -signal.SIGKILL  # reaped here, for its usage
            found.cpu_s = usage.ru_utime + usage.ru_stime
            found.lived_s = time.monotonic() - started
    finally:
        os.sched_setaffinity(0, before)


@pytest.mark.slow
@pytest.mark.parametrize("load", ["idle", "busy"])
def test_a_directive_loop_gives_no_reward_at_dars_own_timeout_whatever_the_load(
    load: str, solver: Solver, tmp_path: Path
) -> None:
    """DAR's real 30 s: a directive that prints its answer and then loops outlives test.sh's
    SIGTERM, so Harbor stops the verifier and no reward is written, on an idle machine
    (where a CPU limit of 30 s would end the loop first) as on a busy one (the program
    shares its only core with a spinner, so it has had far less CPU time than 30 s when
    the wall clock ends it)."""
    entry = Entry(
        "directive loop",
        "program",
        "1166",
        ":- write('Answer: 1166'), nl, flush_output, repeat, fail.\n",
    )
    app = _final_state(tmp_path, entry)
    if load == "busy":
        # A pool of its own, started on the busy core: its workers and their programs
        # inherit the confinement.
        with (
            _one_busy_core(dar_verifier.DAR_TIMEOUT_S + 10) as spinner,
            Solver(workers=1) as confined,
        ):
            verdict = asyncio.run(
                dar_verifier.ajudge_dar_app(app, "1166\n", direct=False, solver=confined)
            )
        # The core was shared: the spinner had well under the whole of it.
        assert spinner.cpu_s < 0.8 * spinner.lived_s, spinner
    else:
        judging = dar_verifier.ajudge_dar_app(app, "1166\n", direct=False, solver=solver)
        verdict = asyncio.run(judging)
    assert (verdict.reward, verdict.exception) == (None, dar_verifier.VERIFIER_TIMEOUT)
    assert verdict.execution is not None
    assert verdict.execution.stdout == "Answer: 1166\n"
