"""Run folders for the reliability tests: small hand-made ones (records written as a real
run folder, config.json + records.jsonl, so that every test goes through the store) and
planted ones made by a real ``deonticbench eval`` from replayed responses whose stated
confidence and correctness are drawn with a fixed seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from deonticbench.data.cases import load_cases
from deonticbench.data.domains import get_domain
from deonticbench.data.sources import resolve_source
from deonticbench.store.record import Attempt, Record

Answer = float | str | None
"""A sample's answer: a number, a label, or None for an abstention."""


def write_run(
    folder: Path,
    model: str,
    domain: str,
    mode: str,
    gold: dict[str, int | str],
    answers: dict[str, Sequence[Answer]],
    *,
    tokens: tuple[int, int] = (0, 0),
    cache_read: int = 0,
) -> Path:
    """One domain and mode; ``answers[case]`` lists the case's samples in order;
    ``cache_read`` of each attempt's input tokens were read from the provider's cache."""
    dom = get_domain(domain)
    folder.mkdir(parents=True, exist_ok=True)
    config = {"model": model, "split": "hard", "domains": [domain], "modes": [mode]}
    (folder / "config.json").write_text(json.dumps(config))
    lines = []
    for case_id, samples in answers.items():
        for index, answer in enumerate(samples):
            if answer is None:
                outcome = "abstain"
            elif dom.label_kind == "numeric":
                assert isinstance(answer, float | int)
                outcome = "correct" if abs(round(answer) - int(gold[case_id])) <= 1 else "wrong"
            else:
                outcome = "correct" if answer == gold[case_id] else "wrong"
            attempt = Attempt(
                0,
                "h",
                f"Answer: {answer}",
                answer=answer,
                outcome=outcome,  # type: ignore[arg-type]
                abstain_reason="no answer" if answer is None else None,
                tokens_in=tokens[0],
                tokens_out=tokens[1],
                cache_read_tokens=cache_read,
            )
            record = Record(domain, case_id, mode, index, gold[case_id], model, [attempt])  # type: ignore[arg-type]
            lines.append(json.dumps(record.to_json()))
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def cli(*args: str, data: str | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m deonticbench ARGS`` in a fresh process, output as text; with ``data``,
    reading the benchmark from that folder.  No API key reaches it (every run is
    offline)."""
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    if data is not None:
        env["DEONTICBENCH_DATA"] = data
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


Planted = Literal["calibrated", "miscalibrated", "noise"]


def planted_run(
    root: Path, data: str, name: Planted, *, seed: int, k: int, split: str = "whole"
) -> Path:
    """An airline run in the ``direct-verbal`` mode, K samples a case, made by ``eval``
    from replayed responses ``Answer: $X`` / ``Confidence: NN%``, drawn per sample:

    * calibrated: NN uniform in 5..95, right with probability NN %;
    * miscalibrated: NN uniform in 30..95, right with probability NN % - 0.2;
    * noise: NN uniform in 5..95, right with probability 0.6 whatever NN says.

    A wrong answer is the gold plus $50.  Returns the run folder (``root / name``)."""
    rng = np.random.default_rng(seed)
    cases = load_cases("airline", split, resolve_source(Path(data)))
    lines = []
    for case in cases:
        for sample in range(k):
            if name == "miscalibrated":
                stated = int(rng.integers(30, 96))
                p_right = stated / 100 - 0.2
            elif name == "noise":
                stated = int(rng.integers(5, 96))
                p_right = 0.6
            else:
                stated = int(rng.integers(5, 96))
                p_right = stated / 100
            right = rng.random() < p_right
            value = int(case.gold) if right else int(case.gold) + 50
            response = f"The fees add up.\nAnswer: ${value}\nConfidence: {stated}%"
            record = {"domain": "airline", "case_id": case.id, "mode": "direct-verbal",
                      "sample": sample, "response": response}  # fmt: skip
            lines.append(json.dumps(record))
    replay = root / f"{name}.jsonl"
    replay.write_text("\n".join(lines) + "\n")
    run = root / name
    done = cli(
        "eval", "--model", f"replay:{replay}", "--split", split, "--domains", "airline",
        "--modes", "direct-verbal", "-k", str(k), "--out", str(run), "--no-cache",
        data=data,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return run
