"""``deonticbench validate``: run the reference programs and compare with the gold labels."""

from __future__ import annotations

import json
import time

import click

from ..data.domains import parse_domains
from ..data.sources import resolve_source
from ..evaluation.validate import DomainReport, validate
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
            domains, split, source, solver=solver, skip_missing=domains_spec.strip() == "all"
        )
    total = time.perf_counter() - started
    if as_json:
        click.echo(
            json.dumps(
                {
                    "split": split,
                    "sandbox": solver.sandbox,
                    "executor": solver.executor,
                    "seconds": round(total, 3),
                    "domains": {r.domain: r.to_json() for r in reports},
                },
                indent=2,
            )
        )
        return
    _print_table(reports, split, total, f"{solver.sandbox} sandbox, {solver.executor} executor")


def _print_table(reports: list[DomainReport], split: str, total: float, sandbox: str) -> None:
    header = f"{'domain':<14}{'cases':>7}{'agree':>7}{'disagree':>10}{'abstain':>9}{'seconds':>9}"
    click.echo(f"validate: reference programs on the {split} split ({sandbox})")
    click.echo(header)
    click.echo("-" * len(header))
    for r in reports:
        click.echo(
            f"{r.domain:<14}{r.cases:>7}{r.agree:>7}{r.disagree:>10}{r.abstain:>9}{r.seconds:>9.2f}"
        )
    click.echo(f"total wall time {total:.2f} s")
    for r in reports:
        for c in r.checks:
            if c.outcome == "wrong":
                click.echo(
                    f"  disagree {r.domain} {c.case_id}: program {_show(c.answer)}, gold {c.gold}"
                )
            elif c.outcome == "abstain":
                click.echo(f"  abstain  {r.domain} {c.case_id}: {c.reason} [{c.status}]")


def _show(value: float | str | None) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
