"""The bad-input sweep: every command of ``deonticbench --help`` fed a
missing path, a malformed file (truncated JSON/JSONL/YAML, an empty file) and an
out-of-range option, as a user would (a subprocess).  Each must answer with one line
saying what is wrong, exit non-zero, print no traceback, and leave nothing behind.

``COMMANDS`` is checked against ``deonticbench --help``: a new command without rows here
fails ``test_every_command_is_swept``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_runs import write_run

DATA = Path(os.environ.get("DEONTICBENCH_DATA") or "/work/shared/deonticbench-data")
pytestmark = pytest.mark.skipif(
    not (DATA / "data").is_dir(), reason="the shared data mirror is not available"
)

GOLD: dict[str, int | str] = {"c1": 100, "c2": 200}
ANSWERS = {"c1": [100.0, 100.0], "c2": [200.0, None]}

# (command, what is wrong, arguments, the words the one line must hold).  In the
# arguments, {w} is the work folder (fixtures below), {data} the real data mirror.
CASES: list[tuple[str, str, list[str], str]] = [
    ("eval", "missing path", ["--model", "reference", "--domains", "airline", "--split", "smoke",
     "--data-dir", "{w}/nowhere", "--out", "{w}/out"], "nowhere"),
    ("eval", "truncated JSON", ["--model", "reference", "--domains", "airline", "--split",
     "smoke", "--data-dir", "{w}/data_truncated", "--out", "{w}/out"], "not valid JSON"),
    ("eval", "empty file", ["--model", "replay:{w}/empty.jsonl", "--domains", "airline",
     "--split", "smoke", "--out", "{w}/out"], "holds no saved response"),
    ("eval", "truncated JSONL", ["--model", "replay:{w}/truncated.jsonl", "--domains",
     "airline", "--split", "smoke", "--out", "{w}/out"], "is not valid JSON"),
    ("eval", "out of range", ["--model", "reference", "--domains", "airline", "--split",
     "smoke", "-k", "0", "--out", "{w}/out"], "-k must be at least 1"),
    ("validate", "missing path", ["--domains", "airline", "--split", "smoke", "--data-dir",
     "{w}/nowhere"], "nowhere"),
    ("validate", "truncated JSON", ["--domains", "airline", "--split", "smoke", "--data-dir",
     "{w}/data_truncated"], "not valid JSON"),
    ("validate", "out of range", ["--domains", "airline", "--timeout", "0"], "--timeout"),
    ("score", "missing path", ["{w}/nowhere"], "nowhere"),
    ("score", "empty file", ["{w}/run_empty_records"], "run_empty_records"),
    ("score", "truncated YAML", ["{w}/run", "--costs", "{w}/truncated.yaml"], "truncated.yaml"),
    ("score", "out of range", ["{w}/run", "-B", "0"], "--bootstrap"),
    ("analyze", "missing path", ["{w}/nowhere"], "nowhere"),
    ("analyze", "truncated JSONL", ["{w}/run_truncated_records"], "line 2 is not a valid"),
    ("analyze", "empty file", ["{w}/run_empty_records"], "run_empty_records"),
    ("analyze", "out of range", ["{w}/run", "--workers", "0"], "--workers"),
    ("report", "missing path", ["{w}/nowhere", "--out", "{w}/out.html"], "nowhere"),
    ("report", "empty file", ["{w}/run_empty_records", "--out", "{w}/out.html"],
     "run_empty_records"),
    ("report", "out of range", ["{w}/run", "-B", "0", "--out", "{w}/out.html"], "--bootstrap"),
    ("export", "missing path", ["--format", "trl-sft", "--domains", "airline", "--split",
     "smoke", "--data-dir", "{w}/nowhere", "--out", "{w}/out"], "nowhere"),
    ("export", "truncated JSON", ["--format", "trl-sft", "--domains", "airline", "--split",
     "hard", "--allow-test", "--data-dir", "{w}/data_truncated", "--out", "{w}/out"],
     "not valid JSON"),
    ("export", "empty file", ["--format", "trl-dpo", "--domains", "airline", "--split",
     "hard", "--allow-test", "--rejected-from", "{w}/run_empty_records", "--out",
     "{w}/out"], "run_empty_records"),
    ("export", "out of range", ["--format", "trl-sft", "--domains", "airline", "--split",
     "hard", "--allow-test", "--limit", "0", "--out", "{w}/out"], "--limit"),
    ("cascade", "missing path", ["{w}/nowhere", "{w}/run"], "nowhere"),
    ("cascade", "empty file", ["{w}/run_empty_records", "{w}/run"], "run_empty_records"),
    ("cascade", "truncated YAML", ["{w}/run", "{w}/run", "--prices", "{w}/truncated.yaml"],
     "truncated.yaml"),
    ("cascade", "out of range", ["{w}/run", "--defer-to", "human", "--human-accuracy", "2"],
     "--human-accuracy"),
    ("perturb", "missing path", ["--domains", "airline", "--split", "smoke", "--data-dir",
     "{w}/nowhere", "--out", "{w}/out"], "nowhere"),
    ("perturb", "truncated JSON", ["--domains", "airline", "--split", "smoke", "--data-dir",
     "{w}/data_truncated", "--out", "{w}/out"], "not valid JSON"),
    ("perturb", "empty file", ["--domains", "airline", "--split", "smoke", "--data-dir",
     "{w}/data_empty", "--out", "{w}/out"], "holds no case"),
    ("perturb", "out of range", ["--domains", "airline", "--variants", "0", "--out", "{w}/out"],
     "--variants"),
    ("import-harbor", "missing path", ["{w}/nowhere", "--out", "{w}/out"], "nowhere"),
    ("import-harbor", "truncated JSON", ["{w}/jobs_truncated", "--out", "{w}/out"],
     "result.json"),
    ("import-harbor", "out of range", ["{w}/jobs_truncated", "--split", "train", "--out",
     "{w}/out"], "--split"),
    ("import-upstream", "missing path", ["{w}/nowhere", "--out", "{w}/out"], "nowhere"),
    ("import-upstream", "truncated JSON", ["{w}/upstream_truncated", "--out", "{w}/out"],
     "source.json"),
    ("import-upstream", "out of range", ["{w}/upstream_truncated", "--split", "train",
     "--out", "{w}/out"], "--split"),
    ("import-inspect", "missing path", ["{w}/nowhere.eval", "--out", "{w}/out"], "nowhere"),
    ("import-inspect", "truncated JSON", ["{w}/truncated.json", "--out", "{w}/out"],
     "truncated.json"),
    ("import-inspect", "empty file", ["{w}/empty.eval", "--out", "{w}/out"], "empty.eval"),
    ("serve-reward", "out of range", ["--port", "70000"], "--port"),
    ("serve-reward", "out of range", ["--timeout", "0"], "--timeout"),
    ("serve-reward", "unknown host", ["--host", "no-such-host.invalid", "--port", "8123"],
     "no-such-host.invalid"),
    ("exec", "missing path", ["{w}/nowhere.pl"], "nowhere.pl"),
    ("exec", "empty file", ["{w}/empty.pl", "--domain", "airline"], "empty.pl"),
    ("exec", "out of range", ["{w}/program.pl", "--timeout", "0"], "--timeout"),
    ("exec", "out of range", ["{w}/program.pl", "--domain", "nowhere"], "nowhere"),
    ("list", "missing path", ["DEONTICBENCH_DATA={w}/nowhere"], "nowhere"),
    ("list", "truncated JSON", ["DEONTICBENCH_DATA={w}/data_truncated"], "not valid JSON"),
    ("list", "out of range", ["unexpected"], "unexpected"),
    ("eval-set", "missing path", ["{w}/nowhere.yaml", "--out", "{w}/out"], "nowhere"),
    ("eval-set", "truncated YAML", ["{w}/truncated.yaml", "--out", "{w}/out"],
     "truncated.yaml"),
    ("eval-set", "empty file", ["{w}/empty.yaml", "--out", "{w}/out"], "empty.yaml"),
    ("eval-set", "out of range", ["{w}/empty.yaml", "--max-usd", "-1", "--out", "{w}/out"],
     "--max-usd"),
    ("batches", "missing path", ["{w}/nowhere"], "nowhere"),
    ("batches", "truncated JSON", ["{w}/run_truncated_config"], "config.json"),
    ("batches", "out of range", ["{w}/run", "--adopt", "no-equals-sign"], "--adopt"),
]  # fmt: skip
COMMANDS = sorted({c for c, _, _, _ in CASES})


def _help_commands() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "--help"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    listed = done.stdout.split("Commands:", 1)[1]
    return sorted(m.group(1) for m in re.finditer(r"^  (\S+)", listed, re.MULTILINE))


def test_every_command_is_swept() -> None:
    assert _help_commands() == COMMANDS


def _truncated(text: str) -> str:
    return text[: max(1, len(text) // 2)]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """Every bad input the sweep uses, and one good run folder."""
    w = tmp_path / "work"
    w.mkdir()
    write_run(w / "run", "test:m", "airline", "direct", GOLD, ANSWERS)
    for name in ("run_truncated_config", "run_empty_records", "run_truncated_records"):
        write_run(w / name, "test:m", "airline", "direct", GOLD, ANSWERS)
    config = (w / "run_truncated_config" / "config.json").read_text()
    (w / "run_truncated_config" / "config.json").write_text(_truncated(config))
    (w / "run_empty_records" / "records.jsonl").write_text("")
    # A line cut short in the middle of records.jsonl (a last one is a crash, cut on resume).
    records = (w / "run_truncated_records" / "records.jsonl").read_text().splitlines()
    records[1] = _truncated(records[1])
    (w / "run_truncated_records" / "records.jsonl").write_text("\n".join(records) + "\n")
    for name in ("run", "run_truncated_config"):
        (w / name / "batches.jsonl").write_text("")  # as eval --batch leaves it
    smoke = (DATA / "data" / "airline" / "smoke.json").read_text()
    for name, text in (("data_truncated", _truncated(smoke)), ("data_empty", "[]\n")):
        (w / name / "data" / "airline").mkdir(parents=True)
        for split in ("smoke", "hard"):
            (w / name / "data" / "airline" / f"{split}.json").write_text(text)
        (w / name / "statutes").symlink_to(DATA / "statutes")
    (w / "empty.jsonl").write_text("")
    (w / "empty.eval").write_bytes(b"")
    (w / "empty.pl").write_text("")
    (w / "empty.yaml").write_text("")
    (w / "program.pl").write_text(":- initialization(main).\nmain :- writeln('Answer: 1').\n")
    record = (w / "run" / "records.jsonl").read_text().splitlines()[0]
    (w / "truncated.jsonl").write_text(_truncated(record) + "\n")
    (w / "truncated.json").write_text(_truncated(json.dumps({"version": 2, "eval": {}})))
    (w / "truncated.yaml").write_text("airline:\n  abstain: [5,\n")
    upstream = w / "upstream_truncated" / "airline" / "direct" / "openai" / "m" / "source.json"
    upstream.parent.mkdir(parents=True)
    upstream.write_text(_truncated(json.dumps([{"id": "x", "answers": ["1"]}])))
    trial = w / "jobs_truncated" / "job" / "trial__1"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text('{"task_name": "deonticbench-zeroshot-airline-x", "tri')
    return w


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): b"" if p.is_dir() or p.is_symlink() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("command", "wrong", "args", "words"),
    CASES,
    ids=[f"{c}-{w.replace(' ', '_')}-{i}" for i, (c, w, _, _) in enumerate(CASES)],
)
def test_bad_input_is_one_sentence_a_nonzero_exit_and_nothing_left_behind(
    work: Path, tmp_path: Path, command: str, wrong: str, args: list[str], words: str
) -> None:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_DATA"] = str(DATA)
    env["DEONTICBENCH_CACHE"] = str(tmp_path / "cache")
    argv = []
    for arg in args:
        arg = arg.format(w=work, data=DATA)
        if arg.startswith("DEONTICBENCH_DATA="):
            env["DEONTICBENCH_DATA"] = arg.partition("=")[2]
        else:
            argv.append(arg)
    before = _tree(work)
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", command, *argv],
        capture_output=True, text=True, env=env, cwd=work, timeout=120, check=False,
    )  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode != 0, f"exit 0 on {wrong}: {done.stdout[-500:]}{done.stderr[-500:]}"
    assert "Traceback" not in done.stderr + done.stdout
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert words in lines[0], lines[0]
    assert _tree(work) == before, "the command left something behind"
