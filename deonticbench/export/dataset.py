"""One export: the options checked, each domain's examples built, their lengths measured,
preference pairs found, the file and its ``dataset_info.json`` written, and the manifest."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..data.cases import DataSource, load_cases
from ..data.domains import Domain
from ..errors import ConfigError, DataError
from ..rewards.signatures import prefetch_signatures
from ..store.run import Run, RunLike, read_run
from ..vocabulary.modes import Mode
from .examples import (
    PROGRAM_MODES,
    DomainCounts,
    Example,
    assert_no_hard_case,
    build_examples,
    rejected_completions,
    training_pool,
)
from .formats import (
    FORMATS,
    PREFERENCE_FORMATS,
    REWARD_FORMATS,
    Pair,
    dataset_info,
    file_name,
    rows_for,
    write_rows,
)
from .lengths import Counter, measure
from .manifest import ExportReport, sha256_file, write_manifest

DATASET_INFO = "dataset_info.json"


def export_dataset(
    fmt: str,
    out: str | Path,
    *,
    source: DataSource,
    domains: Sequence[Domain],
    mode: Mode = "zero-shot",
    split: str = "train",
    allow_test: bool = False,
    rejected_from: RunLike | None = None,
    exemplar_seed: int = 0,
    limit: int | None = None,
    timeout_s: float | None = None,
    skip_missing: bool = False,
    tokenizer: str | None = None,
    max_completion_tokens: int | None = None,
    drop_over_length: bool = False,
) -> ExportReport:
    """Write one training (or, with ``allow_test``, hard-split test) file and its manifest.

    ``rejected_from`` (a ``Run`` or its folder): the preference formats' rejected
    completions, the run's wrong or abstained first answers.  With ``tokenizer``, the
    completions' lengths in its tokens are measured per domain (and with
    ``max_completion_tokens``, how many a trainer's cap would cut; with
    ``drop_over_length`` those are left out of the file)."""
    _check_options(
        fmt, mode, split, allow_test=allow_test, rejected_from=rejected_from,
        tokenizer=tokenizer, max_completion_tokens=max_completion_tokens,
        drop_over_length=drop_over_length,
    )  # fmt: skip
    counter = Counter(tokenizer) if tokenizer is not None else None  # refuse early
    rejected = None  # read only where its answers are used; a manifest names it either way
    if fmt in PREFERENCE_FORMATS and rejected_from is not None:
        rejected = read_run(rejected_from)
    folder = Path(out)
    target = folder / file_name(fmt, split)
    if target.exists():
        raise ConfigError(f"{target} already exists; choose another --out or remove it.")
    report = ExportReport(format=fmt, split=split, out=folder)
    examples = [
        e
        for domain in domains
        for e in _domain_examples(
            domain, source, split, mode, report, exemplar_seed, limit, timeout_s, skip_missing
        )
    ]
    if counter is not None:
        examples = _measure(examples, counter, max_completion_tokens, drop_over_length, report)
    pairs = _pairs(examples, rejected, mode, report) if fmt in PREFERENCE_FORMATS else []
    if fmt in REWARD_FORMATS:
        _prefetch_references(examples)
    _write_files(fmt, target, rows_for(fmt, split, examples, pairs), report)
    named = rejected_from.path if isinstance(rejected_from, Run) else rejected_from
    rejected_path = None if named is None else str(named)
    write_manifest(report, source, domains, mode, exemplar_seed, rejected_path, timeout_s)
    return report


def _prefetch_references(examples: Sequence[Example]) -> None:
    """Every reward row carries S(P*): read all the reference programs in batches first."""
    references = [e.target.reference_text() for e in examples]
    prefetch_signatures([t for t in references if t is not None])


def _measure(
    examples: list[Example],
    counter: Counter,
    max_completion_tokens: int | None,
    drop_over_length: bool,
    report: ExportReport,
) -> list[Example]:
    """The completions' lengths into ``report``; the examples kept (those over the cap
    left out when ``drop_over_length`` says so)."""
    report.lengths, lengths = measure(
        ((e.domain, e.completion) for e in examples),
        counter,
        max_completion_tokens,
        drop_over_length,
    )
    if drop_over_length and max_completion_tokens is not None:
        return [e for e, n in zip(examples, lengths, strict=True) if n <= max_completion_tokens]
    return examples


def _write_files(fmt: str, target: Path, rows: list[Any], report: ExportReport) -> None:
    """The rows' file and, for a format that needs one, ``dataset_info.json`` beside it;
    each file's sha256 into ``report``."""
    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    write_rows(fmt, target, rows)
    report.rows = len(rows)
    report.files[target.name] = sha256_file(target)
    info = dataset_info(fmt, target.name)
    if info is not None:
        info_path = folder / DATASET_INFO
        info_path.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        report.files[DATASET_INFO] = sha256_file(info_path)


def _check_options(
    fmt: str,
    mode: Mode,
    split: str,
    *,
    allow_test: bool,
    rejected_from: RunLike | None,
    tokenizer: str | None,
    max_completion_tokens: int | None,
    drop_over_length: bool,
) -> None:
    """One sentence for options that do not go together, before anything is read."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format {fmt!r}; choose from {', '.join(FORMATS)}.")
    if mode not in PROGRAM_MODES:
        raise ConfigError(
            f"the {mode} prompt has no program to train on; use zero-shot or few-shot."
        )
    if split not in ("train", "hard"):
        raise ConfigError(f"unknown export split {split!r}; choose train or hard.")
    if split == "hard" and not allow_test:
        raise ConfigError(
            "the hard split is the benchmark's test set: exporting it needs --allow-test "
            "(it is written as a test file, never a training file)."
        )
    if fmt in PREFERENCE_FORMATS and not rejected_from:
        raise ConfigError(
            f"{fmt} needs rejected completions: pass --rejected-from RUN, a run folder of "
            "the base model on the whole split (its wrong or abstained answers are rejected)."
        )
    if (max_completion_tokens is not None or drop_over_length) and tokenizer is None:
        raise ConfigError("--max-completion-tokens and --drop-over-length need --tokenizer.")
    if drop_over_length and max_completion_tokens is None:
        raise ConfigError("--drop-over-length needs --max-completion-tokens N.")


def _domain_examples(
    domain: Domain,
    source: DataSource,
    split: str,
    mode: Mode,
    report: ExportReport,
    seed: int,
    limit: int | None,
    timeout_s: float | None,
    skip_missing: bool,
) -> list[Example]:
    """One domain's examples (its counts in ``report``); none when its split is missing
    and ``skip_missing`` says so."""
    counts = DomainCounts(domain.name)
    report.counts[domain.name] = counts
    try:
        cases = _cases(domain, source, split, counts)
    except DataError as exc:
        if not skip_missing:
            raise
        counts.skipped = str(exc)
        return []
    if limit is not None:
        if limit < len(cases):
            counts.limited_from = len(cases)
        cases = cases[:limit]
        counts.pool = len(cases)
    built = build_examples(
        domain, cases, source, mode, seed=seed, counts=counts, timeout_s=timeout_s
    )
    if split == "train":
        assert_no_hard_case(domain, source, (e.case for e in built))
    return built


def _pairs(
    examples: Sequence[Example], rejected_from: Run | None, mode: Mode, report: ExportReport
) -> list[Pair]:
    """Each example with every rejected completion of its prompt (``--rejected-from``)."""
    assert rejected_from is not None
    pairs: list[Pair] = []
    found = rejected_completions(rejected_from, examples, mode)
    for example in examples:
        texts = found.get((example.domain, example.case.id), [])
        if texts:
            report.counts[example.domain].rejected += 1
        for text in texts:
            pairs.append((example, text))
            report.counts[example.domain].pairs += 1
    if not pairs:
        raise DataError(
            f"{rejected_from.path} has no wrong or abstained {mode} answer to any exported "
            "prompt, so there is no preference pair to write."
        )
    return pairs


def _cases(domain: Domain, source: DataSource, split: str, counts: DomainCounts) -> list[Any]:
    if split == "train":
        return training_pool(domain, source, counts)
    cases = load_cases(domain, "hard", source)
    counts.hard = counts.pool = len(cases)
    return cases
