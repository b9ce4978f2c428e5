"""``deonticbench export``: training files for LLaMA-Factory, TRL and verl, and Harbor
tasks (``--format harbor``: one evaluation task per case, see docs/harbor.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..data.cases import resolve_source
from ..data.domains import names_every_domain, parse_domains
from ..data.sources import SPLITS
from ..errors import ConfigError
from ..export import FORMATS, export_dataset, first_cases
from ..vocabulary.protocols import DAR_PROTOCOL
from ._options import (
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


@click.command()
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
    "mode",
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
@timeout_option("timeout_s")
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
    protocol: str,
    split: str | None,
    limit_text: str | None,
    data_dir: Path | None,
    hub: bool,
    revision: str | None,
    **options: Any,
) -> None:
    """Write a training file of DeonticBench in a trainer's format, with a manifest.

    The training pool is the whole split minus the hard split; completions are the
    reference programs (Label: lines removed), kept only when they reproduce the gold
    label in the sandbox."""
    limit = first_cases(limit_text)
    source = resolve_source(data_dir, hub=hub, revision=revision)
    chosen = parse_domains(domains)
    skip_missing = names_every_domain(domains)
    if protocol == DAR_PROTOCOL and fmt != HARBOR:
        raise ConfigError("--protocol dar writes Harbor tasks: use it with --format harbor.")
    where: dict[str, Any] = dict(
        source=source, domains=chosen, limit=limit, skip_missing=skip_missing
    )
    if fmt == HARBOR:
        # start-up: ``deonticbench --help`` imports every command's module
        from ..integrations.harbor.exports import export_harbor_tasks

        harbor = dict(
            prompt_mode=options["mode"], split=split or "hard", seed=options["exemplar_seed"]
        )
        lines = export_harbor_tasks(out, protocol, **where, **harbor).lines()
    else:
        # ``options``: the rest of the command's options, by export_dataset's names
        lines = export_dataset(fmt, out, split=split or "train", **where, **options).lines()
    click.echo("\n".join(lines))
