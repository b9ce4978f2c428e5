"""Options shared by several commands (one definition, so they read the same everywhere)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from ..solver import EXECUTORS

executor_option = click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default=EXECUTORS[0],
    show_default=True,
    help="How each program runs: fork = forked from a booted SWI-Prolog in the sandbox "
    "(fast; falls back to fresh where it cannot start), fresh = a new swipl process. "
    "Both give the same results.",
)


def bootstrap_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--bootstrap/-B`` (as ``replicates``) and ``--seed``: how score and report draw
    the bootstrap intervals."""
    # Imported here: metrics brings numpy, which exec and validate never need.
    from ..scoring.metrics import DEFAULT_BOOTSTRAP

    command = click.option(
        "--seed", default=0, show_default=True, type=int, help="Bootstrap seed."
    )(command)
    return click.option(
        "--bootstrap",
        "-B",
        "replicates",
        default=DEFAULT_BOOTSTRAP,
        show_default=True,
        type=click.IntRange(min=1),
        help="Bootstrap replicates for the intervals.",
    )(command)
