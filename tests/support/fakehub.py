"""Loopback HTTP servers for the data tests: a raw file host and a Hugging Face hub.

``FileHost`` serves a folder the way a raw-file mirror of a Git repository does (a
plain GET per path), and can be told to tamper with a file.  ``FakeHub`` speaks the
part of the hub's HTTP API that ``datasets.load_dataset(repo, config, split=...,
revision=...)`` uses for a dataset repository of data files:

* ``GET /api/datasets/<repo>/revision/<rev>``: repository info (the commit sha and
  the file list);
* ``HEAD|GET /datasets/<repo>/resolve/<rev>/<path>``: one file, with the commit,
  etag and size headers ``huggingface_hub`` reads to cache it;
* ``GET /api/datasets/<repo>/tree/<rev>[/<path>]``: the folder listing
  ``HfFileSystem`` uses to resolve the data-file patterns of the dataset card.

These are exactly the calls ``datasets`` 5.2 / ``huggingface_hub`` 2.4 make for a
commit-sha revision (found by logging every request); the optional files they probe
for (``<name>.py``, ``.huggingface.yaml``, ``dataset_infos.json``) get the hub's
``EntryNotFound`` answer.

Unknown routes answer 404 and are kept in ``unhandled`` so a test can show them.
Both servers record every request they receive.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit


@dataclass
class _Log:
    requests: list[tuple[str, str]] = field(default_factory=list)
    unhandled: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, method: str, path: str) -> None:
        with self.lock:
            self.requests.append((method, path))


class _Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass

    def _send(
        self,
        status: int,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        content_type: str = "application/octet-stream",
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


@contextmanager
def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


class FileHost:
    """Serve ``root`` at ``http://127.0.0.1:<port>/<path>``; ``tamper`` alters a file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.log = _Log()
        self.tampered: set[str] = set()
        self.url = ""

    @contextmanager
    def running(self) -> Iterator[FileHost]:
        host = self

        class Handler(_Quiet):
            def do_GET(self) -> None:
                rel = unquote(urlsplit(self.path).path).lstrip("/")
                host.log.add("GET", rel)
                target = (host.root / rel).resolve()
                if host.root.resolve() not in target.parents or not target.is_file():
                    self._send(404, b"Not Found", content_type="text/plain")
                    return
                body = target.read_bytes()
                if rel in host.tampered:
                    body = body.replace(b"e", b"3", 1) + b"\n% appended by a tamperer\n"
                self._send(200, body, content_type="text/plain; charset=utf-8")

        with _serve(Handler) as server:
            self.url = f"http://127.0.0.1:{server.server_address[1]}"
            yield self

    @property
    def paths_requested(self) -> list[str]:
        return [path for _, path in self.log.requests]


class FakeHub:
    """A one-repository dataset hub; ``files`` maps repo paths to their bytes."""

    def __init__(self, repo: str, files: dict[str, bytes], sha: str | None = None) -> None:
        self.repo = repo
        self.files = dict(files)
        digest = hashlib.sha1()
        for name in sorted(self.files):
            digest.update(name.encode() + b"\0" + self.files[name])
        self.sha = sha or digest.hexdigest()
        self.log = _Log()
        self.url = ""

    # -- helpers the handler uses ------------------------------------------------------

    def _known_revision(self, rev: str) -> bool:
        return rev in ("main", self.sha)

    def _file_entry(self, path: str) -> dict[str, Any]:
        body = self.files[path]
        return {
            "type": "file",
            "path": path,
            "size": len(body),
            "oid": hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest(),
        }

    def _dirs(self) -> set[str]:
        out: set[str] = set()
        for name in self.files:
            parts = name.split("/")[:-1]
            for i in range(1, len(parts) + 1):
                out.add("/".join(parts[:i]))
        return out

    def _tree(self, prefix: str, recursive: bool) -> list[dict[str, Any]]:
        prefix = prefix.strip("/")
        entries: list[dict[str, Any]] = []
        for d in sorted(self._dirs()):
            parent = d.rsplit("/", 1)[0] if "/" in d else ""
            inside = d.startswith(prefix + "/") if prefix else True
            if inside and (recursive or parent == prefix):
                entries.append({"type": "directory", "path": d, "size": 0, "oid": "0" * 40})
        for name in sorted(self.files):
            parent = name.rsplit("/", 1)[0] if "/" in name else ""
            inside = name.startswith(prefix + "/") if prefix else True
            if inside and (recursive or parent == prefix):
                entries.append(self._file_entry(name))
        return entries

    def _info(self) -> dict[str, Any]:
        return {
            "_id": "0" * 24,
            "id": self.repo,
            "author": self.repo.split("/")[0],
            "sha": self.sha,
            "lastModified": "2026-01-01T00:00:00.000Z",
            "private": False,
            "gated": False,
            "disabled": False,
            "downloads": 0,
            "likes": 0,
            "tags": [],
            "cardData": {},
            "siblings": [{"rfilename": name} for name in sorted(self.files)],
            "createdAt": "2026-01-01T00:00:00.000Z",
        }

    @contextmanager
    def running(self) -> Iterator[FakeHub]:
        hub = self
        api_prefix = f"/api/datasets/{self.repo}"
        resolve_prefix = f"/datasets/{self.repo}/resolve/"

        class Handler(_Quiet):
            def _json(
                self, status: int, payload: Any, headers: dict[str, str] | None = None
            ) -> None:
                self._send(status, json.dumps(payload).encode(), headers, "application/json")

            def _missing(self, code: str) -> None:
                hub.log.unhandled.append((self.command, self.path))
                self._send(
                    404,
                    json.dumps({"error": code}).encode(),
                    {"X-Error-Code": code, "X-Error-Message": code},
                    "application/json",
                )

            def _route(self) -> None:
                parts = urlsplit(self.path)
                path = unquote(parts.path)
                query = parse_qs(parts.query)
                hub.log.add(self.command, self.path)
                if path.startswith(resolve_prefix):
                    rev, _, name = path[len(resolve_prefix) :].partition("/")
                    self._resolve(rev, name)
                elif path.startswith(api_prefix + "/revision/"):
                    rev = path[len(api_prefix + "/revision/") :]
                    if not hub._known_revision(rev):
                        self._missing("RevisionNotFound")
                    else:
                        self._json(200, hub._info())
                elif path.startswith(api_prefix + "/tree/"):
                    rev, _, prefix = path[len(api_prefix + "/tree/") :].partition("/")
                    recursive = query.get("recursive", ["false"])[0].lower() == "true"
                    if not hub._known_revision(rev):
                        self._missing("RevisionNotFound")
                    elif prefix.strip("/") and prefix.strip("/") not in hub._dirs():
                        self._missing("EntryNotFound")
                    else:
                        self._json(200, hub._tree(prefix, recursive))
                else:
                    self._missing("RepoNotFound")

            def _resolve(self, rev: str, name: str) -> None:
                if not hub._known_revision(rev):
                    self._missing("RevisionNotFound")
                    return
                if name not in hub.files:
                    # A normal hub answer (datasets probes for optional files), not a gap
                    # in this imitation, so it is not counted as unhandled.
                    self._send(
                        404,
                        b"Entry not found",
                        {
                            "X-Error-Code": "EntryNotFound",
                            "X-Error-Message": "Entry not found",
                            "X-Repo-Commit": hub.sha,
                        },
                        "text/plain",
                    )
                    return
                body = hub.files[name]
                etag = hashlib.sha256(body).hexdigest()
                self._send(
                    200,
                    body,
                    {"X-Repo-Commit": hub.sha, "ETag": f'"{etag}"', "Accept-Ranges": "bytes"},
                )

            def do_GET(self) -> None:
                self._route()

            def do_HEAD(self) -> None:
                self._route()

        with _serve(Handler) as server:
            self.url = f"http://127.0.0.1:{server.server_address[1]}"
            yield self


HUB_CONFIGS = {
    "sara_numeric": "sara_numeric",
    "sara_binary": "sara_binary",
    "airline": "airline",
    "housing": "housing",
    "uscis-aao": "uscis-aao",
}
"""Hub config name -> mirror folder (they coincide, as upstream's download script shows)."""


def mirror_repo_files(mirror: Path) -> dict[str, bytes]:
    """Build the files of a hub dataset repository from the mirror's JSON splits.

    Each (config, split) becomes one parquet file, declared in the dataset card's
    ``configs`` block the way ``push_to_hub`` lays a multi-config dataset out.  A
    column holding mixed ints and strings (sara_numeric's labels) is stored as strings,
    as a parquet column has one type.
    """
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    files: dict[str, bytes] = {}
    card = ["---", "configs:"]
    for config, folder in HUB_CONFIGS.items():
        card.append(f"- config_name: {config}")
        card.append("  data_files:")
        for split in ("hard", "whole"):
            source = mirror / "data" / folder / f"{split}.json"
            if not source.exists():
                continue
            rows = json.loads(source.read_text(encoding="utf-8"))
            columns: dict[str, list[Any]] = {}
            for row in rows:
                for key in row:
                    columns.setdefault(key, [])
            for key in columns:
                values = [row.get(key) for row in rows]
                if len({type(v) for v in values if v is not None}) > 1:
                    values = [None if v is None else str(v) for v in values]
                columns[key] = values
            buffer = io.BytesIO()
            pq.write_table(pa.table(columns), buffer)
            name = f"{config}/{split}-00000-of-00001.parquet"
            files[name] = buffer.getvalue()
            card.append(f"  - split: {split}")
            card.append(f"    path: {name}")
    card += ["---", "", "# DeonticBench (loopback copy for tests)", ""]
    files["README.md"] = "\n".join(card).encode()
    files[".gitattributes"] = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n"
    return files
