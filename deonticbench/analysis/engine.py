"""Running the harness's own Prolog analyser (``prolog/analyse.pl``) on one program.

The analyser is run like any program: the pool's sandbox, the same wall-clock, CPU and
memory limits.  The job sent is a small driver that consults ``prolog/analyse.pl`` (bound
read-only inside the sandbox) and carries the target program as a Prolog string; the
analyser writes it to its private directory, reads it with SWI-Prolog's own reader and
prints one JSON object.  Only the output cap is larger than a program's, because a proof
tree is longer than an answer line.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from functools import cache
from typing import Any, Literal

from .._paths import PROLOG
from ..errors import DeonticBenchError
from ..solver import Execution, Limits, SandboxKind, Solver
from ..solver.pool import SANDBOX_PROLOG

AnalyserMode = Literal["static", "full"]
ANALYSER = PROLOG / "analyse.pl"
PYTHON_SIDE_VERSION = "1"
"""Bumped when the Python reading of the analyser's output changes meaning."""
OUTPUT_BYTES = 4 * 1024 * 1024
"""Output cap of an analysis job (a program's own cap is 64 KiB)."""


class AnalyserError(DeonticBenchError):
    """The analyser itself did not produce a report (a bug or a limit, never the target's fault)."""


@cache
def analyser_version() -> str:
    """Content hash of the analyser and of this reading of it: the cache key's version."""
    digest = hashlib.sha256(ANALYSER.read_bytes())
    digest.update(PYTHON_SIDE_VERSION.encode())
    return digest.hexdigest()[:16]


def prolog_string(text: str) -> str:
    """``text`` as a double-quoted SWI-Prolog string literal (every character escaped
    that the reader would otherwise interpret)."""
    out: list[str] = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):x}\\")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def driver_program(mode: AnalyserMode, program: str, sandbox: SandboxKind = "bwrap") -> str:
    """The job: under bwrap, consult the analyser where the sandbox shows ``prolog/``
    read-only; under plain rlimits (where the job's uid may not read the host path) the
    analyser's text is the job itself, followed by the call."""
    call = f":- initialization(deonticbench_analyse({mode}, {prolog_string(program)}), main).\n"
    if sandbox == "bwrap":
        return f":- encoding(utf8).\n:- use_module('{SANDBOX_PROLOG}/{ANALYSER.name}').\n{call}"
    return ANALYSER.read_text(encoding="utf-8") + "\n" + call


def analysis_limits(base: Limits | None = None) -> Limits:
    return replace(base or Limits(), output_bytes=OUTPUT_BYTES)


def parse_report(execution: Execution) -> dict[str, Any]:
    """The analyser's JSON object from its execution, or AnalyserError saying why not."""
    for line in reversed(execution.stdout.splitlines()):
        if line.startswith("{"):
            try:
                report = json.loads(line)
            except json.JSONDecodeError:
                break
            if isinstance(report, dict):
                return report
    reason = execution.limit or execution.status
    tail = execution.stderr.strip().splitlines()[-1:] or [""]
    raise AnalyserError(f"the analyser produced no report ({reason}) {tail[0]}".strip())


def run_analyser(
    program: str, mode: AnalyserMode, solver: Solver | None = None, limits: Limits | None = None
) -> dict[str, Any]:
    """Analyse one program text in the sandbox; the parsed JSON report."""
    lim = analysis_limits(limits or (solver.limits if solver else None))
    if solver is None:
        with Solver(workers=1, limits=lim) as own:
            execution = own.run(driver_program(mode, program, own.sandbox), lim)
    else:
        execution = solver.run(driver_program(mode, program, solver.sandbox), lim)
    return parse_report(execution)
