"""Eval set folders for the tests of scoring and reporting a set: real run folders (the
reference model through ``evaluate``, and small synthetic runs whose figures differ from
run to run) under one folder, with the set's manifest written by ``store.sets``."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

from synthetic_runs import write_synthetic_run

from deonticbench import RunSpec, evaluate
from deonticbench.evaluation.run_options import RunOptions
from deonticbench.store.sets import SetRun, write_set_manifest

DATA = os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data")
DAR_MIRROR = Path(__file__).resolve().parents[3] / "shared" / "harbor-deonticbench"
SMALL_DOMAINS = ("airline", "sara_binary")
SMALL_MODES = ("zero-shot", "direct")


def small_synthetic_run(
    folder: Path,
    model: str,
    protocol: str,
    *,
    shift: int = 0,
    modes: Sequence[str] = SMALL_MODES,
    domains: Sequence[str] = SMALL_DOMAINS,
) -> Path:
    """``write_synthetic_run`` kept to a few domains and modes (a fast set), with its
    protocol in config.json; ``modes`` may rename the synthetic modes (their order kept):
    a dar run's records are agentic."""
    run = write_synthetic_run(folder, model, shift=shift)
    renamed = dict(zip(SMALL_MODES, modes, strict=True))
    lines = []
    for line in (run / "records.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["domain"] in domains and record["mode"] in renamed:
            record["mode"] = renamed[record["mode"]]
            lines.append(json.dumps(record))
    (run / "records.jsonl").write_text("\n".join(lines) + "\n")
    config = json.loads((run / "config.json").read_text())
    config.update(protocol=protocol, domains=list(domains), modes=list(modes))
    (run / "config.json").write_text(json.dumps(config))
    return run


def reference_run(
    folder: Path,
    *,
    protocol: str = "paper",
    domains: Sequence[str] = SMALL_DOMAINS,
    modes: Sequence[str] = SMALL_MODES,
    cases: tuple[int, int] = (1, 2),
) -> Path:
    """A real run of the reference model on the smoke split: ``cases`` of each domain."""
    spec = RunSpec(
        "reference", split="smoke", domains=tuple(domains), modes=tuple(modes), k=1,
        case_range=cases, protocol=protocol,
    )  # fmt: skip
    evaluate(spec, RunOptions(out=folder, cache=False))
    return folder


def write_manifest(folder: Path, runs: Sequence[Path], *, later: Sequence[str] = ()) -> Path:
    """The set's manifest over ``runs`` (folders under ``folder``), in that order, each
    with its model and protocol from its config.json; ``later``: runs not started yet."""
    entries = []
    for run in runs:
        config = json.loads((run / "config.json").read_text())
        model = config["model"]
        model = model["spec"] if isinstance(model, dict) else model
        protocol = str(config.get("protocol") or "harness")
        entries.append(SetRun(run.name, model, protocol, model.split(":")[0]))
    entries += [SetRun(name, "openai:gpt-5.1", "paper", "openai") for name in later]
    write_set_manifest(folder, "sets/test.yaml", entries)
    return folder
