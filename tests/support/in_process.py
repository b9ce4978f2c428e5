"""``deonticbench`` commands run inside the test's own process.

What a short command costs is mostly its start: Python, the package and, against a
provider, that provider's SDK (Anthropic's alone imports in about 1.9 CPU seconds,
OpenAI's in 1).  Here the command runs in the test's process, whose imports are paid once
per xdist worker.  What runs is the command line itself (``deonticbench.cli.main``, which
``python -m deonticbench`` and the console script call), with exactly the environment,
working folder and arguments a subprocess would have been given; its exit code, stdout and
stderr come back as ``subprocess.run`` gives them, an uncaught exception as the traceback
Python would have printed.

Tests about the process itself keep their subprocesses: a signal or a kill, a command
left running, the console script, what a child process can see.
"""

from __future__ import annotations

import os
import subprocess
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner


class _Entry:
    """``deonticbench.cli.main``, the entry point, as ``CliRunner`` calls a command."""

    @staticmethod
    def main(args: Sequence[str], **_: Any) -> Any:
        from deonticbench.cli import main  # the package, imported once per worker

        return main(list(args))


def run(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: str | os.PathLike[str]
) -> subprocess.CompletedProcess[str]:
    """``deonticbench ARGV`` with environment ``env`` (the whole of it: a variable of this
    process that ``env`` lacks is unset meanwhile) in folder ``cwd``."""
    changes: dict[str, str | None] = {k: None for k in os.environ if k not in env}
    changes.update(env)
    before = Path.cwd()
    os.chdir(cwd)
    try:
        entry: Any = _Entry()
        result = CliRunner().invoke(entry, list(argv), env=changes, prog_name="deonticbench")
    finally:
        os.chdir(before)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(
        ["deonticbench", *argv], result.exit_code, result.stdout, stderr
    )
