"""The hub source through the real ``datasets.load_dataset`` against a loopback hub.

``huggingface_hub`` reads ``HF_ENDPOINT`` and its cache folders when it is imported, so
each scenario runs in a fresh interpreter whose environment points at the loopback
``FakeHub`` (built from the mirror's files) and at temporary caches.  The child prints
the loaded cases and ``describe_source`` of the pinned source as JSON; the test compares
them with the local-folder cases in this process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from fakehub import FakeHub, FileHost, mirror_repo_files

from deonticbench.data.cases import load_cases
from deonticbench.data.domains import DOMAINS
from deonticbench.data.sources import DataSource

pytest.importorskip("datasets")

MIRROR = Path(os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data"))
REPO = "gydou/DeonticBench"

pytestmark = pytest.mark.skipif(
    not (MIRROR / "data").is_dir(), reason="the shared data mirror is not available"
)

CHILD = r"""
import json, sys
from dataclasses import asdict
from deonticbench.data.cases import describe_source, load_cases, pin_source
from deonticbench.errors import DataError
from deonticbench.data.sources import DataSource

revision, wanted = sys.argv[1], json.loads(sys.argv[2])
src = DataSource(kind="hub", revision=revision)
out = {"cases": {}, "error": None}
try:
    src = pin_source(src)  # a source is immutable: pinning returns the pinned copy
    for domain, split in wanted:
        out["cases"][f"{domain}/{split}"] = [asdict(c) for c in load_cases(domain, split, src)]
except DataError as exc:
    out["error"] = str(exc)
out["describe"] = describe_source(src)
out["pins"] = {k: v for k, v in (("commit", src.commit), ("offline", src.offline)) if v}
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def repo_files() -> dict[str, bytes]:
    return mirror_repo_files(MIRROR)


@pytest.fixture
def hub(repo_files: dict[str, bytes]) -> Iterator[FakeHub]:
    with FakeHub(REPO, repo_files).running() as served:
        yield served


@pytest.fixture
def statute_host() -> Iterator[FileHost]:
    with FileHost(MIRROR).running() as served:
        yield served


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_child(
    endpoint: str,
    statutes_url: str,
    tmp: Path,
    wanted: list[tuple[str, str]],
    revision: str = "main",
    **extra_env: str,
) -> dict[str, Any]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "HUGGING")) and k != "DEONTICBENCH_DATA"
    }
    env.update(
        HF_ENDPOINT=endpoint,
        HF_HOME=str(tmp / "hf"),
        HF_DATASETS_CACHE=str(tmp / "hf-datasets"),
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
        DEONTICBENCH_CACHE=str(tmp / "cache"),
        DEONTICBENCH_STATUTES_URL=statutes_url,
    )
    env.update(extra_env)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, revision, json.dumps(wanted)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def _local(domain: str, split: str) -> list[dict[str, Any]]:
    # Through JSON, as the child's cases came: tuples and dicts compare alike.
    cases = load_cases(domain, split, DataSource(kind="local", path=MIRROR))
    loaded: list[dict[str, Any]] = json.loads(json.dumps([asdict(c) for c in cases]))
    return loaded


@pytest.mark.slow
def test_hub_cases_equal_local_cases_and_commit_is_recorded(
    hub: FakeHub, statute_host: FileHost, tmp_path: Path
) -> None:
    wanted = [(name, "hard") for name in DOMAINS] + [("sara_numeric", "smoke")]
    wanted += [(name, "whole") for name in ("sara_numeric", "sara_binary", "airline", "uscis")]
    result = _run_child(hub.url, statute_host.url, tmp_path, wanted)

    assert result["error"] is None
    for domain, split in wanted:
        got = result["cases"][f"{domain}/{split}"]
        assert got == _local(domain, split), f"{domain}/{split} differs"
    assert result["describe"] == {
        "kind": "hub",
        "repo": REPO,
        "revision": "main",
        "commit": hub.sha,
        "endpoint": hub.url,
        "statutes": "guangyaodou/DeonticBench@2b4e4ea114295fdf7151d4122c5ebbd5a2bf277e",
    }
    # 'main' was resolved once; every file was then read at that exact commit.
    assert ("GET", f"/api/datasets/{REPO}/revision/main") in hub.log.requests
    resolves = [p for _, p in hub.log.requests if "/resolve/" in p]
    assert resolves and all(f"/resolve/{hub.sha}/" in p for p in resolves)
    assert hub.log.unhandled == []
    # The shared statutes were fetched once each (sara twice over would be 18).
    assert len(statute_host.paths_requested) == 10


@pytest.mark.slow
def test_hub_revision_given_as_sha_is_read_as_is(
    hub: FakeHub, statute_host: FileHost, tmp_path: Path
) -> None:
    result = _run_child(hub.url, statute_host.url, tmp_path, [("housing", "hard")], hub.sha)
    assert result["error"] is None
    assert result["cases"]["housing/hard"] == _local("housing", "hard")
    assert result["describe"]["commit"] == hub.sha
    assert statute_host.paths_requested == []  # housing carries its statutes per case


@pytest.mark.slow
def test_unknown_revision_is_one_sentence(
    hub: FakeHub, statute_host: FileHost, tmp_path: Path
) -> None:
    result = _run_child(hub.url, statute_host.url, tmp_path, [("airline", "hard")], "v9")
    assert result["error"] == (
        f"the hub dataset {REPO} has no revision 'v9' at {hub.url}/datasets/{REPO}."
    )
    assert "commit" not in result["describe"]


@pytest.mark.slow
def test_missing_split_on_the_hub_names_it(
    hub: FakeHub, statute_host: FileHost, tmp_path: Path
) -> None:
    # The loopback repo, like the offline mirror, has no housing whole split.
    result = _run_child(hub.url, statute_host.url, tmp_path, [("housing", "whole")])
    assert result["error"].startswith(
        f"hub dataset {REPO}@{hub.sha[:12]} config housing split whole cannot be loaded"
    )
    assert "whole" in result["error"]


@pytest.mark.slow
def test_unreachable_hub_names_the_url_and_suggests_data_dir(
    statute_host: FileHost, tmp_path: Path
) -> None:
    endpoint = f"http://127.0.0.1:{_free_port()}"
    result = _run_child(endpoint, statute_host.url, tmp_path, [("uscis", "hard")])
    assert result["error"].startswith(
        f"cannot reach the Hugging Face hub at {endpoint}/datasets/{REPO} ("
    )
    assert "--data-dir" in result["error"]


@pytest.mark.slow
def test_offline_after_one_online_load_reads_the_cache_at_the_same_commit(
    repo_files: dict[str, bytes], statute_host: FileHost, tmp_path: Path
) -> None:
    with FakeHub(REPO, repo_files).running() as hub:
        online = _run_child(hub.url, statute_host.url, tmp_path, [("airline", "hard")])
        assert online["error"] is None
        requests_online = len(hub.log.requests)

        # Offline by flag: no request reaches the hub or the statute host.
        flagged = _run_child(
            hub.url, statute_host.url, tmp_path, [("airline", "hard")], HF_HUB_OFFLINE="1"
        )
        assert flagged["error"] is None
        assert flagged["cases"]["airline/hard"] == _local("airline", "hard")
        assert flagged["describe"]["commit"] == hub.sha
        assert flagged["pins"]["offline"] == "datasets cache"
        assert "offline" not in online["pins"]
        # Whether the hub was reachable is not part of what the data is.
        assert flagged["describe"] == online["describe"]
        assert len(hub.log.requests) == requests_online
        assert len(statute_host.paths_requested) == 1

    # The same endpoint, now refusing connections (no flag): the sha remembered from
    # the online load is used and the rows come from the datasets cache.
    down = _run_child(hub.url, statute_host.url, tmp_path, [("airline", "hard")])
    assert down["error"] is None, down["error"]
    assert down["cases"]["airline/hard"] == _local("airline", "hard")
    assert down["describe"]["commit"] == hub.sha
    assert down["pins"]["offline"] == "datasets cache"


@pytest.mark.slow
def test_offline_without_an_earlier_load_is_one_sentence(
    statute_host: FileHost, tmp_path: Path
) -> None:
    result = _run_child(
        "http://127.0.0.1:9",
        statute_host.url,
        tmp_path,
        [("sara_binary", "hard")],
        HF_HUB_OFFLINE="1",
    )
    assert result["error"] == (
        "offline mode (HF_HUB_OFFLINE) is on, and revision 'main' of gydou/DeonticBench "
        "was never loaded on this machine; check the network or pass --data-dir with a "
        "local copy of the data."
    )
