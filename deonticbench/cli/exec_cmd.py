"""``deonticbench exec``: run one program in the sandbox, for someone debugging it."""

from __future__ import annotations

import json

import click

from ..evaluation.program_file import find_case, run_program_file
from ..solver import ExecutorKind, Limits
from ._options import executor_option, json_option, timeout_option


@click.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option(
    "--domain",
    default=None,
    help="Read the answer as this domain's (and apply its entrypoint repair).",
)
@timeout_option()
@executor_option
@json_option
@click.option(
    "--explain", is_flag=True, help="Also print the proof of the answer (docs/analysis.md)."
)
@click.option(
    "--case",
    "case_id",
    default=None,
    help="With --explain and --domain: compare with this case's reference program.",
)
def command(
    file: str,
    domain: str | None,
    timeout: float,
    executor: ExecutorKind,
    as_json: bool,
    explain: bool = False,
    case_id: str | None = None,
) -> None:
    """Run the Prolog program in FILE in the sandbox and show what it did.

    FILE may also be a saved model response: its fenced Prolog is extracted first."""
    limits = Limits(timeout_s=timeout)
    ran = run_program_file(file, domain, limits, executor)
    click.echo(json.dumps(ran.to_json(), indent=2) if as_json else "\n".join(ran.lines()))
    if explain or case_id:
        # start-up: ``deonticbench --help`` imports every command's module
        from ..analysis.explain import explain_program

        case = find_case(ran.domain, case_id) if case_id is not None else None
        click.echo(explain_program(ran.program, ran.domain, ran.execution, case, limits=limits))
    if ran.execution.status != "ok":
        raise SystemExit(1)
