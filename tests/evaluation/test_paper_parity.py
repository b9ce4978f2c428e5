"""``--protocol paper`` sends what upstream's own generate_e2e.py sends: request for request.

Upstream's script, run as released (tests/support/upstream_scripts.py), and
``deonticbench eval`` each talk to a loopback server speaking OpenAI's chat-completions
wire format that records every request and answers every choice with the same plain
reply (no program, so nothing runs and no retry is asked for).  Every request upstream
sends must have a byte-identical twin among ours: the messages and every sampling field
(model, n, temperature, top_p, max_tokens, max_completion_tokens, reasoning_effort,
seed, stop, logprobs).  Fields that do not change what is sampled (``prompt_cache_key``)
are not compared.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import upstream_scripts
from fakeproviders import FakeProvider, FakeRequest

pytestmark = pytest.mark.skipif(
    not upstream_scripts.available(), reason="upstream's scripts are not in the data mirror"
)
COMPARED = (
    "model",
    "n",
    "temperature",
    "top_p",
    "max_tokens",
    "max_completion_tokens",
    "reasoning_effort",
    "seed",
    "stop",
    "logprobs",
)


def _reply(request: FakeRequest) -> str:
    return upstream_scripts.LOOPBACK_REPLY


def _twin_key(request: FakeRequest) -> str:
    body = request.body
    wanted: dict[str, Any] = {k: body[k] for k in COMPARED if k in body}
    wanted["messages"] = body.get("messages")
    return json.dumps(wanted, sort_keys=True, ensure_ascii=False)


def _run_upstream(model: str, url: str, split: str, out: Path, flags: Sequence[str] = ()) -> None:
    """Upstream's script once per dataset and task, as released, one run after another in
    one interpreter (``run_generate_in_turn``): its start-up (openai, httpx and the rest)
    is paid once instead of fifteen times, which was most of the time these tests took."""
    upstream_scripts.run_generate_in_turn(
        [
            upstream_scripts.generate_args(
                dataset=dataset,
                task=task,
                split=split,
                model=model,
                base_url=url,
                k=upstream_scripts.PAPER_K[dataset],
                output=out / dataset / task,
                flags=flags,
            )
            for dataset in upstream_scripts.DATASET_DIRS
            for task in upstream_scripts.TASKS.values()
        ],
        timeout_s=600,
    )


def _parity(
    spec: str,
    upstream_model: str,
    split: str,
    tmp_path: Path,
    *,
    compatible: bool,
    flags: Sequence[str] = (),
    params: Sequence[str] = (),
) -> tuple[int, int, dict[str, Any]]:
    """(upstream's requests with a twin among ours, upstream's requests, the dry run's
    estimate made before ours were sent); upstream run with ``flags``, ours with the
    ``--param`` ``params`` that stand for them."""
    ours_params = [arg for param in params for arg in ("--param", param)]
    with (
        FakeProvider(_reply) as theirs_server,
        FakeProvider(_reply) as ours_server,
        ThreadPoolExecutor(1) as beside,
    ):
        # Upstream's runs and ours talk to servers of their own: they run at once.
        upstream = beside.submit(
            _run_upstream,
            upstream_model,
            theirs_server.openai_url,
            split,
            tmp_path / "upstream",
            flags,
        )
        if compatible:
            spec = f"{spec}@{ours_server.openai_url}"
            env = upstream_scripts.loopback_env(tmp_path)
        else:
            env = upstream_scripts.loopback_env(tmp_path, OPENAI_BASE_URL=ours_server.openai_url)
        out = tmp_path / "run"
        dry = upstream_scripts.run_eval(
            spec, split, out, env, "--protocol", "paper", "--dry-run", "--json", *ours_params
        )
        assert not ours_server.generation_requests()
        upstream_scripts.run_eval(spec, split, out, env, "--protocol", "paper", *ours_params)
        upstream.result()
        theirs = Counter(_twin_key(r) for r in theirs_server.generation_requests())
        ours = Counter(_twin_key(r) for r in ours_server.generation_requests())
    missing = theirs - ours
    twins = sum(theirs.values()) - sum(missing.values())
    example = next(iter(missing), "")[:600]
    assert not missing, f"{sum(missing.values())} upstream requests have no twin, e.g. {example}"
    assert sum(ours.values()) == sum(theirs.values())
    estimate: dict[str, Any] = json.loads(dry)
    # The dry run counts what was then sent (tests/evaluation/test_paper_dry_run.py: tokens).
    assert estimate["calls"] == sum(ours.values())
    return twins, sum(theirs.values()), estimate


@pytest.mark.slow
def test_gpt_4_1_on_the_hard_split_every_upstream_request_has_a_twin(tmp_path: Path) -> None:
    twins, total, _ = _parity("openai:gpt-4.1", "gpt-4.1", "hard", tmp_path, compatible=False)
    assert total == 753 and twins == 753


@pytest.mark.slow
def test_a_reasoning_model_of_upstreams_list_on_the_smoke_split(tmp_path: Path) -> None:
    twins, total, _ = _parity(
        "openai:o3-2025-04-16", "o3-2025-04-16", "smoke", tmp_path, compatible=False
    )
    assert total == 75 and twins == 75


@pytest.mark.slow
def test_a_model_params_entry_on_an_openai_compatible_server(tmp_path: Path) -> None:
    twins, total, _ = _parity(
        "openai-compatible:moonshotai/Kimi-K2-Thinking",
        "moonshotai/Kimi-K2-Thinking",
        "smoke",
        tmp_path,
        compatible=True,
    )
    assert total == 75 and twins == 75


def test_an_unknown_protocol_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "deonticbench",
            "eval",
            "--model",
            "reference",
            "--protocol",
            "papr",
            "--split",
            "smoke",
            "--out",
            str(tmp_path / "run"),
        ],
        env=upstream_scripts.loopback_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    said = done.stderr.strip()
    assert said.startswith("error: Invalid value for '--protocol': 'papr' is not one of 'paper', ")
    assert len(said.splitlines()) == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_upstreams_flags_given_by_param_are_sent_recorded_and_marked(tmp_path: Path) -> None:
    """``--param reasoning_effort=high`` is upstream's ``--reasoning-effort high``: every
    request has a twin among upstream's run with that flag, config.json records the
    departure, and the score table marks every paper-protocol figure with it."""
    twins, total, _ = _parity(
        "openai:o3-2025-04-16",
        "o3-2025-04-16",
        "smoke",
        tmp_path,
        compatible=False,
        flags=("--reasoning-effort", "high"),
        params=("reasoning_effort=high",),
    )
    assert total == 75 and twins == 75
    config = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))
    paper = config["model"]["identity"]["paper_sampling"]
    assert paper["fields"]["reasoning_effort"] == "high"
    assert paper["departures"] == {"reasoning_effort": "high"}
    table = subprocess.run(
        [sys.executable, "-m", "deonticbench", "score", str(tmp_path / "run"), "-B", "20"],
        env=upstream_scripts.loopback_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert table.returncode == 0, table.stderr
    figures = [line for line in table.stdout.splitlines() if "%" in line or "±" in line]
    said = " ".join((table.stdout + table.stderr).split())  # notes: wrapped, on stderr
    assert "‡ paper-protocol first attempts sampled with reasoning_effort=high" in said
    assert figures and all("‡" in line for line in figures if "few-shot" in line)


def _eval_refused(tmp_path: Path, *args: str) -> str:
    """``deonticbench eval`` under the paper protocol that must refuse before any request:
    its one sentence (the server saw nothing, no run folder was made)."""
    with FakeProvider(_reply) as server:
        env = upstream_scripts.loopback_env(tmp_path, OPENAI_BASE_URL=server.openai_url)
        done = subprocess.run(
            [sys.executable, "-m", "deonticbench", "eval", "--split", "smoke", "--limit", "1",
             "--protocol", "paper", "--out", str(tmp_path / "run"), *args],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert not server.generation_requests()
    assert done.returncode != 0 and not (tmp_path / "run").exists()
    said = done.stderr.strip()
    assert len(said.splitlines()) == 1, said
    return said


def test_a_parameter_the_paper_protocol_fixes_is_refused_not_dropped(tmp_path: Path) -> None:
    said = _eval_refused(tmp_path, "--model", "openai:gpt-4.1", "--param", "top_p=0.5")
    assert "--param top_p: the paper protocol sends upstream's own sampling fields" in said
    assert "--temperature" in said and "--reasoning-effort" in said


def test_an_upstream_flag_upstream_would_not_send_is_refused(tmp_path: Path) -> None:
    """gpt-4.1 is no reasoning model of upstream's list: its script would not send
    ``--reasoning-effort`` for it, so neither does the paper protocol."""
    said = _eval_refused(tmp_path, "--model", "openai:gpt-4.1", "--param", "reasoning_effort=high")
    assert said.startswith("error: --param reasoning_effort: upstream's script sends")
