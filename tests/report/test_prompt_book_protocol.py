"""The report rebuilds a run's prompts under the run's own protocol."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deonticbench.api import prepare
from deonticbench.data.sources import DataSource
from deonticbench.evaluation.run_options import RunOptions
from deonticbench.report._prompt_book import prompt_book
from deonticbench.store import Attempt, Record
from deonticbench.store.spec import RunSpec

MIRROR = Path(os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data"))
pytestmark = pytest.mark.skipif(
    not (MIRROR / "scripts" / "generate_e2e.py").is_file(),
    reason="upstream's scripts are not in the data mirror",
)


@pytest.mark.parametrize("protocol", ["paper", "harness"])
def test_a_runs_prompts_are_rebuilt_under_its_protocol(protocol: str, tmp_path: Path) -> None:
    spec = RunSpec(
        model="reference",
        domains=("airline",),
        split="smoke",
        modes=("few-shot",),
        data=DataSource(kind="local", path=MIRROR),
        protocol=protocol,  # type: ignore[arg-type]
    )
    prepared = prepare(spec, RunOptions(out=tmp_path / "run"))
    sent = {u.case.id: u.render() for u in prepared.plan.units}
    records = [
        Record(domain="airline", case_id=u.case.id, mode="few-shot", sample=0, gold=u.case.gold,
               model="reference", attempts=[Attempt(0, sent[u.case.id].prompt_hash, "no")])
        for u in prepared.plan.units
    ]  # fmt: skip
    # config.json says which upstream files a paper run's prompts came from
    texts = prepared.config.get("paper_texts")
    assert (texts is not None) == (protocol == "paper")
    if texts is not None:
        assert texts["commit"] == "2b4e4ea114295fdf7151d4122c5ebbd5a2bf277e"
        assert "scripts/generate_e2e.py" in texts["files"]
    book = prompt_book(prepared.config, records)
    assert book.problem is None
    for record in records:
        (rebuilt,) = book.chain(record)
        assert rebuilt is not None and rebuilt == sent[record.case_id]
        # upstream's airline few-shot prompt opens with its statutes heading
        assert rebuilt.messages[1].content.startswith("Statutory Terms:") == (protocol == "paper")
