"""``deonticbench serve-reward``: a real uvicorn server on loopback, spoken to in
OpenRLHF's remote reward protocol (POST /get_reward with query, prompts, labels)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from deonticbench.data.cases import load_cases, resolve_source
from deonticbench.rewards import RewardTarget

pytestmark = pytest.mark.skipif(
    not os.environ.get("DEONTICBENCH_DATA"), reason="needs DEONTICBENCH_DATA (the data mirror)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def call(url: str, body: Any = None, timeout: float = 60) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        payload = error.read()
        try:
            return error.code, json.loads(payload)
        except json.JSONDecodeError:
            return error.code, payload.decode()


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (read from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        children = {child for child, parent in parents.items() if parent in frontier}
        frontier = children - found
        found |= children
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class Server:
    def __init__(self, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "deonticbench", "serve-reward", "--port", str(self.port)]
        self.proc = subprocess.Popen([*command, *args], stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                status, _ = call(self.url + "/health", timeout=2)
                if status == 200:
                    return
            except OSError:
                time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError(f"the server did not start: {self.proc.stderr.read()}")  # type: ignore[union-attr]

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server("--timeout", "10")
    try:
        yield running
    finally:
        if running.proc.poll() is None:
            running.stop()


@pytest.fixture(scope="module")
def cases() -> list[Any]:
    return load_cases("airline", "hard", resolve_source())[:3]


def label(case: Any) -> str:
    return RewardTarget.from_fields("airline", case.gold, case.id, []).to_label()


def test_health_and_rewards_in_openrlhf_shape(server: Server, cases: list[Any]) -> None:
    status, health = call(server.url + "/health")
    assert status == 200 and health["status"] == "ok" and health["mode"] == "paper"
    prompt = "<|user|>Compute the total cost.<|assistant|>"
    answers = [
        f'```prolog\n:- format("Total cost: {cases[0].gold}~n").\n```',
        f'```prolog\n:- format("Total cost: {int(cases[1].gold) + 1}~n").\n```',
        "No idea.",
    ]
    status, reply = call(
        server.url + "/get_reward",
        {
            "query": [prompt + a for a in answers],
            "prompts": [prompt] * 3,
            "labels": [label(c) for c in cases],
        },
    )
    assert status == 200
    assert reply["rewards"] == [1.0, 0.0, 0.0]
    assert reply["scores"] == reply["rewards"]
    assert reply["extra_logs"]["within_tolerance"] == [1.0, 1.0, 0.0]


def test_bad_requests_get_one_clear_sentence(server: Server) -> None:
    status, reply = call(server.url + "/get_reward", {"query": ["x"], "labels": []})
    assert status == 400 and "one label per query" in reply["error"]
    status, reply = call(server.url + "/get_reward", {"query": ["x"], "labels": ["nope"]})
    assert status == 400 and "not a JSON object" in reply["error"]
    status, reply = call(server.url + "/get_reward", {"query": ["x"], "labels": ['{"domain": 1}']})
    assert status == 400


def test_concurrent_requests_all_answered(server: Server, cases: list[Any]) -> None:
    results: list[Any] = [None] * 8

    def one(index: int) -> None:
        case = cases[index % len(cases)]
        value = int(case.gold) + (index % 2) * 5
        results[index] = call(
            server.url + "/get_reward",
            {
                "query": [f'```prolog\n:- format("Total cost: {value}~n").\n```'],
                "labels": [label(case)],
            },
        )

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert [r[0] for r in results] == [200] * 8
    assert [r[1]["rewards"][0] for r in results] == [1.0, 0.0] * 4


@pytest.mark.slow
def test_connections_beyond_the_limit_get_503_and_shutdown_is_graceful(
    cases: list[Any],
) -> None:
    server = Server("--timeout", "10", "--limit-concurrency", "2")
    try:
        case = cases[0]
        slow = f'```prolog\n:- sleep(2), format("Total cost: {case.gold}~n").\n```'
        answer: list[Any] = []
        request = threading.Thread(
            target=lambda: answer.append(
                call(server.url + "/get_reward", {"query": [slow], "labels": [label(case)]})
            )
        )
        request.start()
        time.sleep(0.7)  # the slow request is being scored
        status, _ = call(server.url + "/health")
        assert status == 503
        sandbox = descendants(server.proc.pid)
        assert sandbox, "the server runs its programs in sandbox processes below it"
        # SIGTERM while the slow request is in flight: it still gets its answer.
        exit_code = server.stop()
        request.join(60)
        assert answer and answer[0][0] == 200 and answer[0][1]["rewards"] == [1.0]
        # uvicorn finishes the requests in flight, then re-raises the signal it caught.
        assert exit_code in (0, -signal.SIGTERM)
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in sandbox) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in sandbox if alive(pid)], "sandbox processes outlived the server"
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
