"""The settings' exemplars: solved pool cases shown in their own split parts, chosen as
few-shot chooses them, a pool case whose split is not usable skipped and counted (real
swipl and sandbox, the shared mirror; docs/settings.md)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from deonticbench import RunOptions, RunSpec, evaluate
from deonticbench.data import get_domain, load_cases
from deonticbench.data.sources import resolve_source
from deonticbench.prompting.exemplars import (
    SplitExemplars,
    choose_exemplars,
    exemplar_pool,
    retrieve_exemplars,
)
from deonticbench.settings.given import SettingParts

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)


@pytest.mark.slow
def test_a_pool_case_whose_split_fails_is_skipped_for_the_next_and_counted() -> None:
    source = resolve_source(DATA)
    domain = get_domain("sara_numeric")
    pool, _ = exemplar_pool(domain, source)
    case = load_cases(domain, "hard", source)[0]
    first = choose_exemplars(domain, pool, case, len(pool), 0)
    # The top-ranked exemplar gets a gold its reference does not print: its split is
    # dropped in the sandbox, so the setting must take the next ones in the ranking.
    broken = dataclasses.replace(first[0], gold=int(first[0].gold) + 1000)
    bad_pool = [broken if c.id == broken.id else c for c in pool]
    chooser = SplitExemplars(domain, bad_pool, SettingParts().exemplar_parts)
    shots, parts = chooser.choose(case, "rules-given", choose_exemplars, 0)
    wanted = domain.few_shot_count
    assert [c.id for c in shots] == [c.id for c in first[1 : wanted + 1]]
    assert chooser.skipped["rules-given"] == 1 and chooser.shown["rules-given"] == wanted
    assert "1 skipped" in chooser.note()
    given, written = parts[0]
    # Its own parts: the rules given; the facts and the query written.
    assert ":-" in given and "format(" in written and given not in written
    # The same pool unbroken: the paper's choice itself, nothing skipped.
    plain = SplitExemplars(domain, pool, SettingParts().exemplar_parts)
    shots, _ = plain.choose(case, "facts-given", choose_exemplars, 0)
    assert [c.id for c in shots] == [c.id for c in first[:wanted]]
    assert plain.skipped["facts-given"] == 0


@pytest.mark.slow
def test_retrieved_exemplars_in_a_setting_run_score_100_and_are_named(tmp_path: Path) -> None:
    """The reference backend answers only the asked part; with exemplars in the prompt it
    still scores 100, each record names the retrieved exemplars (the few-shot unit's own,
    as the pool cases' splits are usable) and keeps its template hash."""
    source = resolve_source(DATA)
    spec = RunSpec(
        model="reference",
        domains=("airline",),
        split="hard",
        modes=("few-shot", "rules-given", "facts-given"),
        k=1,
        attempts=1,
        case_range=2,
        exemplars="retrieved",
        data=source,
        # The few-shot records compared against are the harness's (the paper protocol's
        # few-shot shows upstream's exemplars, not retrieved ones).
        protocol="harness",
    )
    run = evaluate(spec, RunOptions(out=tmp_path / "run", cache=False))
    assert run.records and all(r.final.outcome == "correct" for r in run.records)
    by_key = {(r.domain, r.case_id, r.mode): r for r in run.records}
    settings = [r for r in run.records if r.mode in ("rules-given", "facts-given")]
    assert len(settings) == 4
    config = json.loads((run.path / "config.json").read_text())
    for record in settings:
        assert record.exemplars and record.template_hash
        few = by_key[(record.domain, record.case_id, "few-shot")]
        assert record.template_hash != few.template_hash
        note = config["settings"][f"{record.domain}/exemplars"]
        if f"{record.mode} " in note and " 0 skipped" in note.split(record.mode)[1].split(";")[0]:
            # Every pool case reached was usable: the very exemplars few-shot shows.
            assert record.exemplars == few.exemplars
        else:
            domain = get_domain(record.domain)
            pool, _ = exemplar_pool(domain, source)
            case = next(c for c in load_cases(domain, "hard", source) if c.id == record.case_id)
            ranked = [c.id for c in retrieve_exemplars(domain, pool, case, len(pool))]
            assert list(record.exemplars) == [i for i in ranked if i in record.exemplars]
    assert "exemplars shown" in config["settings"]["airline/exemplars"]
    assert "airline/rules-given" in config["templates"]
