"""The command line's one vocabulary: options shared by several commands, each defined
once here, so a name means one thing, with one type, metavar and help, everywhere.

A help's default is written one way, ``[default: ...]`` (click's own ``show_default``
form); ``tests/cli/test_vocabulary.py`` walks every command and holds every option to
this.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from ..data.sources import SPLITS
from ..solver import DEFAULT_TIMEOUT_S, EXECUTORS

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

PER_COMMAND_OPTIONS: dict[str, str] = {
    "--out": "where this command writes what it makes: a folder, or report's one HTML file",
    "--format": "the shape of what this command prints or writes, from its own choices",
    "--protocol": "the protocol this command's work follows, from the protocols it serves "
    "(eval: paper or harness for the prompted modes; export: harness or dar for Harbor tasks)",
}
"""The names whose help (and type) is each command's own, and why: one meaning ("this
command's output"), whose details differ by command.  Every other shared name has one
type and one help."""

dry_run_option = click.option(
    "--dry-run",
    is_flag=True,
    help="Count the calls and prompt tokens the first attempts will be billed for, and "
    "price their input with and without prompt caching and batches (eval-set: every run "
    "and the set's total); send nothing.",
)

assume_output_tokens_option = click.option(
    "--assume-output-tokens",
    type=int,
    default=None,
    help="With --dry-run: price this many output tokens per sample too, for a full "
    "estimate (output cannot be known beforehand).",
)

executor_option = click.option(
    "--executor",
    type=click.Choice(EXECUTORS),
    default=EXECUTORS[0],
    show_default=True,
    help="How each program runs: fork = forked from a booted SWI-Prolog in the sandbox "
    "(fast; falls back to fresh where it cannot start), fresh = a new swipl process. "
    "Both give the same results.",
)

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print JSON instead of text (stdout; notes on stderr)."
)

hub_option = click.option("--hub", is_flag=True, help="Load the cases from the Hugging Face hub.")

revision_option = click.option(
    "--revision", default=None, help="Hub dataset revision (with --hub)."
)

TIMEOUT_HELP = (
    "Wall-clock seconds each program may run (the paper's B.1: 20 s).  Upstream's "
    "scripts/run_swipl.sh stops programs at 10 s: --timeout 10 reproduces that."
)


def timeout_option(dest: str = "timeout") -> Decorator:
    """``--timeout``: one help everywhere; ``dest`` for eval's ``program_timeout``."""
    return click.option(
        "--timeout",
        dest,
        type=click.FloatRange(min=0, min_open=True),
        default=DEFAULT_TIMEOUT_S,
        show_default=True,
        help=TIMEOUT_HELP,
    )


reader_sensitivity_option = click.option(
    "--reader-sensitivity",
    is_flag=True,
    help="Also how far each first-attempt figure moves between the harness's reader and "
    "the paper's on the same stored replies (runs every program again in the sandbox, so "
    "it takes as long as the run's programs did).",
)

workers_option = click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Prolog programs run at once [default: cores + 1].",
)

limit_option = click.option(
    "--limit",
    "limit_text",
    default=None,
    metavar="N|A-B",
    help="Cases per domain: the first N (10), or a range counted from 1 (11-20).",
)

signal_option = click.option(
    "--signal",
    default="consistency",
    show_default=True,
    help="The confidence signal to use: consistency, verbal or logprob (docs/reliability.md).",
)

SPLIT_HELP = (
    "Which cases: smoke (the first 5 of hard), hard (the paper's test set) or whole; "
    "export also takes train (whole minus hard)."
)


def split_option(
    default: str | None = "hard", *, choices: Sequence[str] = SPLITS, default_text: str = ""
) -> Decorator:
    """``--split``: the same help everywhere; ``choices`` only for export's train, and
    ``default_text`` for a default that depends on other options (export's)."""
    return click.option(
        "--split",
        type=click.Choice(list(choices)),
        default=default,
        show_default=default is not None,
        help=SPLIT_HELP + (f" [default: {default_text}]" if default_text else ""),
    )


def data_dir_option(default: str = "DEONTICBENCH_DATA, else the hub") -> Decorator:
    """``--data-dir``: a local data folder in the upstream layout; ``default`` says where
    the data comes from without it (the one part that differs by command)."""
    return click.option(
        "--data-dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help=f"Local data folder in the upstream layout [default: {default}].",
    )


def domains_option(default: str = "all", dest: str = "domains") -> Decorator:
    return click.option(
        "--domains",
        dest,
        default=default,
        show_default=True,
        help="Domains, comma-separated, or all.",
    )


def bootstrap_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--bootstrap/-B`` (as ``replicates``) and ``--bootstrap-seed``: how score, report
    and cascade draw the bootstrap intervals."""
    # Imported here: metrics brings numpy, which exec and validate never need.
    from ..scoring.metrics import DEFAULT_BOOTSTRAP

    command = click.option(
        "--bootstrap-seed",
        "bootstrap_seed",
        default=0,
        show_default=True,
        type=int,
        help="Seed of the bootstrap's draws.",
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


exemplar_seed_option = click.option(
    "--exemplar-seed",
    "exemplar_seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the few-shot exemplar choice.",
)
