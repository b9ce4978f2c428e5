"""Scoring real run folders, checked against a separate plain-Python reading of paper B.3."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from deonticbench.data.domains import DOMAINS
from deonticbench.scoring.comparisons import compare
from deonticbench.scoring.metrics import iter_draws
from deonticbench.scoring.scores import score_run, score_runs
from deonticbench.scoring.seeds import domain_rng
from deonticbench.store.folder import RunFolderError
from deonticbench.store.record import Attempt, Record
from deonticbench.store.run import read_run

MODES = ("direct", "few-shot")


def _attempt(index: int, answer: Any, outcome: str, reason: str | None = None) -> Attempt:
    return Attempt(
        index=index,
        prompt_hash=f"p{index}",
        response="text",
        answer=answer,
        outcome=outcome,  # type: ignore[arg-type]
        abstain_reason=reason,
    )


def _random_attempt(rnd: random.Random, domain: str, gold: Any, index: int) -> Attempt:
    dom = DOMAINS[domain]
    r = rnd.random()
    if r < 0.2:
        return _attempt(index, None, "abstain", rnd.choice(["timeout", "syntax error"]))
    if dom.label_kind == "numeric":
        value = gold + rnd.choice([0, 0.5, 1, 1.5, -1, 2, 250, -0.5])
        ok = abs(round(value) - gold) <= 1
        return _attempt(index, float(value), "correct" if ok else "wrong")
    value = rnd.choice(dom.classes)
    return _attempt(index, value, "correct" if value == gold else "wrong")


def make_records(seed: int, retries: bool = False) -> list[Record]:
    """Random records over every domain, with ragged cases and golds of 0 and -1."""
    rnd = random.Random(seed)
    records = []
    for dom in DOMAINS.values():
        for i in range(rnd.randint(12, 25)):
            if dom.label_kind == "numeric":
                gold: Any = rnd.choice([0, -1, 1, rnd.randint(-50, 9000)])
            else:
                gold = rnd.choice(dom.classes)
            for mode in MODES:
                k = rnd.randint(1, dom.default_k)  # ragged: some samples missing
                samples = rnd.sample(range(dom.default_k), k)
                for s in samples:
                    n_att = rnd.randint(1, 3) if retries else 1
                    attempts = [_random_attempt(rnd, dom.name, gold, a) for a in range(n_att)]
                    records.append(
                        Record(
                            domain=dom.name,
                            case_id=f"{dom.name}-{i:03d}",
                            mode=mode,  # type: ignore[arg-type]
                            sample=s,
                            gold=gold,
                            model="test:model",
                            attempts=attempts,
                        )
                    )
    return records


def write_run(folder: Path, records: list[Record], extra_lines: Sequence[str] = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "model": "test:model",
        "split": "hard",
        "domains": list(DOMAINS),
        "modes": list(MODES),
    }
    (folder / "config.json").write_text(json.dumps(config))
    lines = [json.dumps(r.to_json()) for r in records] + list(extra_lines)
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    return folder


# -- an independent reading of paper B.3 -------------------------------------------------


def _percentile(values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), by hand."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _plain_b3(lines: list[dict], domain: str, mode: str, stage: str, b: int, seed: int) -> dict:
    """Paper B.3 with plain loops, reading the JSON lines directly.

    Consumes the same random draws as the library (case slots and uniform numbers from
    ``iter_draws``); everything else (grouping, verdicts, F1, percentiles) is written here.
    """
    dom = DOMAINS[domain]
    cases: dict[str, list[tuple[int, Any, Any]]] = {}
    for obj in lines:
        if obj["domain"] != domain or obj["mode"] != mode:
            continue
        attempt = obj["attempts"][0] if stage == "first" else obj["attempts"][-1]
        cases.setdefault(obj["case_id"], []).append((obj["sample"], obj["gold"], attempt["answer"]))
    ids = sorted(cases)
    for cid in ids:
        cases[cid].sort()

    def value(gold: Any, answer: Any) -> tuple[bool, Any]:
        """(correct, predicted class or None) with the paper's abstention rules."""
        if dom.label_kind == "numeric":
            y = -1 if answer is None else answer
            return answer is not None and abs(round(y) - int(gold)) <= 1, None
        predicted = (
            answer if answer is not None else dom.negative if gold == dom.positive else dom.positive
        )
        return predicted == gold, predicted

    def metric(picks: list[tuple[Any, Any]]) -> float:
        if dom.label_kind == "numeric":
            return sum(value(g, a)[0] for g, a in picks) / len(picks)
        tp = fp = fn = tn = 0
        for g, a in picks:
            predicted = value(g, a)[1]
            if g == dom.positive:
                tp += predicted == dom.positive
                fn += predicted != dom.positive
            else:
                fp += predicted == dom.positive
                tn += predicted != dom.positive
        f1_pos = 2 * tp / (2 * tp + fp + fn) if 2 * tp + fp + fn else 0.0
        f1_neg = 2 * tn / (2 * tn + fn + fp) if 2 * tn + fn + fp else 0.0
        return (f1_pos + f1_neg) / 2

    reps: list[float] = []
    for block in iter_draws(len(ids), b, domain_rng(seed, domain)):
        for row_cases, row_u in zip(block.case.tolist(), block.u.tolist(), strict=True):
            picks = []
            for c, u in zip(row_cases, row_u, strict=True):
                samples = cases[ids[c]]
                _, gold, answer = samples[int(u * len(samples))]
                picks.append((gold, answer))
            reps.append(metric(picks))
    mean = sum(reps) / len(reps)
    return {
        "mean": mean,
        "low": _percentile(reps, 2.5),
        "high": _percentile(reps, 97.5),
        "n": len(ids),
    }


@pytest.mark.parametrize("stage", ["first", "final"])
def test_scores_agree_with_a_plain_python_reading_of_paper_b3(tmp_path: Path, stage: str) -> None:
    folder = write_run(tmp_path / "run", make_records(11, retries=True))
    scores = score_run(read_run(folder), bootstrap_b=150, seed=5)
    assert scores.stages == ("first", "final")
    lines = [json.loads(x) for x in (folder / "records.jsonl").read_text().splitlines()]
    checked = 0
    for g in scores.groups:
        if g.stage != stage:
            continue
        want = _plain_b3(lines, g.domain, g.mode, stage, 150, 5)
        assert g.n_cases == want["n"]
        assert g.estimate.mean == pytest.approx(want["mean"], abs=1e-9)
        assert g.estimate.low == pytest.approx(want["low"], abs=1e-9)
        assert g.estimate.high == pytest.approx(want["high"], abs=1e-9)
        checked += 1
    assert checked == len(DOMAINS) * len(MODES)


# -- loading ---------------------------------------------------------------------------


def test_missing_and_corrupt_lines_are_skipped_counted_and_the_rest_scored(tmp_path: Path) -> None:
    records = make_records(3)
    clean = write_run(tmp_path / "clean", records[5:])
    damaged_lines = [
        '{"schema": 1, "domain": "airline", "case_',  # truncated by a crash
        "not json at all",
        json.dumps({**records[0].to_json(), "schema": 99}),
        json.dumps({k: v for k, v in records[1].to_json().items() if k != "gold"}),
        json.dumps({**records[2].to_json(), "domain": "chess"}),
        "",  # a blank line is not counted
    ]
    damaged = write_run(tmp_path / "damaged", records[5:], damaged_lines)
    with (damaged / "records.jsonl").open("ab") as handle:
        handle.write(b"\xff\xfe broken bytes\n")
    run = read_run(damaged)
    skipped = dict(run.report.skipped)
    assert skipped["not valid JSON (corrupt or truncated)"] == 2
    assert skipped["malformed record: unsupported schema 99"] == 1
    assert skipped["unknown domain 'chess'"] == 1
    assert skipped["not UTF-8"] == 1
    assert sum(v for k, v in skipped.items() if k.startswith("malformed record: missing")) == 1
    assert run.report.n_skipped == 6
    assert run.report.kept == len(records) - 5
    summary = run.report.summary()
    assert summary is not None and summary.startswith(f"skipped 6 of {len(records) - 5 + 6} lines")
    got = score_run(run, 100, 0)
    want = score_run(read_run(clean), 100, 0)
    assert got.notes and "skipped 6" in got.notes[0]
    assert [(g.domain, g.mode, g.estimate) for g in got.groups] == [
        (g.domain, g.mode, g.estimate) for g in want.groups
    ]


def test_duplicate_keys_keep_the_first_record(tmp_path: Path) -> None:
    first = Record("airline", "a1", "direct", 0, 100, "m", [_attempt(0, 100.0, "correct")])
    again = Record("airline", "a1", "direct", 0, 100, "m", [_attempt(0, 500.0, "wrong")])
    other = Record("airline", "a2", "direct", 0, 7, "m", [_attempt(0, 7.0, "correct")])
    run = read_run(write_run(tmp_path / "run", [first, again, other]))
    assert run.report.skipped == {"duplicate key (kept the first)": 1}
    scores = score_run(run, 50, 0)
    (group,) = scores.groups
    assert group.estimate.point == 1.0
    assert group.encoded.samples["a1"][0].answer == 100.0


def test_records_are_matched_by_case_id_not_by_position(tmp_path: Path) -> None:
    records = make_records(4)
    shuffled = records[:]
    random.Random(0).shuffle(shuffled)
    a = score_run(read_run(write_run(tmp_path / "a", records)), 200, 1)
    b = score_run(read_run(write_run(tmp_path / "b", shuffled)), 200, 1)
    assert [(g.domain, g.mode, g.estimate, g.rates) for g in a.groups] == [
        (g.domain, g.mode, g.estimate, g.rates) for g in b.groups
    ]


def test_stages_score_first_and_final_attempts_side_by_side(tmp_path: Path) -> None:
    # The first attempt crashed, the retry answered right: first scores 0, final 1.
    rec = Record(
        "sara_numeric",
        "s1",
        "zero-shot",
        0,
        0,
        "m",
        [_attempt(0, None, "abstain", "syntax error"), _attempt(1, 0.4, "correct")],
    )
    scores = score_run(read_run(write_run(tmp_path / "run", [rec])), 20, 0)
    first = scores.group("sara_numeric", "zero-shot", "first")
    final = scores.group("sara_numeric", "zero-shot", "final")
    assert first is not None and final is not None
    assert (first.estimate.point, first.rates.abstain) == (0.0, 1.0)
    assert (final.estimate.point, final.rates.accuracy) == (1.0, 1.0)
    assert first.encoded.samples["s1"][0].reason == "syntax error"


def test_a_stored_outcome_that_disagrees_with_rejudging_is_reported(tmp_path: Path) -> None:
    rec = Record("airline", "a1", "direct", 0, 100, "m", [_attempt(0, 250.0, "correct")])
    scores = score_run(read_run(write_run(tmp_path / "run", [rec])), 20, 0)
    assert scores.groups[0].estimate.point == 0.0
    assert any("differs from re-judging" in n for n in scores.notes)


def test_a_path_that_is_not_a_run_folder_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "file.txt").write_text("x")
    for path in (tmp_path / "empty", tmp_path / "file.txt", tmp_path / "absent"):
        with pytest.raises(RunFolderError, match="is not a run folder"):
            read_run(path)


def test_a_corrupt_config_is_reported_and_the_model_taken_from_records(tmp_path: Path) -> None:
    folder = write_run(tmp_path / "run", make_records(5)[:10])
    (folder / "config.json").write_text("{oops")
    run = read_run(folder)
    assert run.model == "test:model"
    assert any("config.json is unreadable" in n for n in run.report.notes)


# -- comparison ------------------------------------------------------------------------


def test_comparison_is_paired_over_common_cases_and_counts_the_dropped(tmp_path: Path) -> None:
    records = make_records(6)
    a = write_run(tmp_path / "a", records)
    # Run b lacks the airline case 000 and answers every other airline sample right.
    b_records = []
    for r in records:
        if r.domain == "airline" and r.case_id == "airline-000":
            continue
        if r.domain == "airline":
            r = Record(r.domain, r.case_id, r.mode, r.sample, r.gold, r.model,
                       [_attempt(0, float(r.gold), "correct")])  # fmt: skip
        b_records.append(r)
    b = write_run(tmp_path / "b", b_records)
    sa, sb = score_runs([a, b], bootstrap=200, seed=3)
    comparisons = {(c.domain, c.mode): c for c in compare(sa, sb, 200, 3)}
    airline = comparisons[("airline", "direct")]
    assert (airline.only_a, airline.only_b) == (1, 0)
    assert airline.n_common == sa.group("airline", "direct", "first").n_cases - 1
    assert airline.point_b == 1.0
    assert airline.difference.low >= 0.0
    same = comparisons[("housing", "direct")]
    assert (same.difference.mean, same.difference.low, same.difference.high) == (0.0, 0.0, 0.0)
    assert same.only_a == same.only_b == 0


def test_runner_style_config_names_the_model_and_flags_cases_short_of_k(tmp_path: Path) -> None:
    full = [
        Record("airline", "a1", "direct", s, 5, "m", [_attempt(0, 5.0, "correct")])
        for s in range(3)
    ]
    short = [Record("airline", "a2", "direct", 0, 9, "m", [_attempt(0, 9.0, "correct")])]
    folder = write_run(tmp_path / "run", full + short)
    config = {"model": {"spec": "openai:gpt-4.1", "model_name": "gpt-4.1"}, "k": {"airline": 3}}
    (folder / "config.json").write_text(json.dumps(config))
    scores = score_run(read_run(folder), 50, 0)
    assert scores.run.model == "openai:gpt-4.1"
    assert scores.groups[0].model == "openai:gpt-4.1"
    assert any("1 of 2 case(s) have fewer than K=3 samples" in n for n in scores.notes)


def test_request_failures_are_counted_in_the_notes(tmp_path: Path) -> None:
    failed = Attempt(
        index=0, prompt_hash="p", response=None, error="HTTP 500 after 6 tries",
        outcome="abstain", abstain_reason="request failed",
    )  # fmt: skip
    records = [
        Record("airline", f"c{i}", "direct", 0, 100, "test:model", [failed]) for i in range(3)
    ] + [Record("airline", "c3", "direct", 0, 100, "test:model", [_attempt(0, 100.0, "correct")])]
    scores = score_run(read_run(write_run(tmp_path / "run", records)), bootstrap_b=50)
    note = next(n for n in scores.notes if "request failed" in n)
    assert "airline direct" in note and "3 sample(s)" in note and "--retry-errors" in note


def test_a_domains_bootstrap_stream_does_not_depend_on_the_order_of_domains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hashlib

    from deonticbench.data import domains
    from deonticbench.scoring import scores as scoring
    from deonticbench.scoring import seeds

    before = domain_rng(3, "housing").integers(0, 1 << 30, 8).tolist()
    # A domain added in front of the others (or the list reordered) moves no stream.
    reordered = dict(reversed(list(domains.DOMAINS.items())))
    monkeypatch.setattr(domains, "DOMAINS", reordered)
    monkeypatch.setattr(scoring, "DOMAINS", reordered)
    assert domain_rng(3, "housing").integers(0, 1 << 30, 8).tolist() == before
    digest = hashlib.sha256(b"housing").digest()[:8]
    assert seeds.domain_key("housing") == int.from_bytes(digest, "big")
