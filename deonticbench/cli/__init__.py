"""The ``deonticbench`` command.  Thin: parse flags, call the library, print.

Subcommands live one per module and are imported only when invoked, so that
``deonticbench exec`` does not pay for the imports of ``eval`` or ``score``.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from ..errors import DeonticBenchError

__all__ = ["main"]

# command name -> module under deonticbench.cli defining ``command``
_COMMANDS = {
    "exec": "exec_cmd",
    "validate": "validate_cmd",
    "eval": "eval_cmd",
    "eval-set": "eval_set_cmd",
    "score": "score_cmd",
    "analyze": "analyze_cmd",
    "cascade": "cascade_cmd",
    "serve-reward": "serve_reward_cmd",
    "export": "export_cmd",
    "import-inspect": "import_inspect_cmd",
    "import-harbor": "import_harbor_cmd",
    "import-upstream": "import_upstream_cmd",
    "report": "report_cmd",
    "list": "list_cmd",
    "batches": "batches_cmd",
    "perturb": "perturb_cmd",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = _COMMANDS.get(cmd_name)
        if module is None:
            return None
        loaded = importlib.import_module(f"{__name__}.{module}")
        command: click.Command = loaded.command
        return command


@click.group(cls=_LazyGroup)
@click.version_option(package_name="deonticbench")
def cli() -> None:
    """DeonticBench: deontic reasoning over statutes, scored with SWI-Prolog."""


def main(argv: list[str] | None = None) -> Any:
    """Entry point: user errors end in one sentence and exit code 2, never a traceback."""
    try:
        result = cli.main(args=argv, standalone_mode=False)
    except DeonticBenchError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        # One line, like every other error: click's usage block would bury the sentence.
        where = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
        click.echo(f"error: {exc.format_message()}{where}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except OSError as exc:
        # A path the user gave that cannot be read or written, wherever it surfaced.
        where = f" ({exc.filename})" if exc.filename else ""
        click.echo(f"error: {exc.strerror or exc}{where}.", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("interrupted; finished work is kept", err=True)
        sys.exit(130)
    # Without standalone mode, click returns ``ctx.exit(n)`` codes instead of exiting.
    if isinstance(result, int) and result != 0:
        sys.exit(result)
    return result
