"""Options shared by several commands (one definition, so they read the same everywhere)."""

from __future__ import annotations

import click

from ..solver.execution import EXECUTORS

executor_option = click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default=EXECUTORS[0],
    show_default=True,
    help="How each program runs: fork = forked from a booted SWI-Prolog in the sandbox "
    "(fast; falls back to fresh where it cannot start), fresh = a new swipl process. "
    "Both give the same results.",
)
