"""What a set is: its runs, each a spec (what to run) and run options (how), named and
put in a provider lane, checked as a whole before any request.

A set is refused in one sentence naming the entry when two entries would share a
folder, when two are the same run (the same config.json fingerprint on the same
samples: their records could only repeat each other), or when a run folder already
holds another run.  Runs of one lane (one provider's endpoint: the same provider and
server) share that provider's limits, so they go one after another; lanes go side by
side.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..api import PreparedRun, prepare
from ..errors import ConfigError, DeonticBenchError
from ..evaluation.run_options import RunOptions
from ..models.base import cacheable
from ..store import check_existing, sets
from ..store import config as run_config
from ..store.folder import is_run_folder
from ..store.record import RecordKey
from ..store.spec import RunSpec

__all__ = ["SetEntry", "SetPlan", "default_run_name", "lane_of", "plan_set"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class SetEntry:
    """One run of a set as its file gives it: a name (None: from the model), what to
    run and how (``out`` is the set's to decide), and where the file says it (for the
    sentence that refuses it)."""

    spec: RunSpec
    options: RunOptions = field(default_factory=RunOptions)
    name: str | None = None
    where: str = ""
    """``FILE, run N (model)``: how a refusal names the entry."""


@dataclass(frozen=True)
class PlannedRun:
    """A set's run, prepared: its folder is ``<set>/<name>``."""

    entry: SetEntry
    name: str
    lane: str
    prepared: PreparedRun

    @property
    def manifest_row(self) -> sets.SetRun:
        return sets.SetRun(
            self.name, self.prepared.model.spec, self.prepared.spec.protocol, self.lane
        )


@dataclass(frozen=True)
class SetPlan:
    """Every run of a set, prepared, in the file's order."""

    folder: Path
    source: str
    runs: tuple[PlannedRun, ...]

    def lanes(self) -> dict[str, list[PlannedRun]]:
        out: dict[str, list[PlannedRun]] = {}
        for run in self.runs:
            out.setdefault(run.lane, []).append(run)
        return out


def default_run_name(spec: RunSpec) -> str:
    """A run's folder name when its entry gives none: the model's name, without its
    backend and server (``openai:gpt-4.1`` -> ``gpt-4.1``), safe as a file name."""
    model = spec.model.split(":", 1)[-1].split("@", 1)[0]
    return _UNSAFE.sub("-", Path(model).name if "/" in model else model).strip("-.") or "run"


def lane_of(prepared: PreparedRun, index: int) -> str:
    """The provider lane of a prepared run: its provider and server for a model behind
    an API; the machine's one CPU lane for a local model (two would only share the
    cores); a lane of its own for the reference and replay backends, which send
    nothing."""
    model = prepared.model
    base_url = getattr(model, "base_url", None)
    if not cacheable(model):  # reference, replay: they send nothing
        return f"{model.provider}#{index}"
    if model.provider == "local":
        return "local"
    return f"{model.provider}@{base_url}" if base_url else model.provider


def plan_set(entries: Sequence[SetEntry], folder: Path, source: str) -> SetPlan:
    """Prepare every entry into ``folder/<name>``, or refuse the set in one sentence
    naming the entry; nothing is written and nothing is sent."""
    if not entries:
        raise ConfigError(f"{source}: the set has no runs.")
    names: dict[str, str] = {}
    prints: dict[str, list[tuple[str, set[RecordKey]]]] = {}
    runs: list[PlannedRun] = []
    for index, entry in enumerate(entries):
        name = entry.name or default_run_name(entry.spec)
        if name in names:
            raise ConfigError(
                f"{entry.where} would write the folder {name!r}, as {names[name]} does: "
                "give one of them a name:."
            )
        names[name] = entry.where
        options = dataclasses.replace(entry.options, out=folder / name)
        try:
            prepared = prepare(entry.spec, options)
        except DeonticBenchError as exc:
            raise type(exc)(f"{entry.where}: {exc}") from None
        # The same run: records that could stand in each other's folder (one fingerprint)
        # for the same samples (domain, case, mode, sample index).  Another mode or case
        # of the same model and settings is a run of its own.
        key = json.dumps(run_config.fingerprint(prepared.config), sort_keys=True, default=str)
        samples = prepared.sample_keys()
        for where, earlier in prints.get(key, []):
            if samples & earlier:
                raise ConfigError(
                    f"{entry.where} is the same run as {where} (the same model and settings "
                    "on the same samples): drop one of them."
                )
        prints.setdefault(key, []).append((entry.where, samples))
        if is_run_folder(prepared.out) and not prepared.fresh:
            try:
                check_existing(prepared.out, prepared.config)
            except ConfigError as exc:
                raise ConfigError(f"{entry.where}: {exc}") from None
        runs.append(PlannedRun(entry, name, lane_of(prepared, index), prepared))
    return SetPlan(folder, source, tuple(runs))
