"""``deonticbench perturb``: counterfactual variants of the numeric domains' cases."""

from __future__ import annotations

from pathlib import Path

import click

from ..data.domains import parse_domains
from ..data.sources import resolve_source
from ..settings.perturb import perturb_split
from ._options import data_dir_option, domains_option, hub_option, split_option


@click.command()
@domains_option("sara_numeric,airline", dest="domains_spec")
@split_option()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="A new data folder (upstream layout) for the variants; use it with --data-dir.",
)
@click.option(
    "--variants",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Variants made of each case, each with new amounts.",
)
@click.option(
    "--perturb-seed",
    "seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the variants' new amounts.",
)
@data_dir_option()
@hub_option
def command(
    domains_spec: str,
    split: str,
    out: Path,
    variants: int,
    seed: int,
    data_dir: Path | None,
    hub: bool,
) -> None:
    """Change the amounts of each case, with the gold its perturbed reference prints."""
    reports = perturb_split(
        parse_domains(domains_spec),
        split=split,
        out=out,
        source=resolve_source(data_dir, hub=hub),
        variants=variants,
        seed=seed,
    )
    for r in reports:
        skipped = ", ".join(f"{n} {why}" for why, n in sorted(r.skipped.items()))
        click.echo(
            f"{r.domain}: {r.variants} variants of {r.cases - sum(r.skipped.values())} of "
            f"{r.cases} cases"
            + (f" (no variant: {skipped})" if skipped else "")
            + (f"; {r.dropped_variants} variants printed no answer" if r.dropped_variants else "")
        )
    click.echo(f"wrote {out}; run it with --data-dir {out}")
