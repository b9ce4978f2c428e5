"""The reward inside a real local Ray cluster (loopback, the machine's 2 CPUs), as verl
runs it: many Ray tasks score concurrently, each worker process with its own lazily
started sandbox pool; the results are exactly a local call's, and when the cluster
shuts down no sandbox process is left and nothing is left in /tmp."""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deonticbench.data.cases import load_cases, resolve_source
from deonticbench.data.domains import get_domain
from deonticbench.prompting import demonstration
from deonticbench.rewards import RewardTarget, score_batch
from deonticbench.rewards.core import RewardCache
from deonticbench.solver.pool import supervisor_command

pytestmark = pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)

ray = pytest.importorskip("ray")  # the 'train' extra, which dev includes
VERL_FILE = Path(__file__).resolve().parents[2] / "deonticbench" / "rewards" / "verl.py"
# A supervisor's command line ends with the code that loads this checkout's supervisor.
SUPERVISOR = supervisor_command()[-1]


def _table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) of every process."""
    table: dict[int, tuple[int, str, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        table[int(entry.name)] = (int(fields[1]), fields[0], cmdline)
    return table


def ray_sandboxes() -> set[int]:
    """Live sandbox processes of this checkout started by Ray's worker processes."""
    table = _table()
    found: set[int] = set()
    for pid, (_, state, cmdline) in table.items():
        if SUPERVISOR not in cmdline or state == "Z":
            continue
        ancestor = table.get(pid, (0, "", ""))[0]
        while ancestor in table:
            if "raylet" in table[ancestor][2] or "ray::" in table[ancestor][2]:
                found.add(pid)
                break
            ancestor = table[ancestor][0]
    return found


def alive(pids: set[int]) -> set[int]:
    table = _table()
    return {pid for pid in pids if pid in table and table[pid][1] != "Z"}


def tmp_entries(sandbox: str = "rlimits") -> set[str]:
    """What the reward's pools or Ray could leave in /tmp.  Ray's session is in a folder
    we give it.  A bubblewrap sandbox writes only to its own tmpfs, never to the host's
    /tmp; an rlimits sandbox makes a ``deonticbench-*`` folder there, removed when its
    worker stops.  (The uid lock folder is the machine-wide uid allocation that every
    pool shares, not a leftover.)"""
    prefixes = ("ray",) if sandbox == "bwrap" else ("ray", "deonticbench-")
    names = set(os.listdir(tempfile.gettempdir()))
    return {n for n in names if n.startswith(prefixes) and n != "deonticbench-uids"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, Any]]:
    before = tmp_entries()
    # Ray keeps its session (sockets, logs) in the temp dir it is given; ours is removed
    # below, so that the cluster leaves nothing behind.  Short: Ray's socket paths must
    # stay under 107 characters.
    session = tempfile.mkdtemp(prefix="dbr")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        _temp_dir=session,
        log_to_driver=False,
        configure_logging=False,
        runtime_env={"env_vars": {"DEONTICBENCH_REWARD_WORKERS": "1"}},
    )
    state: dict[str, Any] = {"before": before, "session": session}
    try:
        yield state
    finally:
        ray.shutdown()
        shutil.rmtree(session, ignore_errors=True)


@ray.remote
def verl_batch(rows: list[dict[str, Any]]) -> list[dict[str, float]]:
    # As verl does: load the reward file under its own module name, call the batch form.
    spec = importlib.util.spec_from_file_location("custom_module", VERL_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    scores: list[dict[str, float]] = module.compute_score_batch(
        data_sources=[r["data_source"] for r in rows],
        solution_strs=[r["solution_str"] for r in rows],
        ground_truths=[r["ground_truth"] for r in rows],
        extra_infos=[r["extra_info"] for r in rows],
    )
    return scores


@ray.remote
def worker_pid() -> int:
    return os.getpid()


@ray.remote
def worker_sandbox() -> str:
    from deonticbench.rewards.process_pool import process_solver

    return str(process_solver().sandbox)


def rows() -> list[dict[str, Any]]:
    source = resolve_source()
    out: list[dict[str, Any]] = []
    for name in ("airline", "sara_binary"):
        domain = get_domain(name)
        for case in load_cases(domain, "hard", source)[:6]:
            program = demonstration(domain, case)
            variants = [
                f"```prolog\n{program}\n```",  # the reference
                f"```prolog\n{program.replace('.', ',', 1)}\n```",  # broken: a syntax error
                "I would rather not write Prolog.",  # no program
            ]
            for text in variants:
                out.append(
                    {
                        "data_source": f"deonticbench/{name}",
                        "solution_str": text,
                        "ground_truth": str(case.gold),
                        "extra_info": {"case_id": case.id, "reference_signatures": []},
                    }
                )
    return out


@pytest.mark.slow
def test_ray_tasks_give_exactly_the_local_results(cluster: dict[str, Any]) -> None:
    batch = rows()
    chunks = [batch[i : i + 4] for i in range(0, len(batch), 4)]
    remote = [score for chunk in ray.get([verl_batch.remote(c) for c in chunks]) for score in chunk]
    targets = [
        RewardTarget.from_fields(
            r["data_source"], r["ground_truth"], r["extra_info"]["case_id"], []
        )
        for r in batch
    ]
    local = score_batch([r["solution_str"] for r in batch], targets, cache=RewardCache())
    assert [r["score"] for r in remote] == [r.reward for r in local]
    assert [r["executable"] for r in remote] == [float(r.executable) for r in local]
    assert sum(r["score"] == 1.0 for r in remote) >= 10  # the references mostly pass
    workers = set(ray.get([worker_pid.remote() for _ in range(8)]))
    assert os.getpid() not in workers


@pytest.mark.slow
def test_shutdown_leaves_no_sandbox_and_nothing_in_tmp(cluster: dict[str, Any]) -> None:
    ray.get(verl_batch.remote(rows()[:3]))
    sandbox = ray.get(worker_sandbox.remote())
    running = ray_sandboxes()
    assert running, "the Ray workers run their programs in sandbox supervisors"
    ray.shutdown()
    deadline = time.monotonic() + 20
    while alive(running) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(running), "sandbox processes outlived the Ray workers"
    shutil.rmtree(cluster["session"], ignore_errors=True)
    assert not Path(cluster["session"]).exists()
    assert tmp_entries(sandbox) <= cluster["before"], "the reward or Ray left files in /tmp"
