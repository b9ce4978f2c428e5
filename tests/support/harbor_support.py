"""Harbor for the tests: its own ``harbor run`` (the 3.12 venv's console script) on our
exported tasks with ``BwrapEnvironment``, a scripted terminus-2 model on loopback, and a
jobs folder shaped like DAR's, built file by file as Harbor 0.26 writes one.

Harbor needs Python 3.12+: without it these tests skip, except under ``CI=true``, where
a missing Harbor is a failure (the project venv of CI is 3.12 with the harbor extra).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
BWRAP_ENV = "deonticbench.integrations.harbor:BwrapEnvironment"


def require_harbor() -> Path:
    """The ``harbor`` command of this interpreter's venv (skip, or fail under CI)."""
    try:
        import harbor  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs the Harbor tests: install the harbor extra (Python 3.12+).")
        pytest.skip("Harbor needs Python 3.12+ and the harbor extra")
    command = Path(sys.executable).parent / "harbor"
    if not command.exists():
        pytest.fail(f"the harbor extra is installed but {command} is missing")
    return command


def harbor_env(planted: dict[str, str] | None = None) -> dict[str, str]:
    """The environment ``harbor run`` gets: our package importable, LiteLLM offline, and
    ``planted`` variables (secrets no trial may see) set last."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["HARBOR_TELEMETRY"] = "0"  # Harbor would post usage events (and wait ~20 s for it)
    env["OPENAI_API_KEY"] = "loopback-only"
    env.pop("OPENAI_BASE_URL", None)
    env.update(planted or {})
    return env


def harbor_run(
    tasks: Path,
    jobs: Path,
    job_name: str,
    agent: str,
    *extra: str,
    timeout: float = 300,
    planted: dict[str, str] | None = None,
) -> Path:
    """``harbor run`` on ``tasks`` with BwrapEnvironment (``planted``: variables added to
    its environment); returns the job folder."""
    command = require_harbor()
    argv = [
        str(command), "run", "-p", str(tasks), "-a", agent, "-e", BWRAP_ENV,
        "-o", str(jobs), "--job-name", job_name, "-n", "2", "-y", "-q", *extra,
    ]  # fmt: skip
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=harbor_env(planted),
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return jobs / job_name


# --- a scripted terminus-2 ----------------------------------------------------------------


def terminus_reply(analysis: str, commands: list[str], complete: bool) -> str:
    """One terminus-2 turn in its JSON response format."""
    return json.dumps(
        {
            "analysis": analysis,
            "plan": analysis,
            "commands": [{"keystrokes": k, "duration": 0.3} for k in commands],
            "task_complete": complete,
        }
    )


def write_file_keystrokes(path: str, text: str) -> str:
    encoded = base64.b64encode(text.encode()).decode()
    return f"echo {encoded} | base64 -d > {path}\n"


def terminus_script(programs: dict[str, str | None]) -> Callable[[Any], str]:
    """A responder for ``FakeProvider``: for the task whose instruction names a domain
    (display name -> program, None = leave nothing), look at the case, write the program
    to /app/solution.pl and run it, then mark the task complete (twice, as terminus-2
    asks to confirm)."""

    def respond(request: Any) -> str:
        messages = request.body.get("messages", [])
        first = str(messages[0].get("content", "")) if messages else ""
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        program = next((p for name, p in programs.items() if f"of the {name} task" in first), None)
        if turn == 0:
            return terminus_reply("read the case", ["cat /app/case.txt\n"], False)
        if turn == 1 and program is not None:
            keys = [write_file_keystrokes("/app/solution.pl", program), "swipl /app/solution.pl\n"]
            return terminus_reply("write and run the program", keys, False)
        return terminus_reply("done", [], True)

    return respond


# --- a jobs folder shaped like DAR's ----------------------------------------------------


def dar_trial(
    job: Path,
    task_name: str,
    *,
    expected: str | None,
    got: str | None,
    exception: str | None = None,
    started: str = "2026-11-01T10:00:00.000000Z",
    tokens: tuple[int, int] = (1000, 200),
    suffix: str = "AbC1234",
    raw_stdout: str | None = None,
) -> Path:
    """One trial as Harbor writes it for a DAR task: ``result.json`` (task name in full,
    the folder's truncated to 32 characters), ``config.json``, and the verifier's stdout
    as DAR's test.sh prints it (None: the verifier wrote nothing, as when their script
    stops at a missing Answer: line or the trial failed before it ran); ``raw_stdout``
    is written as the verifier's stdout verbatim."""
    folder = job / f"{task_name[:32]}__{suffix}"
    (folder / "agent").mkdir(parents=True)
    config = {"agent": {"name": "terminus-2", "model_name": "openai/dar-model"}}
    result = {
        "id": suffix,
        "task_name": task_name,
        "trial_name": folder.name,
        "config": config,
        "agent_info": {"name": "terminus-2", "version": "2.0.0"},
        "agent_result": {
            "n_input_tokens": tokens[0],
            "n_output_tokens": tokens[1],
            "cost_usd": 0.01,
            "metadata": {"n_episodes": 3},
        },
        "verifier_result": None if got is None else {"rewards": {"reward": 0.0}},
        "exception_info": None
        if exception is None
        else {"exception_type": exception, "exception_message": f"{exception} raised"},
        "started_at": started,
        "finished_at": started.replace("10:00:00", "10:05:00"),
        "agent_execution": {
            "started_at": started,
            "finished_at": started.replace("10:00:00", "10:04:00"),
        },
    }
    (folder / "result.json").write_text(json.dumps(result), encoding="utf-8")
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if raw_stdout is not None:
        (folder / "verifier").mkdir()
        (folder / "verifier" / "test-stdout.txt").write_text(raw_stdout)
    elif expected is not None:
        (folder / "verifier").mkdir()
        lines = []
        if got is not None:
            norm = got.split(".")[0] if expected.lstrip("-").isdigit() else got.lower()
            exp = expected if expected.lstrip("-").isdigit() else expected.lower()
            lines = [
                f"Expected: {expected}",
                f"Got:      {got}",
                f"Normalized expected: {exp}",
                f"Normalized got:      {norm}",
            ]
        (folder / "verifier" / "test-stdout.txt").write_text("\n".join(lines) + "\n")
    return folder
