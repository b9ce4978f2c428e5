"""A dry run's estimate as the lines ``eval --dry-run`` prints: the table of calls and
prompt tokens, what the first attempts' input costs under each choice the backend and
options leave open, and what cannot be known beforehand."""

from __future__ import annotations

import json

from ..models.registry import Cost
from .dryrun import DryRunEstimate


def dry_run_text(
    est: DryRunEstimate,
    *,
    model: str,
    split: str,
    folder: str,
    batch: bool,
    assume_output: int | None,
    as_json: bool,
) -> str:
    """What ``eval --dry-run`` prints: the report's lines, or (``as_json``) one JSON
    document of the estimate."""
    if as_json:
        doc = est.to_json(batch=batch, assume_output_tokens=assume_output)
        return json.dumps({"model": model, "split": split, **doc}, indent=2)
    lines = dry_run_lines(
        est, model=model, split=split, folder=folder, batch=batch, assume_output=assume_output
    )
    return "\n".join(lines)


def dry_run_lines(
    est: DryRunEstimate,
    *,
    model: str,
    split: str,
    folder: str,
    batch: bool,
    assume_output: int | None,
) -> list[str]:
    """Every line of the dry run's report, in order; ``folder`` is where the real run will
    write (``api.run_folder_text``)."""
    wide = max([9, *(len(r.mode) for r in est.rows)])
    header = f"{'domain':<13} {'mode':<{wide}} {'samples':>7} {'done':>5} {'cached':>6} "
    lines = [
        f"dry run for {model} on {split} -> {folder}",
        header + f"{'calls':>6} {'prompt tokens':>13}",
    ]
    for r in est.rows:
        lines.append(
            f"{r.domain:<13} {r.mode:<{wide}} {r.samples:>7,} {r.done:>5,} "
            f"{r.response_hits:>6,} {r.calls:>6,} {r.prompt_tokens:>13,}"
            + ("  (first turns)" if r.first_turns else "")
        )
    lines.append(
        f"total: {est.calls:,} calls, {est.prompt_tokens:,} prompt tokens (an estimate) "
        f"for the first attempt of {est.samples_left:,} samples (tokens counted with "
        f"{est.token_count_method})."
    )
    lines += price_lines(est, batch, assume_output)
    return lines + _bounds(est)


def _bounds(est: DryRunEstimate) -> list[str]:
    """What retries and later agent turns may add, and what was sent to count."""
    lines = []
    retries = (est.attempts - 1) * est.prompted_left
    if retries:
        lines.append(
            f"retries with feedback add at most {retries:,} requests "
            "(one per prompted sample per extra attempt, only for failed programs or requests)."
        )
    if est.trials_left:
        lines.append(
            f"agentic trials never retry, but each of the {est.trials_left:,} trials may send "
            f"up to {est.max_turns:,} turns, each re-sending the conversation so far: only "
            "their first turns are counted above."
        )
    if est.count_calls:
        lines.append(
            f"nothing was generated: only {est.count_calls:,} calls to the free "
            "count_tokens endpoint were made."
        )
    else:
        lines.append("nothing was sent.")
    return lines


def price_lines(est: DryRunEstimate, batch: bool, assume_output: int | None) -> list[str]:
    """What the first attempts' input costs under each choice, and what cannot be known."""
    if est.prices is None:
        return ["no price for this model in eval/models.yaml: tokens only, no dollar figure."]

    def usd(cost: Cost | None) -> str:
        return "no price" if cost is None else f"${cost.usd:,.2f}"

    expected = est.expected
    lines = []
    if est.prompt_cache:
        lines.append(
            f"prompt caching: expect {expected.cache_write:,} tokens written to the cache and "
            f"{expected.cache_read:,} read from it (order of sending as the runner does it)."
        )
    # Only the choices this backend and these options leave open are priced.
    choices = [f"{usd(est.input_cost(caching=False, batch=False))} uncached"]
    if est.prompt_cache:
        choices.append(f"{usd(est.input_cost(caching=True, batch=False))} with prompt caching")
    if est.batchable:
        choices.append(f"{usd(est.input_cost(caching=False, batch=True))} as batches")
    if est.prompt_cache and est.batchable:
        choices.append(f"{usd(est.input_cost(caching=True, batch=True))} with both")
    interactive = (
        " (agentic trials stay interactive, at full price)"
        if (est.batchable and est.trials_left)
        else ""
    )
    lines.append(
        f"first-attempt input: {', '.join(choices)}{interactive}; "
        f"chosen: {usd(est.input_cost(caching=est.prompt_cache, batch=batch))}."
    )
    if not est.prompt_cache:
        lines.append("prompt caching is off for this run: no breakpoints, no cache key sent.")
    if assume_output is None:
        lines.append(
            "output, reasoning tokens and retries cannot be known beforehand: "
            "--assume-output-tokens N prices N output tokens per sample."
        )
    else:
        out = est.output_cost(assume_output, batch=batch)
        chosen = est.input_cost(caching=est.prompt_cache, batch=batch)
        total = None if out is None or chosen is None else chosen + out
        lines.append(
            f"with {assume_output:,} output tokens per sample: output {usd(out)}, "
            f"first attempts in all {usd(total)} (retries and later agent turns not included)."
        )
    return lines
