"""Shared statutes: pinned download over real HTTP on loopback, checksums, cache, errors."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
from pathlib import Path

import pytest
from fakehub import FileHost

from deonticbench.data import statutes
from deonticbench.data.cases import describe_source
from deonticbench.data.domains import AIRLINE, DOMAINS, SARA_BINARY, SARA_NUMERIC
from deonticbench.data.sources import DataSource
from deonticbench.errors import DataError

MIRROR = Path(os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data"))
PINNED = "guangyaodou/DeonticBench@2b4e4ea114295fdf7151d4122c5ebbd5a2bf277e"
SARA_ORDER = [
    "section1",
    "section2",
    "section63",
    "section68",
    "section151",
    "section152",
    "section3301",
    "section3306",
    "section7703",
]

pytestmark = pytest.mark.skipif(
    not (MIRROR / "statutes").is_dir(), reason="the shared data mirror is not available"
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(statutes.CACHE_ENV, str(root))
    return root


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    with FileHost(MIRROR).running() as served:
        monkeypatch.setenv(statutes.STATUTES_URL_ENV, served.url)
        yield served


def _mirror_text(folder: str, names: list[str]) -> str:
    return "\n\n\n\n".join(
        (MIRROR / "statutes" / folder / n).read_text(encoding="utf-8") for n in names
    )


def _free_port() -> int:
    # Bind then close: nothing listens there afterwards, so connecting is refused.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_manifest_pins_the_mirror_files() -> None:
    manifest = statutes.load_manifest()
    on_disk = {
        str(p.relative_to(MIRROR)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in (MIRROR / "statutes").rglob("*")
        if p.is_file()
    }
    assert dict(manifest.statute_files) == on_disk
    assert manifest.statutes_commit == "2b4e4ea114295fdf7151d4122c5ebbd5a2bf277e"
    # The manifest and the code agree on the hub dataset and its configs.
    default = DataSource(kind="hub")
    assert (manifest.hub_repo, manifest.hub_revision) == (default.repo, default.revision)
    assert dict(manifest.hub_configs) == {d.hub_config: ("hard", "whole") for d in DOMAINS.values()}
    assert manifest.default_base_url().endswith(
        "/guangyaodou/DeonticBench/2b4e4ea114295fdf7151d4122c5ebbd5a2bf277e"
    )


def test_sara_files_are_in_natural_order() -> None:
    paths = statutes.statute_paths(SARA_NUMERIC)
    assert [p.rsplit("/", 1)[1] for p in paths] == SARA_ORDER
    assert statutes.statute_paths(AIRLINE) == ["statutes/airline/section1_non_textual"]


def test_download_verifies_caches_and_second_load_is_offline(cache: Path, host: FileHost) -> None:
    src = DataSource(kind="hub")
    text = statutes.shared_statutes(SARA_NUMERIC, src)

    assert text == _mirror_text("sara", SARA_ORDER)
    assert host.paths_requested == [f"statutes/sara/{n}" for n in SARA_ORDER]
    for name in SARA_ORDER:
        cached = statutes.cached_path(f"statutes/sara/{name}")
        assert cached.read_bytes() == (MIRROR / "statutes" / "sara" / name).read_bytes()
    assert describe_source(src)["statutes"] == PINNED

    # The binary domain shares the files: served from the cache, no request at all.
    again = statutes.shared_statutes(SARA_BINARY, DataSource(kind="hub"))
    assert again == text
    assert len(host.log.requests) == len(SARA_ORDER)

    airline = statutes.shared_statutes(AIRLINE, DataSource(kind="hub"))
    assert airline == _mirror_text("airline", ["section1_non_textual"])
    assert host.paths_requested[-1] == "statutes/airline/section1_non_textual"


def test_tampered_download_is_rejected_and_not_cached(cache: Path, host: FileHost) -> None:
    host.tampered.add("statutes/sara/section63")
    with pytest.raises(DataError, match=r"statutes/sara/section63 .*sha256 .*not used or cached"):
        statutes.shared_statutes(SARA_NUMERIC, DataSource(kind="hub"))
    assert not statutes.cached_path("statutes/sara/section63").exists()
    # Files before it were verified and kept; no temp file is left behind.
    assert statutes.cached_path("statutes/sara/section2").is_file()
    leftovers = [p.name for p in cache.rglob(".*") if p.is_file()]
    assert leftovers == []


def test_cached_file_edited_by_hand_is_fetched_again(cache: Path, host: FileHost) -> None:
    statutes.shared_statutes(AIRLINE, DataSource(kind="hub"))
    cached = statutes.cached_path("statutes/airline/section1_non_textual")
    cached.write_text("edited by hand", encoding="utf-8")
    text = statutes.shared_statutes(AIRLINE, DataSource(kind="hub"))
    assert text == _mirror_text("airline", ["section1_non_textual"])
    assert host.paths_requested.count("statutes/airline/section1_non_textual") == 2
    assert cached.read_bytes() == (MIRROR / "statutes/airline/section1_non_textual").read_bytes()


def test_refused_connection_names_the_url_and_suggests_data_dir(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    monkeypatch.setenv(statutes.STATUTES_URL_ENV, url)
    with pytest.raises(DataError) as info:
        statutes.shared_statutes(AIRLINE, DataSource(kind="hub"))
    message = str(info.value)
    assert f"cannot reach {url}/statutes/airline/section1_non_textual" in message
    assert "--data-dir" in message
    assert not any(p.is_file() for p in cache.rglob("*"))


def test_http_404_is_reported(cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with FileHost(empty).running() as served:
        monkeypatch.setenv(statutes.STATUTES_URL_ENV, served.url)
        with pytest.raises(DataError, match=r"section1 from .* failed with HTTP 404"):
            statutes.shared_statutes(SARA_BINARY, DataSource(kind="hub"))
    assert served.paths_requested == ["statutes/sara/section1"]


def test_local_folder_statutes_are_used_without_network(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A refused base URL proves no download is attempted for a folder with statutes/.
    monkeypatch.setenv(statutes.STATUTES_URL_ENV, f"http://127.0.0.1:{_free_port()}")
    mirror_src = DataSource(kind="local", path=MIRROR)
    assert statutes.shared_statutes(SARA_NUMERIC, mirror_src) == _mirror_text("sara", SARA_ORDER)
    # The mirror's files are the pinned ones: described as such, not by their path.
    assert describe_source(mirror_src)["statutes"] == PINNED

    # The local files are read as they are (no checksum): a user's edited statutes count.
    folder = tmp_path / "mine"
    shutil.copytree(MIRROR / "statutes", folder / "statutes")
    (folder / "data").mkdir()
    (folder / "statutes/airline/section1_non_textual").write_text("my policy", encoding="utf-8")
    mine = DataSource(kind="local", path=folder)
    assert statutes.shared_statutes(AIRLINE, mine) == "my policy"
    described = describe_source(mine)["statutes"]
    assert described.startswith("local files, sha256 ")
    # Path-independent: the same files elsewhere are described the same way.
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved)
    assert describe_source(DataSource(kind="local", path=moved))["statutes"] == described
    # An extra file is a difference too.
    (moved / "statutes/sara/section9999").write_text("new law", encoding="utf-8")
    assert describe_source(DataSource(kind="local", path=moved))["statutes"] not in (
        described,
        PINNED,
    )


def test_local_folder_without_statutes_downloads(
    cache: Path, host: FileHost, tmp_path: Path
) -> None:
    folder = tmp_path / "casesonly"
    (folder / "data").mkdir(parents=True)
    src = DataSource(kind="local", path=folder)
    assert statutes.shared_statutes(AIRLINE, src) == _mirror_text(
        "airline", ["section1_non_textual"]
    )
    assert host.paths_requested == ["statutes/airline/section1_non_textual"]
    assert describe_source(src)["statutes"] == PINNED


def test_malformed_manifest_is_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "manifest.json"
    bad.write_text(json.dumps({"hub": {}}), encoding="utf-8")
    with pytest.raises(DataError, match=r"manifest .* is malformed"):
        statutes.load_manifest(bad)


def test_unwritable_cache_is_one_sentence(
    tmp_path: Path, host: FileHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv(statutes.CACHE_ENV, str(blocker / "cache"))
    with pytest.raises(DataError, match=r"cannot write statute file .* set DEONTICBENCH_CACHE"):
        statutes.shared_statutes(AIRLINE, DataSource(kind="hub"))
