"""The signals: verbal and log-probability confidences through a real ``eval`` against
the loopback OpenAI-format server (the real openai client), the run-based signals worked
by hand, and the combined signal's cross-fitting."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from fakeproviders import TOKEN_LOGPROB, FakeProvider, FakeRequest
from reliability_runs import write_run

from deonticbench.data.cases import load_cases
from deonticbench.data.sources import resolve_source
from deonticbench.reading.confidence import (
    answer_probability,
    read_verbal_confidence,
    without_confidence,
)
from deonticbench.reliability.signals import run_signals
from deonticbench.store.run import read_run

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)


def test_reading_a_stated_confidence() -> None:
    assert read_verbal_confidence("Answer: 5\nConfidence: 85%") == pytest.approx(0.85)
    assert read_verbal_confidence("Answer: 5\n**Confidence:** 7.5 %") == pytest.approx(0.075)
    assert read_verbal_confidence("<think>Confidence: 10%</think>Answer: 5") is None
    assert read_verbal_confidence("Answer: 5\nConfidence: 150%") == 1.0
    assert read_verbal_confidence("I am 90% sure the answer is 5") is None
    assert without_confidence("Answer: 70\nConfidence: 40%").strip() == "Answer: 70"


def test_the_answer_probability_covers_the_value_tokens_only() -> None:
    tokens = [["Answer", -1.0], [": $", -0.2], ["125", -0.3], ["\n", -2.0],
              ["Confidence", -1.0], [": ", -1.0], ["70", -1.0], ["%", -1.0]]  # fmt: skip
    assert answer_probability(tokens) == pytest.approx(math.exp(-0.5))
    assert answer_probability(None) is None


@pytest.mark.slow
@pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")
def test_verbal_and_logprob_confidences_from_a_real_eval(tmp_path: Path) -> None:
    cases = load_cases("airline", "smoke", resolve_source(Path(DATA)))

    def respond(request: FakeRequest) -> str:
        user = request.last_user
        (case,) = [c for c in cases if c.text.strip()[:200] in user]
        stated = "Confidence: 70%" if "Confidence: <percent>%" in user else ""
        return f"The fees add up.\nAnswer: ${int(case.gold)}\n{stated}"

    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_DATA"] = DATA
    with FakeProvider(respond) as fake:
        done = subprocess.run(
            [sys.executable, "-m", "deonticbench", "eval", "--model",
             f"openai-compatible:fake@{fake.openai_url}", "--domains", "airline", "--split",
             "smoke", "--modes", "direct", "-k", "2", "--confidence", "verbal",
             "--confidence", "logprob", "--no-cache", "--out", str(out)],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        asked = [r.body.get("logprobs") for r in fake.log if r.api == "openai"]
    assert done.returncode == 0, done.stderr
    assert asked and all(a is True for a in asked)
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert {r["mode"] for r in records} == {"direct", "direct-verbal"}
    # The verbal line is not read as the answer: every sample is right.
    assert all(r["outcome"] == "correct" for r in records)
    groups = {g.mode: g for g in run_signals(read_run(out))}
    verbal = groups["direct-verbal"].signals["verbal"]
    assert isinstance(verbal, np.ndarray)
    assert np.allclose(verbal, 0.7)
    assert isinstance(groups["direct"].signals["verbal"], str)  # n/a: not asked for
    # "$<gold>" spans two of the fake server's tokens (": $" and the digits).
    logprob = groups["direct"].signals["logprob"]
    assert isinstance(logprob, np.ndarray)
    assert np.allclose(logprob, math.exp(2 * TOKEN_LOGPROB))


def test_consistency_cross_mode_and_execution_by_hand(tmp_path: Path) -> None:
    gold: dict[str, int | str] = {"a": 100, "b": 200}
    run = tmp_path / "run"
    write_run(run, "test:m", "airline", "direct", gold,
              {"a": [100.0, 100.5, 300.0], "b": [None, 200.0, 260.0]})  # fmt: skip
    # A second mode in the same folder: append its records.
    other = tmp_path / "other"
    write_run(
        other, "test:m", "airline", "zero-shot", gold, {"a": [101.0, 300.0], "b": [None, None]}
    )
    with (run / "records.jsonl").open("a") as fh:
        fh.write((other / "records.jsonl").read_text())
    groups = {g.mode: g for g in run_signals(read_run(run), combined=False)}
    direct = groups["direct"]
    # a: 100 and 100.5 agree (both round within $1), 300 alone; b: abstention agrees
    # with nothing, 200 and 260 alone.
    assert np.allclose(direct.signals["consistency"], [[2 / 3, 2 / 3, 1 / 3], [0, 1 / 3, 1 / 3]])
    # Against zero-shot's a = (101, 300), b = (abstain, abstain).
    assert np.allclose(direct.signals["cross_mode"], [[0.5, 0.5, 0.5], [0, 0, 0]])
    assert isinstance(direct.signals["execution"], str)
    # zero-shot records carry no execution: an answer without a clean run scores 0.75.
    assert np.allclose(groups["zero-shot"].signals["execution"], [[0.75, 0.75], [0, 0]])


def test_the_combined_signal_never_sees_the_case_it_scores(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(3)
    gold: dict[str, int | str] = {f"c{i:02d}": 100 + i for i in range(30)}
    answers = {
        c: [float(g) if rng.random() < 0.6 else float(g) + 50 for _ in range(3)]  # type: ignore[arg-type]
        for c, g in gold.items()
    }
    first = write_run(tmp_path / "a", "test:m", "airline", "direct", gold, answers)
    # The same answers with c05's gold label moved by $50, so each of its samples flips
    # between right and wrong while its signals stay as they were: the other cases'
    # combined scores move (their models learnt from c05), c05's may not (its models
    # were fitted without it).
    moved = dict(gold, c05=int(gold["c05"]) + 50)
    second = write_run(tmp_path / "b", "test:m", "airline", "direct", moved, answers)
    (ga,) = run_signals(read_run(first))
    (gb,) = run_signals(read_run(second))
    a, b = ga.signals["combined"], gb.signals["combined"]
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    row = ga.outcomes.case_ids.index("c05")
    assert not np.allclose(a, b)
    assert np.allclose(a[row], b[row])
    assert ((a >= 0) & (a <= 1)).all()


def test_without_the_reliability_extra_each_feature_says_so_in_one_sentence(
    tmp_path: Path,
) -> None:
    """A fresh interpreter where pandas and scikit-learn cannot be imported (a ``None``
    entry in ``sys.modules`` makes ``import`` raise ImportError, as when not installed):
    the combined signal is n/a with the one missing-extra sentence, a data frame request
    stops with it."""
    run = write_run(tmp_path / "run", "test:m", "airline", "direct", {"a": 1, "b": 2},
                    {"a": [1.0, 5.0], "b": [2.0, 2.0]})  # fmt: skip
    code = (
        "import sys\n"
        "sys.modules['pandas'] = None\n"
        "sys.modules['sklearn'] = None\n"
        "from deonticbench.errors import MissingExtraError, missing_extra\n"
        "from deonticbench.reliability import reliability_frame\n"
        "from deonticbench.reliability.signals import run_signals\n"
        "from deonticbench.store.run import read_run\n"
        f"(g,) = run_signals(read_run({str(run)!r}))\n"
        "assert g.signals['combined'] == str(missing_extra('the combined signal', "
        "'reliability')).rstrip('.'), g.signals['combined']\n"
        "try:\n"
        f"    reliability_frame([{str(run)!r}], bootstrap=10)\n"
        "except MissingExtraError as exc:\n"
        "    assert str(exc) == str(missing_extra('A data frame', 'reliability')), exc\n"
        "    print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
