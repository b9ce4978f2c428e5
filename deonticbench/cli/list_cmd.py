"""``deonticbench list``: domains (cases per split), modes, backends, registry models."""

from __future__ import annotations

import click


@click.command(name="list")
def command() -> None:
    """List what can be run: domains with their sizes per split, modes, backends and the
    models eval/models.yaml has settings for."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..data.cases import SPLITS
    from ..data.sources import resolve_source
    from ..errors import DataError
    from ..evaluation.catalog import build_catalog

    # A DEONTICBENCH_DATA that is no data folder is the user's error, not a note: the
    # sizes would all be "-" without saying why.
    source = resolve_source()
    if source.kind == "hub":
        click.echo("note: no local data (DEONTICBENCH_DATA unset); sizes are not counted.")
    catalog = build_catalog(source)
    click.echo(f"domains (cases per split, from {catalog.source}):")
    header = f"  {'domain':<13} {'name':<11} {'metric':<9} {'K':>2} "
    click.echo(header + " ".join(f"{s:>6}" for s in SPLITS))
    for d in catalog.domains:
        sizes = " ".join(f"{'-' if d.sizes[s] is None else d.sizes[s]:>6}" for s in SPLITS)
        click.echo(f"  {d.name:<13} {d.display_name:<11} {d.metric:<9} {d.default_k:>2} {sizes}")
        for split, note in d.notes.items():
            if note == "hub only":
                click.echo(f"  {'':<13} {split}: published only on the hub (--hub)")
    click.echo(f"modes: {', '.join(catalog.modes)}")
    click.echo(f"backends: {', '.join(catalog.backends)}  (spec: <backend>:<model>)")
    click.echo("models with settings in eval/models.yaml (globs):")
    for name in catalog.models:
        click.echo(f"  {name}")
    # A split file that is there but cannot be read shows as "-" above: say which, and
    # fail, rather than pass a corrupt data folder off as a smaller one.
    broken = [
        note
        for d in catalog.domains
        for note in d.notes.values()
        if note not in ("hub only", "no data source", "hub: not counted offline")
        and "does not exist" not in note
    ]
    if broken:
        raise DataError(broken[0])
