"""``deonticbench export``: training files for LLaMA-Factory, TRL and verl, and Harbor
tasks (``--format harbor``: one evaluation task per case, see docs/harbor.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..data.cases import resolve_source
from ..data.domains import parse_domains
from ..data.selection import parse_limit
from ..data.sources import SPLITS
from ..errors import ConfigError
from ..export.formats import FORMATS
from ._options import (
    RENAMED_SEED,
    RenamingCommand,
    data_dir_option,
    domains_option,
    exemplar_seed_option,
    hub_option,
    limit_option,
    revision_option,
    split_option,
    timeout_option,
)

HARBOR = "harbor"
"""Evaluation tasks, not training files: the integration writes them (docs/harbor.md)."""
TASK_PROTOCOLS = ("harness", "dar")
"""Whose Harbor tasks: the harness's own, or DAR's as its adapters write them."""


@click.command(cls=RenamingCommand, renamed=RENAMED_SEED)
@click.option(
    "--format",
    "fmt",
    required=True,
    type=click.Choice([*FORMATS, HARBOR]),
    help="The trainer's file shape, or harbor: one Harbor task per case.",
)
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@domains_option()
@click.option(
    "--prompt-mode",
    type=click.Choice(["direct", "zero-shot", "few-shot"]),
    default="zero-shot",
    show_default=True,
    help="Which harness prompt the examples carry (harbor: the task's framing; direct "
    "only for harbor).",
)
@click.option(
    "--protocol",
    type=click.Choice(TASK_PROTOCOLS),
    default="harness",
    show_default=True,
    help="Whose tasks --format harbor writes: harness (this project's tasks and verifier) "
    "or dar (DAR's task folders, byte for byte as DAR's adapters write them; docs/harbor.md).",
)
@split_option(None, choices=("train", *SPLITS), default_text="train; with --format harbor, hard")
@click.option("--allow-test", is_flag=True, help="Allow exporting the hard split (as test file).")
@click.option(
    "--rejected-from",
    type=click.Path(exists=True),
    default=None,
    help="DPO: a run folder whose wrong or abstained answers are the rejected completions.",
)
@exemplar_seed_option
@limit_option
@timeout_option()
@data_dir_option()
@hub_option
@revision_option
@click.option(
    "--tokenizer",
    default=None,
    metavar="PATH_OR_NAME",
    help="Measure completion lengths in this tokenizer's tokens: a tokenizer.json, a folder "
    "holding one, or a model in the local Hugging Face cache (never downloaded).",
)
@click.option(
    "--max-completion-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Report how many completions a trainer's cap of N tokens would cut (--tokenizer).",
)
@click.option(
    "--drop-over-length",
    is_flag=True,
    help="Leave out completions longer than --max-completion-tokens.",
)
def command(
    fmt: str,
    out: str,
    domains: str,
    prompt_mode: str,
    protocol: str,
    split: str | None,
    allow_test: bool,
    rejected_from: str | None,
    seed: int,
    limit_text: str | None,
    timeout: float,
    data_dir: Path | None,
    hub: bool,
    revision: str | None,
    tokenizer: str | None,
    max_completion_tokens: int | None,
    drop_over_length: bool,
) -> None:
    """Write a training file of DeonticBench in a trainer's format, with a manifest.

    The training pool is the whole split minus the hard split; completions are the
    reference programs (Label: lines removed), kept only when they reproduce the gold
    label in the sandbox."""
    limit = _first_cases(limit_text)
    source = resolve_source(data_dir, hub=hub, revision=revision)
    chosen = parse_domains(domains)
    skip_missing = domains.strip().lower() in ("", "all")
    if protocol == "dar" and fmt != HARBOR:
        raise ConfigError("--protocol dar writes Harbor tasks: use it with --format harbor.")
    if fmt == HARBOR:
        harbor_split = split or "hard"
        _export_harbor(
            out, source, chosen, prompt_mode, harbor_split, limit, seed, skip_missing, protocol
        )
        return
    # start-up: ``deonticbench --help`` imports every command's module
    from ..export import export_dataset

    report = export_dataset(
        fmt,
        out,
        source=source,
        domains=chosen,
        mode=prompt_mode,  # type: ignore[arg-type]
        split=split or "train",
        allow_test=allow_test,
        rejected_from=rejected_from,
        seed=seed,
        limit=limit,
        timeout_s=timeout,
        skip_missing=skip_missing,
        tokenizer=tokenizer,
        max_completion_tokens=max_completion_tokens,
        drop_over_length=drop_over_length,
    )
    for name, counts in report.counts.items():
        click.echo(_domain_line(name, counts, report.split))
    dropped = sum(c.dropped for c in report.counts.values() if not c.skipped)
    if report.lengths is not None:
        for line in report.lengths.lines():
            click.echo(line)
    click.echo(
        f"wrote {report.rows} rows to {report.out} ({', '.join(report.files)}, manifest.json)"
    )
    if dropped:
        # A row count below the cases read is the data's doing, not a lost row: say so.
        click.echo(
            f"note: {dropped} case(s) left out because their reference program does not "
            "reproduce the gold label (their ids are in manifest.json; docs/data-audit.md)."
        )


def _domain_line(name: str, counts: Any, split: str) -> str:
    """What an export read, kept and dropped of one domain."""
    if counts.skipped:
        return f"{name}: skipped ({counts.skipped})"
    if split == "train":
        copies = f", {counts.held_out_copies} hard copies" if counts.held_out_copies else ""
        read = f"pool {counts.pool} (whole {counts.whole} minus hard {counts.hard}{copies}"
        # --limit keeps the first cases of the pool: say so, or the sum looks wrong.
        limited = counts.limited_from
        read += f"; the first {counts.pool} of {limited} (--limit))" if limited else ")"
    else:
        # The test file reads the hard split alone: there is no pool to subtract from.
        read = f"hard {counts.pool}" + (
            f" of {counts.hard} (--limit)" if counts.pool < counts.hard else ""
        )
    line = f"{name}: {read}, kept {counts.kept}, dropped {counts.dropped} not reproducing gold"
    return line + (f", {counts.pairs} preference pairs" if counts.pairs else "")


def _export_harbor(
    out: str,
    source: Any,
    domains: Any,
    prompt_mode: str,
    split: str,
    limit: int | None,
    seed: int,
    skip_missing: bool,
    protocol: str,
) -> None:
    # start-up: ``deonticbench --help`` imports every command's module
    from ..data.dar_files import dar_origin
    from ..integrations import export_tasks
    from ..integrations.harbor.dar_tasks import export_dar_tasks

    common: dict[str, Any] = dict(
        source=source, domains=domains, prompt_mode=prompt_mode, split=split, limit=limit
    )
    if protocol == "dar":
        report = export_dar_tasks(out, **common, skip_missing=skip_missing)
        what, origin = "DAR tasks", f", from DAR's files ({dar_origin()})"
    else:
        report = export_tasks(out, **common, seed=seed, skip_missing=skip_missing)
        what, origin = "Harbor tasks", ""
    for name, count in report.counts.items():
        click.echo(f"{name}: {count} tasks")
    for name, reason in report.skipped.items():
        click.echo(f"{name}: skipped ({reason})")
    click.echo(f"wrote {len(report.tasks)} {what} ({prompt_mode}, {split}) to {report.out}{origin}")


def _first_cases(limit_text: str | None) -> int | None:
    """``--limit`` read as eval reads it; an export takes the first N cases of its pool
    (a range names cases of a split, which an export's pool is not)."""
    limit = parse_limit(limit_text)
    if isinstance(limit, tuple):
        raise ConfigError(
            f"export takes --limit N (the first N cases), not a range ({limit_text})."
        )
    return limit
