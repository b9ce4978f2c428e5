"""Synthetic run folders for the scoring, report and convenience tests: deterministic
records over every domain and mode at the default K, with abstentions, wrong answers and
(optionally) retries, written as a real run folder."""

from __future__ import annotations

import json
from pathlib import Path

from deonticbench.data.domains import DOMAINS
from deonticbench.store.record import Attempt, Record
from deonticbench.vocabulary.modes import MODES


def synthetic_records(model: str, shift: int, retries: bool) -> list[Record]:
    """Deterministic records: every domain and mode, default K, some abstentions."""
    out = []
    for d_index, dom in enumerate(DOMAINS.values()):
        for i in range(8):
            gold = (i * 37 + d_index) % 900 if dom.label_kind == "numeric" else dom.classes[i % 2]
            for m_index, mode in enumerate(MODES):
                for s in range(dom.default_k):
                    roll = (i * 7 + s * 3 + m_index + shift) % 5
                    attempts = []
                    if roll == 0:
                        attempts.append(
                            Attempt(
                                0,
                                "h",
                                "r",
                                answer=None,
                                outcome="abstain",
                                abstain_reason="timeout",
                            )
                        )
                    elif dom.label_kind == "numeric":
                        answer = float(gold + (0 if roll < 3 else 40))
                        outcome = "correct" if roll < 3 else "wrong"
                        attempts.append(Attempt(0, "h", "r", answer=answer, outcome=outcome))
                    else:
                        answer = gold if roll < 3 else dom.classes[(i + 1) % 2]
                        outcome = "correct" if roll < 3 else "wrong"
                        attempts.append(Attempt(0, "h", "r", answer=answer, outcome=outcome))
                    if retries and roll == 0:
                        ok = gold if dom.label_kind == "binary" else float(gold)
                        attempts.append(Attempt(1, "h2", "r2", answer=ok, outcome="correct"))
                    out.append(Record(dom.name, f"{dom.name}-{i}", mode, s, gold, model, attempts))
    return out


def write_synthetic_run(
    folder: Path, model: str, shift: int = 0, retries: bool = False, extra: str = ""
) -> Path:
    folder.mkdir(parents=True)
    config = {"model": model, "split": "hard", "domains": list(DOMAINS), "modes": list(MODES)}
    (folder / "config.json").write_text(json.dumps(config))
    lines = [json.dumps(r.to_json()) for r in synthetic_records(model, shift, retries)]
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n" + extra)
    return folder
