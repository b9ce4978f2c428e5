"""An inspect log of the deonticbench tasks, brought back as a run folder.

    import_log("logs/2026-...deonticbench_....eval", "runs/gpt-4.1-inspect")

Every scored sample carries its record (``Record.to_json()``, every attempt) in the
score's metadata; those records are written to ``records.jsonl`` (sample = epoch - 1)
with a ``config.json`` saying where they came from, so ``deonticbench score`` (with
``--against paper`` and ``--compare``) reads the run as one of its own.  Samples that
ended in an error have no score and no record: they are counted, not invented.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log

from ...errors import ConfigError, DataError
from ...evaluation.provenance import imported_config
from ...solver import Limits
from ...store.imported import refuse_existing, write_imported_run
from ...store.record import Record
from ...store.run import Run
from ...store.spec import RunSpec
from .agent import TRAJECTORY_KEY
from .scorer import RECORD_KEY

HARNESS_TASKS = ("deonticbench/",)
"""Registry names of the tasks this package defines start with this."""


@dataclass(frozen=True)
class InspectImport:
    """What ``import_log`` wrote, and how many samples had no score to import."""

    run: Run
    """The run folder written, read back: every reader of a run takes it."""
    unscored: int
    """Samples of the log without a deonticbench score (errors, cancellations)."""


def import_log(log_path: str | Path, out: str | Path) -> InspectImport:
    """Write the records of an inspect log (``.eval`` or ``.json``) to a new run folder."""
    path = Path(log_path)
    log = _read_log(path)
    registry_name = log.eval.task_registry_name or log.eval.task
    if not str(registry_name).startswith(HARNESS_TASKS):
        raise DataError(
            f"{path} is a log of the task {registry_name!r}, not of a deonticbench task."
        )
    if log.samples is None:
        raise DataError(f"{path} holds no samples (a header-only log) to import.")
    records: list[Record] = []
    trajectories: dict[tuple[str, str, str, int], dict[str, Any]] = {}
    unscored = 0
    for sample in log.samples:
        record = _record_of(sample.scores or {})
        if record is None:
            unscored += 1
        else:
            records.append(record)
            trajectory = _trajectory_of(sample.scores or {})
            if trajectory is not None and record.agent is not None:
                trajectories[record.key] = trajectory
    if not records:
        raise DataError(f"{path} has no scored sample of a deonticbench task to import.")
    records.sort(key=lambda r: r.key)
    folder = Path(out)
    refuse_existing(folder)
    config = _config(path, log, records)
    written = write_imported_run(folder, config, [(r, trajectories.get(r.key)) for r in records])
    return InspectImport(written, unscored)


def _read_log(path: Path) -> Any:
    if not path.is_file():
        raise DataError(f"{path} does not exist (expected an inspect .eval or .json log).")
    if path.suffix not in (".eval", ".json"):
        raise DataError(f"{path} is not an inspect log: expected a .eval or .json file.")

    try:
        return read_eval_log(str(path))
    except Exception as exc:  # inspect raises many kinds for a file it cannot read
        raise DataError(f"{path} cannot be read as an inspect log ({exc}).") from None


def _record_of(scores: dict[str, Any]) -> Record | None:
    for score in scores.values():
        metadata = getattr(score, "metadata", None) or {}
        if RECORD_KEY in metadata:
            try:
                return Record.from_json(metadata[RECORD_KEY])
            except ValueError as exc:
                raise DataError(f"a score's record is malformed ({exc}).") from None
    return None


def _trajectory_of(scores: dict[str, Any]) -> dict[str, Any] | None:
    for score in scores.values():
        metadata = getattr(score, "metadata", None) or {}
        if isinstance(metadata.get(TRAJECTORY_KEY), dict):
            return dict(metadata[TRAJECTORY_KEY])
    return None


def _config(path: Path, log: Any, records: list[Record]) -> dict[str, Any]:
    """config.json: the run as a RunSpec states it (model, split, domains, modes, K,
    attempts, seed, limits) in the runner's layout, and where the records came from."""
    args = dict(log.eval.task_args or {})
    metadata = dict(log.eval.metadata or {})
    domains = tuple(dict.fromkeys(r.domain for r in records))
    epochs = log.eval.config.epochs
    try:
        spec = RunSpec(
            model=str(log.eval.model),
            domains=domains,
            split=str(metadata.get("split", args.get("split", "hard"))),
            modes=tuple(dict.fromkeys(r.mode for r in records)),
            k=tuple(
                (d, int(epochs or (1 + max(r.sample for r in records if r.domain == d))))
                for d in domains
            ),
            attempts=int(metadata.get("attempts") or max(len(r.attempts) for r in records)),
            exemplar_seed=_exemplar_seed(metadata, args),
            limits=Limits(timeout_s=float(metadata.get("timeout", Limits.timeout_s))),
        )
    except (ConfigError, TypeError, ValueError) as exc:
        raise DataError(f"{path} does not describe a deonticbench run ({exc}).") from None
    return {
        **imported_config(spec, "inspect"),
        "data": metadata.get("data"),
        "templates": metadata.get("templates"),
        "few_shot_pools": {domains[0]: metadata["few_shot_pool"]}
        if metadata.get("few_shot_pool") and len(domains) == 1
        else {},
        "inspect": {
            "log": str(path.resolve()),
            "task": str(log.eval.task_registry_name or log.eval.task),
            "task_args": args,
            "eval_id": log.eval.eval_id,
            "run_id": log.eval.run_id,
            "created": str(log.eval.created),
            "status": str(log.status),
            "inspect_version": str(log.eval.packages.get("inspect_ai", "")),
        },
    }


def _exemplar_seed(metadata: dict[str, Any], args: dict[str, Any]) -> int:
    """The task's exemplar seed, from its metadata or its task arguments; a log written
    before the task named it ``exemplar_seed`` calls it ``seed``."""
    for found in (metadata, args):
        for key in ("exemplar_seed", "seed"):
            if found.get(key) is not None:
                return int(found[key])
    return 0


__all__ = ["HARNESS_TASKS", "InspectImport", "import_log"]
