"""``deonticbench validate``: run the reference programs and compare with the gold labels."""

from __future__ import annotations

import json
import time

import click

from ..data.domains import names_every_domain, parse_domains
from ..data.sources import resolve_source
from ..evaluation.validate import validate
from ..evaluation.validate_text import validate_json, validate_lines
from ..solver import ExecutorKind, Limits
from ._options import (
    data_dir_option,
    domains_option,
    executor_option,
    hub_option,
    json_option,
    split_option,
    timeout_option,
    workers_option,
)


@click.command()
@split_option()
@domains_option(dest="domains_spec")
@data_dir_option()
@hub_option
@timeout_option()
@workers_option
@executor_option
@json_option
def command(
    split: str,
    domains_spec: str,
    data_dir: str | None,
    hub: bool,
    timeout: float,
    workers: int | None,
    executor: ExecutorKind,
    as_json: bool,
) -> None:
    """Run every case's reference program and compare its answer with the gold label."""
    # start-up: ``deonticbench --help`` imports every command's module
    from ..solver import Solver

    domains = parse_domains(domains_spec)
    source = resolve_source(data_dir, hub=hub)
    started = time.perf_counter()
    with Solver(workers=workers, limits=Limits(timeout_s=timeout), executor=executor) as solver:
        reports = validate(
            domains, split, source, solver=solver, skip_missing=names_every_domain(domains_spec)
        )
    total = time.perf_counter() - started
    shown = (reports, split, solver.sandbox, solver.executor, total)
    if as_json:
        click.echo(json.dumps(validate_json(*shown), indent=2))
    else:
        click.echo("\n".join(validate_lines(*shown)))
