"""BwrapEnvironment benchmark: what one Harbor trial pays for its environment.

Measured side by side in one run, interleaved so machine noise hits all alike:

* ``BwrapEnvironment``: ``start`` (a fresh root folder, the workspace copied from an
  exported task, the sandbox and its command server booted), one ``exec`` of ``true``,
  ``stop`` (the sandbox killed, the folder removed);
* a bare ``bwrap ... true``: the floor of any bubblewrap sandbox on this machine;
* a warm ``exec``: one more command in a running environment (what each agent command
  and each verifier step costs).

Harbor's docs give no figure for a container start; they name container start-up and
teardown as what makes containerised rollouts slow.  Needs the harbor extra (3.12+).
Usage: python benchmarks/harbor_env.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _task(folder: Path) -> Path:
    from deonticbench.data.cases import load_cases, resolve_source
    from deonticbench.data.domains import get_domain
    from deonticbench.integrations.harbor.tasks import write_task

    domain = get_domain("airline")
    case = load_cases(domain, "hard", resolve_source(None))[0]
    task = folder / "task"
    write_task(task, domain, case, "agent-zero-shot", "hard", {})
    return task


def _environment(task: Path, trial: Path) -> Any:
    from harbor.models.task.task import Task
    from harbor.models.trial.paths import TrialPaths

    from deonticbench.integrations.harbor import BwrapEnvironment

    loaded = Task(task)
    return BwrapEnvironment(
        environment_dir=task / "environment",
        environment_name=loaded.name,
        session_id="bench__env",
        trial_paths=TrialPaths(trial),
        task_env_config=loaded.config.environment,
    )


async def _lifecycle(task: Path, trial: Path) -> tuple[float, float]:
    env = _environment(task, trial)
    started = time.perf_counter()
    await env.start(force_build=False)
    result = await env.exec("true")
    assert result.return_code == 0
    await env.stop(delete=True)
    whole = time.perf_counter() - started
    env = _environment(task, trial)
    await env.start(force_build=False)
    warm = time.perf_counter()
    await env.exec("true")
    warm = time.perf_counter() - warm
    await env.stop(delete=True)
    return whole, warm


def _bare_bwrap() -> float:
    started = time.perf_counter()
    subprocess.run(
        ["bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "true"], check=True
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        task = _task(Path(tmp))
        lifecycles, warms, bare = [], [], []
        for round_ in range(args.rounds):
            whole, warm = asyncio.run(_lifecycle(task, Path(tmp) / f"trial{round_}"))
            lifecycles.append(whole)
            warms.append(warm)
            bare.append(_bare_bwrap())
    floor = statistics.median(bare)
    print(f"rounds: {args.rounds}")
    for name, values in (
        ("BwrapEnvironment start + exec + stop", lifecycles),
        ("warm exec in a running environment", warms),
        ("bare bwrap true", bare),
    ):
        median = statistics.median(values)
        print(f"{name:40s} median {1000 * median:7.1f} ms  ({median / floor:4.1f} x bare bwrap)")


if __name__ == "__main__":
    main()
