"""``deonticbench import-upstream``: the outputs of upstream's own generate_e2e.py as a run
folder of the paper protocol, every reply judged by the paper reader.  Thin: the
integration does the work."""

from __future__ import annotations

from pathlib import Path

import click

from ..data.cases import resolve_source
from ..solver import Limits


@click.command(name="import-upstream")
@click.argument("outputs_dir", type=click.Path(path_type=Path))
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The run folder to create (it must not hold a run yet).",
)
@click.option(
    "--model",
    default=None,
    help="The model whose outputs to import, as its folder path below each mode folder "
    "(e.g. openai/gpt-4.1-2025-04-14): needed when OUTPUTS_DIR holds several models, or "
    "names the model when the files sit directly in the mode folders.",
)
@click.option(
    "--split",
    type=click.Choice(["hard", "smoke", "whole"]),
    default="hard",
    show_default=True,
    help="The split the outputs were generated from (their cases are matched to it by id).",
)
@click.option(
    "--timeout",
    type=float,
    default=Limits.timeout_s,
    show_default=True,
    help="Seconds each program may run (upstream's run_swipl.sh uses 10).",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="The data folder in the upstream layout (default: $DEONTICBENCH_DATA, else the hub).",
)
@click.option("--hub", is_flag=True, help="Read the data from the Hugging Face hub.")
@click.option("--revision", default=None, help="Hub revision (with --hub).")
def command(
    outputs_dir: Path,
    out: Path,
    model: str | None,
    split: str,
    timeout: float,
    data_dir: str | None,
    hub: bool,
    revision: str | None,
) -> None:
    """Turn OUTPUTS_DIR, the outputs folder of upstream's scripts
    (<domain>/{direct,few_shot,zero_shot}/<model>/{source,prolog,standalone_prolog}.json),
    into a run folder of protocol paper that score, analyze, report and export read."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..integrations.upstream_outputs import import_upstream

    source = resolve_source(data_dir, hub=hub, revision=revision)
    result = import_upstream(
        outputs_dir, out, source=source, split=split, model=model, limits=Limits(timeout_s=timeout)
    )
    run = result.run
    k = ", ".join(f"{d} K={n}" for d, n in run.k.items())
    click.echo(
        f"wrote {run.records} records of {result.model} from {result.files} output files "
        f"({', '.join(run.modes)}; {k}) to {run.out}, protocol paper"
    )
    click.echo(
        f"abstentions: {result.abstained}, of which {result.failed_generations} replies "
        "upstream recorded as not generated"
    )
    click.echo(f"score it with: deonticbench score {run.out}")
