"""``deonticbench import-upstream``: the outputs of upstream's own generate_e2e.py as a run
folder of the paper protocol, every reply judged by the paper reader.  Thin: the
integration does the work."""

from __future__ import annotations

from pathlib import Path

import click

from ..data.cases import resolve_source
from ..solver import Limits
from ._options import (
    data_dir_option,
    hub_option,
    revision_option,
    split_option,
    timeout_option,
)


# --model is eval's backend spec; here the option names a folder of upstream's outputs,
# another thing, so it has its own name.
@click.command(name="import-upstream")
@click.argument("outputs_dir", type=click.Path(path_type=Path))
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The run folder to create (it must not hold a run yet).",
)
@click.option(
    "--model-folder",
    "model",
    default=None,
    help="The model whose outputs to import, as its folder path below each mode folder "
    "(e.g. openai/gpt-4.1-2025-04-14): needed when OUTPUTS_DIR holds several models, or "
    "names the model when the files sit directly in the mode folders.",
)
@split_option()
@timeout_option()
@data_dir_option()
@hub_option
@revision_option
def command(
    outputs_dir: Path,
    out: Path,
    model: str | None,
    split: str,
    timeout: float,
    data_dir: Path | None,
    hub: bool,
    revision: str | None,
) -> None:
    """Turn OUTPUTS_DIR, the outputs folder of upstream's scripts
    (<domain>/{direct,few_shot,zero_shot}/<model>/{source,prolog,standalone_prolog}.json),
    into a run folder of protocol paper that score, analyze, report and export read.
    Programs are read from upstream's own runs of them (<domain>/swipl/<mode>/*.txt)
    where those are there, else run again here (and the command says so)."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..integrations.upstream_outputs import import_upstream
    from ..store.imported import written_line

    source = resolve_source(data_dir, hub=hub, revision=revision)
    result = import_upstream(
        outputs_dir, out, source=source, split=split, model=model, limits=Limits(timeout_s=timeout)
    )
    run = result.run
    click.echo(
        f"wrote {written_line(run, of=f'of {result.model} from {result.files} output files')}"
        ", protocol paper"
    )
    click.echo(
        f"abstentions: {result.abstained}, of which {result.failed_generations} replies "
        "upstream recorded as not generated"
    )
    for unit, where in result.programs.items():
        click.echo(f"programs of {unit}: {where}")
    if result.rerun:
        click.echo(
            f"{result.rerun} programs were run again in this machine's sandbox: where it runs "
            "a program otherwise than upstream's machine did, their readings can differ"
        )
    click.echo(f"score it with: deonticbench score {run.path}")
