"""Runs of ``deonticbench eval-set`` against the loopback fakes (``fakeproviders``), as a
user runs it: a set file written into a temporary folder, the command in a subprocess
with placeholder keys and an isolated response cache (``cost_runs.env_with``); and what
the tests compare: a run's records without their timings, and the requests a fake
answered, each as one hashable key.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import in_process
import yaml
from cost_runs import KEY, env_with
from fakeproviders import FakeProvider, FakeRequest

COMPATIBLE_KEY_ENV = "OPENAI_COMPATIBLE_API_KEY"


def urls_of(fake: FakeProvider) -> dict[str, str]:
    """Both providers' addresses at one fake (it keeps their prompt caches apart)."""
    return {"OPENAI_BASE_URL": fake.openai_url, "ANTHROPIC_BASE_URL": fake.url}


def set_env(home: Path, urls: Mapping[str, str]) -> dict[str, str]:
    """A user's environment pointed at ``urls``, with placeholder keys (the
    OpenAI-compatible server's too) and the response cache under ``home``."""
    return {**env_with(home, dict(urls)), COMPATIBLE_KEY_ENV: KEY}


def write_set(path: Path, runs: Sequence[Mapping[str, Any]], **defaults: Any) -> Path:
    """A set file: ``defaults`` (eval's option names, ``_`` for ``-``) and ``runs``."""
    doc: dict[str, Any] = {"runs": [dict(r) for r in runs]}
    if defaults:
        doc = {"defaults": {k.replace("_", "-"): v for k, v in defaults.items()}, **doc}
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def command(subcommand: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "deonticbench", subcommand, *args]


def run_cli(
    urls: Mapping[str, str], home: Path, subcommand: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """``deonticbench SUBCOMMAND ARGS`` against ``urls``, in this process (``in_process``:
    its start-up paid once per worker); ``start_eval_set`` runs one in a subprocess."""
    return in_process.run([subcommand, *args], env=set_env(home, urls), cwd=home)


def eval_set(
    urls: Mapping[str, str], home: Path, set_file: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    return run_cli(urls, home, "eval-set", str(set_file), *args)


def start_eval_set(
    urls: Mapping[str, str], home: Path, set_file: Path, *args: str
) -> subprocess.Popen[str]:
    """``eval-set`` started and left running, in a process group of its own (so that a
    kill reaches its Prolog workers too); its output goes to files under ``home``."""
    with (home / "started.stdout").open("w") as out, (home / "started.stderr").open("w") as err:
        return subprocess.Popen(
            command("eval-set", str(set_file), *args),
            env=set_env(home, urls),
            cwd=home,
            stdout=out,
            stderr=err,
            text=True,
            start_new_session=True,
        )


def json_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    doc = json.loads(done.stdout)
    assert isinstance(doc, dict)
    return doc


RECORD_FIELDS = (
    "domain", "case_id", "mode", "sample", "model", "gold", "answer", "outcome",
    "abstain_reason", "first_answer", "first_outcome", "n_attempts",
)  # fmt: skip
ATTEMPT_FIELDS = ("index", "prompt_hash", "response", "error", "program", "answer", "outcome")


def records_of(run: Path) -> list[dict[str, Any]]:
    """A run's records without what differs between two runs of the same requests
    (timings, cache figures, the port of a server in the model's spec), in a fixed
    order."""
    out = []
    for line in (run / "records.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        kept = {k: record.get(k) for k in RECORD_FIELDS}
        kept["model"] = str(kept["model"]).split("@", 1)[0]  # a server's address aside
        kept["attempts"] = [{k: a.get(k) for k in ATTEMPT_FIELDS} for a in record["attempts"]]
        out.append(kept)
    return sorted(out, key=lambda r: (r["domain"], r["case_id"], r["mode"], r["sample"]))


def request_key(request: FakeRequest) -> str:
    """One answered generation request: its endpoint and body, as one string."""
    return f"{request.api} {json.dumps(request.body, sort_keys=True)}"


def answered(fake: FakeProvider, since: int = 0) -> Counter[str]:
    """The generation requests ``fake`` billed (answered), from its ``since``-th logged
    request on, as a multiset of their keys."""
    return Counter(
        request_key(r) for r in fake.log[since:] if r.api in ("openai", "anthropic") and r.billed
    )


def scripted_answer(request: FakeRequest) -> str:
    """A deterministic reply that differs from case to case and from sample to sample
    (OpenAI's choices): a figure, or no answer at all one time in five."""
    seed = f"{request.last_user}|{request.choice}".encode()
    n = int(hashlib.sha256(seed).hexdigest()[:8], 16)
    if n % 5 == 0:
        return "I cannot tell from these facts."
    return f"Total cost: {n % 3000}\nTax result: {n % 3000}\nAnswer: {'Yes' if n % 2 else 'No'}"


def ledger_usd(folder: Path) -> float:
    path = folder / "spend.jsonl"
    if not path.is_file():
        return 0.0
    return sum(json.loads(line)["usd"] for line in path.read_text().splitlines() if line)


def kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL the process group ``start_eval_set`` started (this test's own)."""
    import signal

    with contextlib.suppress(ProcessLookupError):  # it may have ended already
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
