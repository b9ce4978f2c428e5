"""What ``score --dar-rules`` and ``score --against dar`` print, as text: DAR's scorer on
Harbor jobs folders (``dar_jobs``) or beside the paper's on imported runs
(``comparisons``), and DAR's published table beside runs of the dar protocol."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ...errors import ConfigError
from ...scoring.dar_published import against_dar, dar_runs
from ...scoring.scores import RunScores
from ...scoring.tables import render
from ...store.folder import is_run_folder
from ...vocabulary.protocols import DAR_PROTOCOL
from .comparisons import render_scorer_table, scorer_rows
from .dar_jobs import SCORERS, is_jobs_folder, jobs_report, pick_scorer


def jobs_folders_report(
    paths: Sequence[Path], strict: bool, scorer: str, *, as_json: bool = False
) -> str | None:
    """DAR's report for Harbor jobs folders; None when the paths are run folders (which
    ``dar_rules_text`` scores), an error when they mix the two, ask for what the chosen
    scorer lacks, or ask for JSON (``as_json``: DAR's scorers print text)."""
    for path in paths:
        if not is_jobs_folder(path) and not (path.is_dir() and is_run_folder(path)):
            raise ConfigError(
                f"{path} is neither a Harbor jobs folder (no trial's result.json below it) "
                "nor a run folder of this harness; score --dar-rules takes either."
            )
    if not any(is_jobs_folder(p) for p in paths):
        if strict or scorer != "auto":
            raise ConfigError(
                "--errors-as-incorrect and --dar-scorer apply to Harbor jobs folders; "
                "an imported run folder is scored both ways already."
            )
        return None
    if not all(is_jobs_folder(p) for p in paths):
        raise ConfigError("score --dar-rules takes Harbor jobs folders or run folders, not both.")
    if as_json:
        raise ConfigError(
            "score --dar-rules on a Harbor jobs folder prints what DAR's own scorer prints, "
            "as text; for JSON, import the folder first (deonticbench import-harbor JOBS "
            "--out RUN) and run score RUN --dar-rules --json."
        )
    chosen = pick_scorer(paths) if scorer == "auto" else scorer
    if chosen not in SCORERS:
        raise ConfigError(f"--dar-scorer takes auto or one of {', '.join(SCORERS)}.")
    if strict and chosen == "meta-harness":
        raise ConfigError("DAR's meta-harness scorer has no --errors-as-incorrect.")
    return jobs_report(paths, "adapters" if chosen == "adapters" else "meta-harness", strict)


def is_dar_run(scores: RunScores) -> bool:
    """A run made with ``eval --protocol dar``: ``score`` shows DAR's readings of it."""
    return scores.run.protocol == DAR_PROTOCOL


def dar_rules_text(scores: Sequence[RunScores], *, every: bool = True) -> str:
    """Each imported run scored by DAR's rules beside the paper's, and each dar-protocol
    run's DAR readings (default and strict) beside the harness reader's figure of the
    same final states; ``every`` False: the dar-protocol runs only (plain ``score``)."""
    return "".join(
        (
            f"\nDAR's verifier and scorer beside the harness reader, same final states: "
            f"{s.run.path}\n"
            if is_dar_run(s)
            else f"\nDAR's rules beside the paper's: {s.run.path}\n"
        )
        + render_scorer_table(scorer_rows(s.run.path, s), dar_run=is_dar_run(s))
        for s in scores
        if every or is_dar_run(s)
    )


def require_dar_views(scores: Sequence[RunScores]) -> None:
    """``--dar-rules`` on run folders: an error naming the first run that holds no DAR
    view (neither made under ``--protocol dar`` nor imported from Harbor)."""
    for s in scores:
        scorer_rows(s.run.path, s)


def against_dar_text(scores: Sequence[RunScores], fmt: str) -> tuple[list[str], str]:
    """(a note per run left out, DAR's table beside the runs of the dar protocol)."""
    kept, notes = dar_runs(scores)
    return notes, "\n" + render(against_dar(kept), fmt if fmt != "json" else "table")


__all__ = [
    "against_dar_text",
    "dar_rules_text",
    "is_dar_run",
    "jobs_folders_report",
    "require_dar_views",
]
