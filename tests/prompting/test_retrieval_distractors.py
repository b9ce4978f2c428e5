"""Retrieved few-shot exemplars (real bm25s) and distractor statutes, on real cases."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from deonticbench import RunOptions
from deonticbench.data import get_domain, load_cases
from deonticbench.data.sources import resolve_source
from deonticbench.prompting import exemplar_pool, plan_run
from deonticbench.prompting.distractors import with_distractors
from deonticbench.prompting.exemplars import problem_key, retrieve_exemplars

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)


def test_retrieval_is_deterministic_leak_free_and_prefers_similar_cases() -> None:
    source = resolve_source(DATA)
    domain = get_domain("sara_numeric")
    pool, _ = exemplar_pool(domain, source)
    hard = load_cases(domain, "hard", source)
    hard_ids = {c.id for c in hard}
    case = hard[0]
    chosen = retrieve_exemplars(domain, pool, case, 3)
    assert len(chosen) == 3 and chosen == retrieve_exemplars(domain, list(reversed(pool)), case, 3)
    assert all(c.id not in hard_ids and problem_key(c) != problem_key(case) for c in chosen)
    # The case itself, put in the pool, is never retrieved, though it is the best match.
    assert case not in retrieve_exemplars(domain, [case, *pool], case, 3)
    # A near copy of a case (same text, the question restated) is its nearest neighbour,
    # whatever its place in the pool; an exact copy counts as the case itself.
    twin = pool[5]
    near = dataclasses.replace(twin, id="near-" + twin.id, question="Restated: " + twin.question)
    same = dataclasses.replace(twin, id="same-" + twin.id)
    found = retrieve_exemplars(domain, [near, *pool, same], twin, 1)
    assert [c.id for c in found] == ["near-" + twin.id]


def test_a_retrieved_plan_records_its_exemplars(tmp_path: Path) -> None:
    source = resolve_source(DATA)
    domain = get_domain("airline")
    paper = plan_run([domain], split="hard", modes=["few-shot"], source=source, limit=3)
    retrieved = plan_run(
        [domain], split="hard", modes=["few-shot"], source=source, limit=3, exemplars="retrieved"
    )
    assert [u.exemplars for u in paper.units] != [u.exemplars for u in retrieved.units]
    assert all(u.retrieved and len(u.exemplars) == 2 for u in retrieved.units)
    assert not any(u.retrieved for u in paper.units)


def test_distractors_add_other_states_statutes_deterministically() -> None:
    source = resolve_source(DATA)
    domain = get_domain("housing")
    cases = load_cases(domain, "hard", source)
    case = cases[0]
    [once], _ = with_distractors(domain, [case], 2, material=cases, seed=0)
    [again], _ = with_distractors(domain, [case], 2, material=cases, seed=0)
    [other_seed], _ = with_distractors(domain, [case], 2, material=cases, seed=1)
    assert once.statutes == again.statutes != other_seed.statutes
    own = case.statutes.count("\n[") + 1
    assert once.statutes.count("\n[") + 1 == own + 2
    # Every section of the case is still there; the two added are from another state.
    for section in case.statutes.split("\n\n["):
        assert section.split("]", 1)[1].strip() in once.statutes
    others = [c for c in cases if c.extra["state"] != case.extra["state"]]
    added = [s for s in once.statutes.split("\n\n") if s.split("] ", 1)[1] not in case.statutes]
    assert len(added) == 2
    assert all(any(a.split("] ", 1)[1] in o.statutes for o in others) for a in added)
    # Without the flag the statutes are the paper's; 0 adds none to a case's own statutes.
    assert with_distractors(domain, [case], None, material=cases, seed=0) == ([case], None)
    assert with_distractors(domain, [case], 0, material=cases, seed=0) == ([case], None)


def test_a_run_with_distractors_says_so_and_is_not_resumed_without_them(tmp_path: Path) -> None:
    from deonticbench import RunSpec, evaluate
    from deonticbench.errors import DeonticBenchError

    def spec(distractors: int | None) -> RunSpec:
        return RunSpec(
            model="reference",
            domains=("housing", "airline"),
            split="hard",
            modes=("direct",),
            k=1,
            case_range=2,
            distractors=distractors,
            data=resolve_source(DATA),
        )

    run = evaluate(spec(2), RunOptions(out=tmp_path / "run", cache=False))
    config = json.loads((run.path / "config.json").read_text())
    assert config["distractors"] == 2
    assert "airline/distractors" in config["settings"]  # airline gets none, and says so
    with pytest.raises(DeonticBenchError, match="distractors"):
        evaluate(spec(None), RunOptions(out=tmp_path / "run", cache=False))
    plain = evaluate(spec(None), RunOptions(out=tmp_path / "plain", cache=False))
    assert "distractors" not in json.loads((plain.path / "config.json").read_text())
