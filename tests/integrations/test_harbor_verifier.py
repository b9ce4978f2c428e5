"""The verifier every exported task ships (``tests/verifier.pyz``), run as a task runs
it: the system's bare ``python3 -I`` on the zip, nothing of the harness installed.  It
judges by the paper's rules and always writes reward.json."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from deonticbench.integrations.harbor._bundle import verifier_zip

PYTHON = shutil.which("python3", path="/usr/bin:/bin")
pytestmark = pytest.mark.skipif(
    PYTHON is None or shutil.which("swipl") is None, reason="needs /usr/bin/python3 and swipl"
)


def _verify(
    tmp_path: Path, case: dict[str, object], files: dict[str, str]
) -> tuple[dict, dict, str]:
    tests, app, logs = tmp_path / "tests", tmp_path / "app", tmp_path / "logs"
    for folder in (tests, app / "output"):
        folder.mkdir(parents=True, exist_ok=True)
    (tests / "verifier.pyz").write_bytes(verifier_zip())
    (tests / "case.json").write_text(json.dumps(case))
    for name, text in files.items():
        (app / name).write_text(text)
    assert PYTHON is not None
    done = subprocess.run(
        [PYTHON, "-I", str(tests / "verifier.pyz"), str(tests), str(app), str(logs)],
        capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    reward = json.loads((logs / "reward.json").read_text())
    assert all(isinstance(v, (int, float)) for v in reward.values())  # Harbor's rule
    return reward, json.loads((logs / "verdict.json").read_text()), done.stdout


AIRLINE = {"domain": "airline", "case_id": "c", "mode": "agent-zero-shot", "gold": 1166}


def test_program_within_a_dollar_is_correct_and_dar_would_not_be(tmp_path: Path) -> None:
    program = ":- initialization(main).\nmain :- format('Total cost: $1,167.40~n').\n"
    reward, verdict, stdout = _verify(tmp_path, AIRLINE, {"solution.pl": program})
    # Only 0/1 rewards that Harbor may average: the answer is in verdict.json.
    assert reward == {"reward": 1.0, "correct": 1.0, "wrong": 0.0, "abstain": 0.0}
    assert verdict["answer"] == 1167.4
    assert verdict["outcome"] == "correct" and verdict["execution"]["status"] == "ok"
    assert "Normalized expected: 1166" in stdout and "Normalized got:      $1,167" in stdout


def test_direct_answer_with_dollar_and_comma(tmp_path: Path) -> None:
    case = {**AIRLINE, "mode": "agent-direct"}
    reward, verdict, _ = _verify(tmp_path, case, {"output/answer.txt": "Answer: $1,166\n"})
    assert reward["reward"] == 1.0 and verdict["answer"] == 1166.0


def test_no_program_is_an_abstention_with_a_reward_file(tmp_path: Path) -> None:
    reward, verdict, stdout = _verify(tmp_path, AIRLINE, {})
    assert reward == {"reward": 0.0, "correct": 0.0, "wrong": 0.0, "abstain": 1.0}
    assert verdict["outcome"] == "abstain" and "solution.pl" in verdict["abstain_reason"]
    assert "Normalized got:" in stdout


def test_binary_label_and_broken_program(tmp_path: Path) -> None:
    case = {"domain": "uscis", "case_id": "u", "mode": "agent-few-shot", "gold": "Accepted"}
    program = ":- initialization(main).\nmain :- format('accepted~n').\n"
    reward, verdict, _ = _verify(tmp_path, case, {"solution.pl": program})
    assert reward["reward"] == 1.0 and verdict["answer"] == "Accepted"
    reward, verdict, _ = _verify(tmp_path / "2", case, {"solution.pl": "main :- oops(\n"})
    assert verdict["outcome"] == "abstain" and reward["abstain"] == 1.0
