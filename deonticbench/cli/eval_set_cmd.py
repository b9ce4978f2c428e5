"""``deonticbench eval-set``: many runs as one reproduction (docs/running.md, "Eval
sets"): one priced dry run, one budget, one resume, one comparison."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ..eval_sets import SetOutcome, SetPlan, SetProgress, plan_set, run_set, set_dry_run
from ..evaluation.stopping import stopped_by_signals
from ..store import naming, sets
from ._options import (
    assume_output_tokens_option,
    bootstrap_options,
    dry_run_option,
    json_option,
)
from .set_file import find_set_file, read_set_file

EXIT_AT_CAP = 3
"""The exit code of a set stopped by its budget (130: by a signal; 1: a run failed)."""


@click.command("eval-set")
@click.argument("set_name", metavar="SET_FILE")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The set's folder [default: runs/sets/<file name>]; run the same command again "
    "to resume it.",
)
@dry_run_option
@click.option(
    "--max-usd",
    type=click.FloatRange(min=0.0),
    default=None,
    help="Spend at most about this many dollars on the set (this and earlier "
    "invocations): requests go while their worst cases fit, then one at a time while "
    "each is expected to fit; stop there, keeping every record (docs/running.md).",
)
@assume_output_tokens_option
@json_option
@bootstrap_options
def command(
    set_name: str,
    out: Path | None,
    dry_run: bool,
    max_usd: float | None,
    assume_output_tokens: int | None,
    as_json: bool,
    replicates: int,
    bootstrap_seed: int,
) -> None:
    """Run the eval set SET_FILE (YAML: runs of eval's options; or a shipped set's name:
    smoke, table2, dar): every run into its own folder under the set's, provider by
    provider side by side, under one budget."""
    from . import eval_cmd  # the set's entries are parsed by eval's own options

    if assume_output_tokens is not None and not dry_run:
        raise click.UsageError("--assume-output-tokens goes with --dry-run.")
    if assume_output_tokens is not None and assume_output_tokens < 0:
        raise click.UsageError("--assume-output-tokens should be 0 or more.")
    set_file = find_set_file(set_name)
    entries = read_set_file(set_file, eval_cmd.command)
    folder = out if out is not None else naming.RUNS_DIR / "sets" / set_file.stem
    plan = plan_set(entries, folder, str(set_file))
    spent = sets.SpendLedger(folder).total()
    if dry_run:
        est = set_dry_run(
            plan, assume_output_tokens=assume_output_tokens, max_usd=max_usd, spent_usd=spent
        )
        click.echo(est.render(as_json=as_json))
        return
    progress = SetProgress()
    scored: dict[str, Any] = {}

    def score_early(name: str, run_folder: Path) -> None:
        """Each finished run scored while the other lanes run (``report.prescore``)."""
        from ..report import prescore  # start-up: only once a run ends

        scored[name] = prescore(run_folder, replicates=replicates, seed=bootstrap_seed)

    outcome = asyncio.run(_run(plan, max_usd, progress, score_early))
    doc = _outcome_json(plan, outcome, max_usd)
    comparison = None
    if outcome.complete:
        comparison = _compare(plan, replicates, bootstrap_seed, scored)
        doc["comparison"] = comparison[1]
    if as_json:
        click.echo(json.dumps(doc, indent=2))
        _say_stop(outcome, doc, max_usd)  # on stderr: the JSON stays one document
    else:
        _say_outcome(outcome, doc, max_usd)
        if comparison is not None:
            click.echo(comparison[0])
    sys.exit(_exit_code(outcome))


async def _run(
    plan: SetPlan,
    max_usd: float | None,
    progress: SetProgress,
    after_run: Callable[[str, Path], object],
) -> SetOutcome:
    with stopped_by_signals(lambda text: click.echo(text, err=True)):
        return await run_set(plan, max_usd=max_usd, progress=progress, after_run=after_run)


def _exit_code(outcome: SetOutcome) -> int:
    if outcome.stopped_by == "signal":
        return 130
    if any(r.state == "failed" for r in outcome.runs):
        return 1
    if outcome.stopped_by == "budget":
        return EXIT_AT_CAP
    return 0


def _outcome_json(plan: SetPlan, outcome: SetOutcome, max_usd: float | None) -> dict[str, Any]:
    budget = outcome.budget
    runs = []
    for planned, r in zip(plan.runs, outcome.runs, strict=True):
        session = r.run.session if r.run is not None else None
        runs.append(
            {
                "name": r.name,
                "model": planned.prepared.model.spec,
                "lane": planned.lane,
                "folder": str(planned.prepared.out),
                "state": r.state,
                "error": r.error,
                "new": session.new if session else 0,
                "kept": session.resumed if session else 0,
                "missing": session.missing if session else None,
                "calls": session.calls if session else 0,
                "cache_hits": session.cache_hits if session else 0,
                "spent_usd": round(budget.spent_by_run.get(r.name, 0.0), 6),
                "priced": r.name not in budget.unpriced,
                "wall_s": round(r.wall_s, 3),
            }
        )
    return {
        "set": str(plan.folder),
        "source": plan.source,
        "complete": outcome.complete,
        "stopped_by": outcome.stopped_by,
        "spent_usd": round(budget.spent_usd, 6),
        "max_usd": max_usd,
        "left_usd": None if budget.left_usd is None else round(budget.left_usd, 6),
        "refused_request_usd": budget.refused_usd,
        "unpriced_runs": sorted(budget.unpriced),
        "wall_s": round(outcome.wall_s, 3),
        "lanes": outcome.lanes,
        "runs": runs,
    }


def _say_outcome(outcome: SetOutcome, doc: dict[str, Any], max_usd: float | None) -> None:
    for run in doc["runs"]:
        line = (
            f"{run['name']}: {run['state']}, {run['new']} new records, {run['kept']} kept, "
            f"{run['calls']} calls, {run['cache_hits']} cached responses used, "
            + (f"${run['spent_usd']:,.4f} spent" if run["priced"] else "unpriced (counted $0)")
        )
        click.echo(line + (f": {run['error']}" if run["error"] else ""), err=True)
    _say_stop(outcome, doc, max_usd)
    spent = f"${doc['spent_usd']:,.4f}"
    if outcome.stopped_by == "signal":
        click.echo(f"stopped: {spent} spent; run the same command to resume.", err=True)
    else:
        click.echo(f"set {doc['set']}: {spent} spent in all.", err=True)
    if doc["unpriced_runs"]:
        click.echo(
            f"note: no prices for {', '.join(doc['unpriced_runs'])}: their requests count as "
            "$0 against the budget.",
            err=True,
        )


def _say_stop(outcome: SetOutcome, doc: dict[str, Any], max_usd: float | None) -> None:
    """The sentence of a set stopped at its cap: what it spent, what is left, and how to
    go on."""
    if outcome.stopped_by != "budget":
        return
    click.echo(
        f"stopped at the cap: ${doc['spent_usd']:,.4f} spent of ${max_usd:,.4f}; "
        f"${doc['left_usd']:,.4f} left, less than the next request is expected to cost "
        f"(${doc['refused_request_usd']:,.4f}). Records are kept: the same command with a "
        "higher --max-usd continues, and nothing is paid twice.",
        err=True,
    )


def _compare(
    plan: SetPlan, replicates: int, seed: int, scored: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The set's one table, its results.json and report.html (``report.finish_set``),
    with the sentences its numbers need beside them."""
    from ..report import finish_set  # start-up: only at the set's end

    made = finish_set(plan.folder, replicates=replicates, seed=seed, scored=scored)
    click.echo(f"report: {made.report_path}; results: {made.results_path}", err=True)
    notes = [n if n.startswith("note:") else f"note: {n}" for n in made.notes]
    text = "\n".join([made.text, *notes])
    return text, made.json_doc
