"""The one 'write an imported run' step both importers end with (store/imported.py):
a new folder only, every record, an agentic record's trajectory as a hashed sidecar."""

from __future__ import annotations

from pathlib import Path

import pytest

from deonticbench.errors import ConfigError
from deonticbench.evaluation.provenance import imported_config
from deonticbench.store import read_records
from deonticbench.store.imported import write_imported_run
from deonticbench.store.record import AgentInfo, Attempt, Record
from deonticbench.store.spec import RunSpec
from deonticbench.store.trajectory import add_step, new_trajectory, read_trajectory


def _record(case_id: str, mode: str, agent: AgentInfo | None) -> Record:
    attempt = Attempt(index=0, prompt_hash="h", response="Answer: 1", answer=1, outcome="correct")
    return Record(domain="airline", case_id=case_id, mode=mode, sample=0, gold=1,  # type: ignore[arg-type]
                  model="m", attempts=[attempt], agent=agent)  # fmt: skip


def test_an_imported_run_is_written_once_with_its_trajectories(tmp_path: Path) -> None:
    atif = new_trajectory("s", agent_name="a", agent_version="1", model_name="m")
    add_step(atif, "user", "go")
    agentic = _record("c1", "agent-zero-shot", AgentInfo("prolog", 1, {}, "submit", 0.5))
    prompted = _record("c2", "zero-shot", None)
    spec = RunSpec(model="m", domains=("airline",), modes=("zero-shot", "agent-zero-shot"), k=1)
    config = imported_config(spec, "test")
    written = write_imported_run(tmp_path / "run", config, [(agentic, atif), (prompted, atif)])
    assert written.path == tmp_path / "run" and len(written.records) == 2
    assert written.spec is not None and written.spec.domains == ("airline",)
    assert (
        written.spec.modes == ("zero-shot", "agent-zero-shot")
        and written.spec.k_for("airline") == 1
    )
    back = read_records(tmp_path / "run" / "records.jsonl").records
    info = back[agentic.key].agent
    assert info is not None and info.trajectory is not None
    assert read_trajectory(tmp_path / "run", info.trajectory, info.trajectory_sha256) == atif
    assert [(r.key, t) for r, t in written.trajectories()] == [(agentic.key, atif)]
    assert back[prompted.key].agent is None  # a prompted record keeps no trajectory
    with pytest.raises(ConfigError, match="already holds a run; import into a new --out"):
        write_imported_run(tmp_path / "run", config, [(prompted, None)])
