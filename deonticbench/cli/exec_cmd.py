"""``deonticbench exec``: run one program in the sandbox, for someone debugging it."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..data.domains import DOMAINS, Domain, get_domain
from ..errors import ConfigError, DataError
from ..reading.answers import Answer, answer_from_execution
from ..reading.judging import Program, read_attempt
from ..solver import Execution, ExecutorKind, Limits, run_program
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
    path = Path(file)
    try:
        program = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {file}: {exc.strerror}.") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{file} is not UTF-8 text.") from None
    if not program.strip():
        # An empty file runs and prints nothing: say so rather than report "no output".
        raise ConfigError(f"{file} is empty: there is no program to run.")
    dom = get_domain(domain) if domain else None
    # A saved model response (or a fenced reference program): what it holds runs.
    read = read_attempt(Program(program, published=True), dom)
    if read.fenced_without_program or read.program is None:
        raise ConfigError(f"{file} has fenced blocks but no Prolog program in them.")
    program, notes = read.program, read.notes
    execution = run_program(program, Limits(timeout_s=timeout), executor=executor)
    judged = read.judged(execution, None)  # the domain's reading, when one was given
    found_domain, answer = (dom, judged.answer) if dom is not None else _answer(execution)
    if as_json:
        payload = execution.to_dict()
        payload["answer"] = answer.value if answer else None
        payload["answer_domain"] = found_domain.name if found_domain else None
        payload["abstain_reason"] = answer.reason if answer else None
        payload["repairs"] = list(notes)
        click.echo(json.dumps(payload, indent=2))
    else:
        click.echo(
            f"status:   {execution.status}" + (f" ({execution.limit})" if execution.limit else "")
        )
        click.echo(
            f"exit:     {execution.exit_code}   wall: {execution.wall_s:.3f} s   "
            f"warnings: {execution.warnings}   sandbox: {execution.sandbox}"
        )
        for note in notes:
            click.echo(f"repair:   {note}")
        if answer is None:
            click.echo("answer:   none (no domain's answer line found; pass --domain to see why)")
        elif answer.value is None:
            click.echo(f"answer:   none ({answer.reason})")
        else:
            click.echo(
                f"answer:   {answer.value}" + (f"  [{found_domain.name}]" if found_domain else "")
            )
        if execution.stdout:
            click.echo("--- stdout ---")
            click.echo(execution.stdout.rstrip("\n"))
        if execution.stderr:
            click.echo("--- stderr ---")
            click.echo(execution.stderr.rstrip("\n"))
    if explain or case_id:
        _explain(program, dom or found_domain, execution, case_id, timeout)
    if execution.status != "ok":
        raise SystemExit(1)


def _explain(
    program: str, dom: Domain | None, execution: Execution, case_id: str | None, timeout: float
) -> None:
    # start-up: ``deonticbench --help`` imports every command's module
    from ..analysis.explain import explain_program
    from ..data.cases import load_cases

    case = None
    if case_id is not None:
        if dom is None:
            raise ConfigError("--case needs --domain.")
        found = []
        for split in ("hard", "whole"):
            try:
                found += [c for c in load_cases(dom, split) if c.id == case_id]
            except DataError:
                continue  # a split this source lacks (housing's whole split offline)
            if found:
                break
        if not found:
            raise ConfigError(f"no case {case_id!r} in {dom.name}'s hard or whole split.")
        case = found[0]
    click.echo(explain_program(program, dom, execution, case, limits=Limits(timeout_s=timeout)))


def _answer(execution: Execution) -> tuple[Domain | None, Answer | None]:
    """Without a domain: the one domain whose answer line appears (or none when zero or
    several do)."""
    hits = [
        (d, a) for d in DOMAINS.values() if not (a := answer_from_execution(d, execution)).abstained
    ]
    return hits[0] if len(hits) == 1 else (None, None)
