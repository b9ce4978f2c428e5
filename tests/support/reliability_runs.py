"""Small hand-made run folders for the reliability tests: records written as a real run
folder (config.json + records.jsonl) so that every test goes through the store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from deonticbench.data.domains import get_domain
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
) -> Path:
    """One domain and mode; ``answers[case]`` lists the case's samples in order."""
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
            )
            record = Record(domain, case_id, mode, index, gold[case_id], model, [attempt])  # type: ignore[arg-type]
            lines.append(json.dumps(record.to_json()))
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m deonticbench ARGS`` in a fresh process, output as text."""
    return subprocess.run(
        [sys.executable, "-m", "deonticbench", *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        check=False,
    )
