"""``deonticbench export``: training files for LLaMA-Factory, TRL and verl."""

from __future__ import annotations

import click

from ..data.cases import resolve_source
from ..data.domains import parse_domains


@click.command()
@click.option(
    "--format",
    "fmt",
    required=True,
    type=click.Choice(
        ["llamafactory-sft", "llamafactory-dpo", "trl-sft", "trl-dpo", "trl-grpo", "verl"]
    ),
    help="The trainer's file shape.",
)
@click.option("--out", required=True, type=click.Path(file_okay=False), help="Output folder.")
@click.option("--domains", default="all", show_default=True, help="Comma-separated domains.")
@click.option(
    "--prompt-mode",
    type=click.Choice(["zero-shot", "few-shot"]),
    default="zero-shot",
    show_default=True,
    help="Which harness prompt the examples carry.",
)
@click.option(
    "--split",
    type=click.Choice(["train", "hard"]),
    default="train",
    show_default=True,
    help="train: the whole split minus the hard split; hard: the test set (--allow-test).",
)
@click.option("--allow-test", is_flag=True, help="Allow exporting the hard split (as test file).")
@click.option(
    "--rejected-from",
    type=click.Path(exists=True),
    default=None,
    help="DPO: a run folder whose wrong or abstained answers are the rejected completions.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Few-shot exemplar seed.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Cases per domain.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=20.0,
    show_default=True,
    help="Seconds each reference program may run when re-verified.",
)
@click.option("--data-dir", type=click.Path(file_okay=False), default=None)
@click.option("--hub", is_flag=True, help="Read the data from the Hugging Face hub.")
@click.option("--revision", default=None, help="Hub revision (with --hub).")
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
    split: str,
    allow_test: bool,
    rejected_from: str | None,
    seed: int,
    limit: int | None,
    timeout: float,
    data_dir: str | None,
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
    from ..export import export_dataset

    source = resolve_source(data_dir, hub=hub, revision=revision)
    chosen = parse_domains(domains)
    report = export_dataset(
        fmt,
        out,
        source=source,
        domains=chosen,
        mode=prompt_mode,  # type: ignore[arg-type]
        split=split,
        allow_test=allow_test,
        rejected_from=rejected_from,
        seed=seed,
        limit=limit,
        timeout_s=timeout,
        skip_missing=domains.strip().lower() in ("", "all"),
        tokenizer=tokenizer,
        max_completion_tokens=max_completion_tokens,
        drop_over_length=drop_over_length,
    )
    for name, counts in report.counts.items():
        if counts.skipped:
            click.echo(f"{name}: skipped ({counts.skipped})")
            continue
        line = (
            f"{name}: pool {counts.pool} (whole {counts.whole} minus hard {counts.hard}"
            f"{f', {counts.held_out_copies} hard copies' if counts.held_out_copies else ''}), "
            f"kept {counts.kept}, dropped {counts.dropped} not reproducing gold"
        )
        if counts.pairs:
            line += f", {counts.pairs} preference pairs"
        click.echo(line)
    if report.lengths is not None:
        for line in report.lengths.lines():
            click.echo(line)
    click.echo(
        f"wrote {report.rows} rows to {report.out} ({', '.join(report.files)}, manifest.json)"
    )
