"""results.json's ``upstream_bootstrap`` equals what upstream's own ``bootstrap_accuracy``
(scripts/bootstrap_outputs.py, imported by path from the upstream layout) gives for the
same outputs, in all 15 domain x mode cells, to its 4 decimals."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from upstream_reading import BOOTSTRAP, bootstrap_module
from upstream_scripts import MIRROR

from deonticbench.data.cases import load_cases
from deonticbench.data.domains import DOMAINS
from deonticbench.data.sources import resolve_source
from deonticbench.scoring import score_runs
from deonticbench.scoring.results import build_results
from deonticbench.scoring.upstream_bootstrap import upstream_bootstrap_stats
from deonticbench.store.record import Attempt, Record
from deonticbench.vocabulary.modes import MODES

UPSTREAM_MODE = {"direct": "direct", "zero-shot": "zero_shot", "few-shot": "few_shot"}

pytestmark = pytest.mark.skipif(not BOOTSTRAP.is_file(), reason="upstream's scripts are not here")


def upstream_value(outcome: str, label: Any, numeric: bool, positive: int, negative: int) -> Any:
    """An output value upstream's parsers would have read for a sample with ``outcome``."""
    if outcome == "abstain":
        return float("nan")
    if numeric:
        return float(label) + (0 if outcome == "correct" else 50)
    return label if outcome == "correct" else (negative if label == positive else positive)


@pytest.mark.slow
def test_upstream_bootstrap_equals_upstreams_script_in_all_15_cells(tmp_path: Path) -> None:
    upstream = bootstrap_module()
    source = resolve_source(MIRROR)
    rng = random.Random(36)
    records: list[Record] = []
    expected: dict[str, dict[str, dict[str, Any]]] = {}
    order: dict[str, list[str]] = {}
    for dom in DOMAINS.values():
        cases = load_cases(dom, "hard", source)
        order[dom.name] = [c.id for c in cases]
        labels = upstream.load_labels(dom.name)  # upstream's labels, in its case order
        assert len(labels) == len(cases)
        numeric = dom.name in upstream.NUMERIC_DOMAINS
        positive, negative = (1, 0) if dom.name == "sara_binary" else (1, -1)
        for mode in MODES:
            combined: dict[int, dict[str, Any]] = {}
            # each cell its own mix, from mostly right to mostly abstaining
            weights = (rng.random(), rng.random(), rng.random())
            for pos, (case, label) in enumerate(zip(cases, labels, strict=True)):
                outcomes = rng.choices(("correct", "wrong", "abstain"), weights, k=dom.default_k)
                combined[pos] = {
                    "label": label,
                    "outcomes": [
                        upstream_value(o, label, numeric, positive, negative) for o in outcomes
                    ],
                }
                for sample, outcome in enumerate(outcomes):
                    attempts = [Attempt(0, "h", "r", outcome=outcome)]  # type: ignore[arg-type]
                    if outcome == "abstain" and sample % 2:
                        # a retry's outcome is not the paper's figure: only attempt 0 counts
                        attempts.append(Attempt(1, "h", "r", outcome="correct"))
                    record = Record(dom.name, case.id, mode, sample, case.gold, "m", attempts)
                    records.append(record)
            expected.setdefault(dom.name, {})[mode] = upstream.bootstrap_accuracy(
                combined, dom.name
            )
    rng.shuffle(records)  # records.jsonl is in the order samples finished
    folder = tmp_path / "run"
    folder.mkdir()
    config = {"model": {"spec": "m"}, "split": "hard", "case_order": order}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "records.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))

    (scores,) = score_runs([folder], bootstrap=10)
    got = build_results(scores, command=["test"])["upstream_bootstrap"]

    cells = 0
    for domain, by_mode in expected.items():
        for cell, stats in by_mode.items():
            mine = got[domain][cell]
            assert mine.keys() == stats.keys(), (domain, cell)
            for key, value in stats.items():
                assert math.isclose(mine[key], value, abs_tol=5e-5), (domain, cell, key)
                assert round(mine[key], 4) == round(value, 4), (domain, cell, key)
            cells += 1
    assert cells == 15


def test_a_run_without_a_recorded_case_order_says_its_figures_may_differ(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    record = Record("airline", "a1", "direct", 0, 5, "m", [Attempt(0, "h", "r", outcome="wrong")])
    (folder / "config.json").write_text(json.dumps({"model": {"spec": "m"}, "split": "hard"}))
    (folder / "records.jsonl").write_text(json.dumps(record.to_json()) + "\n")
    (scores,) = score_runs([folder], bootstrap=10)
    doc = build_results(scores, command=["test"])
    assert doc["upstream_bootstrap"]["airline"]["direct"]["mean_wrong_rate"] == 1.0
    assert any("records no case order for airline" in note for note in doc["notes"])


@pytest.mark.parametrize("sizes", ["mixed", "ones", "with_empty"])
def test_the_draws_equal_upstreams_whatever_each_case_holds(sizes: str) -> None:
    """The picks are drawn one call per replicate with an array of bounds, where the
    script makes one call per pick: cases of different sample counts, of one sample (a
    bound of 1 draws nothing) and of none (no draw, yet in the denominator) must still
    consume the generator exactly as the script does."""
    upstream = bootstrap_module()
    rng = random.Random(sizes)
    counts = {
        "mixed": [rng.choice((1, 2, 3, 5)) for _ in range(40)],
        "ones": [1] * 40,
        "with_empty": [rng.choice((0, 0, 1, 2, 4)) for _ in range(40)],
    }[sizes]
    cases = [[rng.choice(("correct", "wrong", "abstain")) for _ in range(k)] for k in counts]
    combined = {
        pos: {"label": 7.0, "outcomes": [upstream_value(o, 7.0, True, 1, -1) for o in outcomes]}
        for pos, outcomes in enumerate(cases)
    }
    expected = upstream.bootstrap_accuracy(combined, "airline")
    mine = upstream_bootstrap_stats(cases)  # type: ignore[arg-type]
    assert mine.keys() == expected.keys()
    for key, value in expected.items():
        assert round(mine[key], 4) == round(value, 4), key
