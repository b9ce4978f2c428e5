"""Upstream's own generate_e2e.py, run as released, for tests to compare the paper protocol with.

The scripts live in the shared data mirror (never in this repository).  They are run
with this venv's python (which has their imports: openai, httpx, yaml, tqdm, tenacity),
in a subprocess, with one change: ``os.listdir`` lists a statute folder in sorted
file-name order.  Upstream joins statute files in directory-listing order, which differs
between filesystems; the paper protocol fixes sorted order, and so must the upstream run
it is compared with, or the two would differ by the filesystem alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import in_process

MIRROR = Path(os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data"))
GENERATE = MIRROR / "scripts" / "generate_e2e.py"
DATASET_DIRS = {
    "sara_numeric": "sara_numeric",
    "sara_binary": "sara_binary",
    "airline": "airline",
    "housing": "housing",
    "uscis": "uscis-aao",
}
"""Upstream's --dataset -> the mirror's data folder."""
STATUTE_DIRS = {"sara_numeric": "sara", "sara_binary": "sara", "airline": "airline"}
TASKS = {"direct": "direct", "zero-shot": "standalone", "few-shot": "prolog"}
"""Our mode -> upstream's --task."""
OUTPUTS = {"direct": "source.json", "standalone": "standalone_prolog.json", "prolog": "prolog.json"}
"""Upstream's --task -> the file its run writes under --output-path (a folder)."""
PAPER_K = {"sara_numeric": 4, "sara_binary": 4, "airline": 3, "housing": 3, "uscis": 4}

_SORTED_LISTDIR = """
import os
_listdir = os.listdir
def _listdir_sorted(path="."):
    names = _listdir(path)
    return sorted(names) if "statutes" in str(path) else names
os.listdir = _listdir_sorted
"""

_RUN_SCRIPT = (
    _SORTED_LISTDIR
    + """
import runpy, sys
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""
)

_RUN_IN_TURN = (
    _SORTED_LISTDIR
    + """
import json, runpy, sys
script = sys.argv[1]
for argv in json.loads(sys.argv[2]):
    sys.argv = [script, *argv]
    runpy.run_path(script, run_name="__main__")
"""
)

_PROMPTS = (
    _SORTED_LISTDIR
    + """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("generate_e2e", sys.argv[1])
g = importlib.util.module_from_spec(spec)
spec.loader.exec_module(g)  # its top level: imports and model_config.yaml, nothing sent
out = {}
for dataset, cases_path, statutes_path in json.loads(sys.argv[2]):
    cases = g.load_cases_from_json(cases_path, dataset)
    statutes = g.load_statutes(statutes_path) if statutes_path else ""
    out[dataset] = {"system": None, "cases": []}
    pool = g.load_airline_exemplar_pool(cases_path) if dataset == "airline" else None
    for case in cases:
        row = {"id": case["id"]}
        row["direct"] = {
            "housing": g.compose_prompt_source_legal_ir,
            "uscis": g.compose_prompt_source_uscis,
            "sara_binary": g.compose_prompt_source_binary,
        }.get(dataset, g.compose_prompt_source)(statutes if statutes_path else "", case)
        row["standalone"] = {
            "airline": g.compose_prompt_standalone_prolog_airline,
            "housing": g.compose_prompt_standalone_prolog_legal_ir,
            "uscis": g.compose_prompt_standalone_prolog_uscis,
            "sara_binary": g.compose_prompt_standalone_prolog_binary,
            "sara_numeric": g.compose_prompt_standalone_prolog_sara,
        }[dataset](statutes, case)
        if dataset == "airline":
            case = dict(case, exemplar=g.retrieve_airline_exemplar(pool, case["text"]))
            row["prolog"] = g.compose_prompt_prolog_airline(statutes, case)
        elif dataset == "housing":
            row["prolog"] = g.compose_prompt_prolog_legal_ir(
                statutes, case, exemplars=g.EXAMPLE_LEGAL_IR_ONE_SHOT)
        elif dataset == "uscis":
            row["prolog"] = g.compose_prompt_prolog_uscis(
                statutes, case, exemplars=g.EXAMPLE_USCIS_ONE_SHOT)
        elif dataset == "sara_binary":
            row["prolog"] = g.compose_prompt_prolog_binary(statutes, case)
        else:
            row["prolog"] = g.compose_prompt_prolog_sara(statutes, case)
        out[dataset]["cases"].append(row)
print(json.dumps(out))
"""
)


LOOPBACK_REPLY = "I cannot tell from the statutes given."
"""What a recording server answers every choice with: no program, so nothing runs and no
retry is asked for, and upstream and the harness get the same replies."""


def loopback_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a ``deonticbench`` subprocess: the mirror, a fresh cache, dummy
    keys (the server on loopback checks none) and ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env.update(
        DEONTICBENCH_DATA=str(MIRROR),
        DEONTICBENCH_CACHE=str(tmp_path / "cache"),
        OPENAI_API_KEY="dummy-key",
        OPENAI_COMPATIBLE_API_KEY="dummy-key",
        **extra,
    )
    return env


def run_eval(spec: str, split: str, out: Path, env: dict[str, str], *extra: str) -> str:
    """``deonticbench eval`` (first attempts only, no response cache), in this process
    (``in_process``: its start-up paid once per worker); its stdout."""
    command = ["eval", "--model", spec, "--split", split]
    command += ["--attempts", "1", "--no-cache", "--out", str(out), *extra]
    done = in_process.run(command, env=env, cwd=Path.cwd())
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def available() -> bool:
    return GENERATE.is_file()


def cases_path(dataset: str, split: str) -> Path:
    return MIRROR / "data" / DATASET_DIRS[dataset] / f"{split}.json"


def statutes_path(dataset: str) -> Path | None:
    folder = STATUTE_DIRS.get(dataset)
    return MIRROR / "statutes" / folder if folder else None


def composer_prompts(split: str, datasets: list[str]) -> dict[str, Any]:
    """Upstream's user prompts of every case of ``split``, per dataset and task, from its
    own module's composers (imported as released; its main is not run)."""
    jobs = [[d, str(cases_path(d, split)), str(statutes_path(d) or "")] for d in datasets]
    done = subprocess.run(
        [sys.executable, "-c", _PROMPTS, str(GENERATE), json.dumps(jobs)],
        capture_output=True,
        text=True,
        check=True,
        cwd=MIRROR,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def generate_args(
    *,
    dataset: str,
    task: str,
    split: str,
    model: str,
    base_url: str,
    k: int,
    output: Path,
    flags: Sequence[str] = (),
    cases: Path | None = None,
) -> list[str]:
    """The command line of one run of upstream's generate_e2e.py, its own ``flags`` added
    (``--reasoning-effort high``); ``cases``: a file of some of ``split``'s cases to run
    instead of all of them."""
    args = [
        "--cases-path",
        str(cases or cases_path(dataset, split)),
        "--dataset",
        dataset,
        "--task",
        task,
        "--model-name",
        model,
        "--api-base-url",
        base_url,
        "--api-key",
        "dummy-key",
        "--num-generations",
        str(k),
        "--output-path",
        str(output),
        "--split",
        split,
        *flags,
    ]
    statutes = statutes_path(dataset)
    if statutes is not None:
        args += ["--statutes-path", str(statutes)]
    return args


def _script_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HTTP"))}
    env["TQDM_DISABLE"] = "1"
    return env


def run_generate(
    *,
    dataset: str,
    task: str,
    split: str,
    model: str,
    base_url: str,
    k: int,
    output: Path,
    flags: Sequence[str] = (),
) -> subprocess.Popen[str]:
    """Start upstream's generate_e2e.py as released (only os.listdir sorted, see above),
    with its own ``flags`` added (``--reasoning-effort high``)."""
    args = generate_args(
        dataset=dataset,
        task=task,
        split=split,
        model=model,
        base_url=base_url,
        k=k,
        output=output,
        flags=flags,
    )
    return subprocess.Popen(
        [sys.executable, "-c", _RUN_SCRIPT, str(GENERATE), *args],
        cwd=MIRROR,
        env=_script_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_generate_in_turn(runs: Sequence[Sequence[str]], timeout_s: float = 300) -> None:
    """Upstream's generate_e2e.py run as released (as ``run_generate`` runs it) once per
    command line of ``runs`` (``generate_args``), one after another in one interpreter:
    each run is the script's own ``__main__``, and the start-up is paid once."""
    done = subprocess.run(
        [sys.executable, "-c", _RUN_IN_TURN, str(GENERATE), json.dumps([list(r) for r in runs])],
        cwd=MIRROR,
        env=_script_env(),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert done.returncode == 0, done.stderr[-3000:]
