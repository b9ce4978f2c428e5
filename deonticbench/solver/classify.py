"""Turning what a run produced into an ``Execution`` with one status from the closed set.

Pure functions of the supervisor's report, so every rule is testable without running
anything.  The order of the rules matters: being stopped by force (a limit, a signal)
outranks anything the program printed before it was stopped.
"""

from __future__ import annotations

import re
import signal
from typing import Any

from .execution import TIMEOUT_TERM_IGNORED, Execution, SandboxKind, Status

_RESOURCE_MESSAGES = re.compile(
    r"resource_error|Stack limit \(|stack_overflow|Not enough resources|out of memory|"
    r"Cannot allocate memory|Could not allocate|table_space|memory_limit|"
    r"Resource temporarily unavailable",
    re.IGNORECASE,
)
_SYNTAX = re.compile(r"Syntax error", re.IGNORECASE)
_ERROR_LINE = re.compile(
    r"^(ERROR:|Warning:.*Goal \((directive|initialization)\) failed)", re.MULTILINE
)
# A warning message starts with an unindented "Warning:" line; continuation lines are indented.
_WARNING_LINE = re.compile(r"^Warning: \S", re.MULTILINE)

_SIGNAL_LIMITS = {
    signal.SIGXCPU: "cpu",
    signal.SIGXFSZ: "file_size",
}


def classify(report: dict[str, Any], sandbox: SandboxKind) -> Execution:
    stdout = str(report.get("stdout", ""))
    stderr = str(report.get("stderr", ""))
    exit_code = report.get("exit_code")
    sig = report.get("signal")
    limit = report.get("limit")
    wall = float(report.get("wall_s", 0.0))
    warnings = len(_WARNING_LINE.findall(stderr))
    status: Status

    if report.get("error"):
        status, stderr = "crashed", f"{stderr}\n{report['error']}".strip()
    elif limit in ("timeout", TIMEOUT_TERM_IGNORED):
        status = "timeout"
    elif limit is not None:
        status = "resource_limit"
    elif sig is not None:
        if sig in _SIGNAL_LIMITS:
            status, limit = "resource_limit", _SIGNAL_LIMITS[sig]
        elif sig == signal.SIGKILL:
            # The kernel's SIGKILL at the hard CPU limit, or the OOM killer.
            status, limit = "resource_limit", "cpu_or_memory"
        elif _RESOURCE_MESSAGES.search(stderr):
            status, limit = "resource_limit", "memory"
        else:
            status = "crashed"
    elif _RESOURCE_MESSAGES.search(stderr):
        status, limit = "resource_limit", "memory"
    elif _SYNTAX.search(stderr):
        status = "syntax_error"
    elif _ERROR_LINE.search(stderr) or exit_code not in (0, None):
        status = "runtime_error"
    elif not stdout.strip():
        status = "no_output"
    else:
        status = "ok"
    return Execution(
        status=status,
        stdout=stdout,
        stderr=stderr,
        exit_code=exit_code,
        wall_s=wall,
        warnings=warnings,
        sandbox=sandbox,
        limit=limit,
        signal=sig,
    )
