"""``deonticbench cascade``: a small run, deferring to a large one when unsure.  Thin:
the library (``deonticbench.reliability.cascade``) does the work."""

from __future__ import annotations

from pathlib import Path

import click

from ._options import bootstrap_options, signal_option


@click.command(name="cascade")
@click.argument("small_run", type=click.Path(path_type=Path))
@click.argument("large_run", type=click.Path(path_type=Path), required=False)
@signal_option
@click.option(
    "--prices",
    type=click.Path(path_type=Path, dir_okay=False),
    help="YAML of list prices per model spec (usd_per_mtok_in/out); else eval/models.yaml.",
)
@click.option(
    "--defer-to",
    type=click.Choice(["model", "human"]),
    default="model",
    show_default=True,
    help="Whom an unsure case goes to: LARGE_RUN's model, or a person.",
)
@click.option(
    "--human-accuracy",
    type=click.FloatRange(0.0, 1.0),
    default=1.0,
    show_default=True,
    help="With --defer-to human: the share of deferred cases the person gets right.",
)
@click.option(
    "--human-cost",
    type=click.FloatRange(min=0.0),
    default=None,
    help="With --defer-to human: the cost of one deferred case (USD).",
)
@bootstrap_options
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "markdown", "csv"]),
    default="table",
    show_default=True,
    help="What to print: the table as text or markdown, or its rows as CSV.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Also write cascade.csv, cascade.md and one frontier figure per group here.",
)
def command(
    small_run: Path,
    large_run: Path | None,
    signal: str,
    prices: Path | None,
    defer_to: str,
    human_accuracy: float,
    human_cost: float | None,
    replicates: int,
    bootstrap_seed: int,
    fmt: str,
    out: Path | None,
) -> None:
    """Answer with SMALL_RUN's model when its confidence is at least tau, else defer to
    LARGE_RUN's (or a person): every tau, the Pareto frontier and a cross-fitted tau."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..reliability.api import cascade_folders, cascade_text, write_cascade
    from ..reliability.signals import SIGNALS

    if signal not in SIGNALS:
        raise click.BadParameter(f"choose from {', '.join(SIGNALS)}", param_hint="--signal")
    results = cascade_folders(
        small_run,
        large_run,
        signal=signal,
        prices=prices,
        defer_to="human" if defer_to == "human" else "model",
        human_accuracy=human_accuracy,
        human_cost=human_cost,
        bootstrap=replicates,
        seed=bootstrap_seed,
    )
    if defer_to == "human":
        click.echo(
            f"deferral: a person, right {human_accuracy:.0%} of the time, at {human_cost} per case"
        )
    click.echo(cascade_text(results, fmt), nl=False)
    for r in results:
        for note in r.notes:
            click.echo(f"{r.domain} {r.mode}: {note}", err=True)
    if out is not None:
        drawn = write_cascade(results, out)
        click.echo(f"wrote cascade.csv, cascade.md and {drawn} figure(s) to {out}")
