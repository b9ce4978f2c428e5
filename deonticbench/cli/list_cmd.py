"""``deonticbench list``: domains (cases per split), modes, backends, registry models."""

from __future__ import annotations

import click


@click.command(name="list")
def command() -> None:
    """List what can be run: domains with their sizes per split, modes, backends and the
    models eval/models.yaml has settings for."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..data.sources import resolve_source
    from ..errors import DataError
    from ..evaluation.catalog import build_catalog

    # A DEONTICBENCH_DATA that is no data folder is the user's error, not a note: the
    # sizes would all be "-" without saying why.
    source = resolve_source()
    if source.kind == "hub":
        click.echo("note: no local data (DEONTICBENCH_DATA unset); sizes are not counted.")
    catalog = build_catalog(source)
    click.echo("\n".join(catalog.lines()))
    # A split file that is there but cannot be read shows as "-" above: say which, and
    # fail, rather than pass a corrupt data folder off as a smaller one.
    broken = catalog.unreadable()
    if broken:
        raise DataError(broken[0])
