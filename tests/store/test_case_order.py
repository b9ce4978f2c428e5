"""config.json records the split's file order of a run's cases (upstream's bootstrap draws
cases in that order; records.jsonl is in the order samples finished), and a resumed run
keeps an order that still follows the split."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from deonticbench import RunOptions, RunSpec, evaluate
from deonticbench.data.sources import resolve_source
from deonticbench.store.config import merge_config

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)


@pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="the shared data mirror is absent")
def test_a_run_records_its_cases_in_the_splits_file_order(tmp_path: Path) -> None:
    spec = RunSpec(
        model="reference",
        domains=("housing", "airline"),
        split="smoke",
        modes=("direct",),
        k=1,
        data=resolve_source(DATA),
    )
    evaluate(spec, RunOptions(out=tmp_path / "run", cache=False))
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    for domain, folder in (("housing", "housing"), ("airline", "airline")):
        rows = json.loads(Path(DATA, "data", folder, "hard.json").read_text())
        assert config["case_order"][domain] == [row["id"] for row in rows[:5]]


def _config(order: dict[str, list[str]]) -> dict[str, object]:
    return {"model": {"identity": {"m": 1}}, "split": "hard", "case_order": order}


def test_a_resume_keeps_an_order_that_follows_the_split(tmp_path: Path) -> None:
    merge_config(tmp_path, _config({"airline": ["a", "b"]}))
    # a larger --limit plans the earlier cases again: its order is the split's
    merged = merge_config(tmp_path, _config({"airline": ["a", "b", "c"], "housing": ["h"]}))
    assert merged["case_order"] == {"airline": ["a", "b", "c"], "housing": ["h"]}
    # another --case-ids session: its new cases follow the ones already there
    merged = merge_config(tmp_path, _config({"airline": ["d", "a"]}))
    assert merged["case_order"]["airline"] == ["a", "b", "c", "d"]
    assert json.loads((tmp_path / "config.json").read_text()) == merged
