"""Shared statute text for the SARA and airline domains, fetched and checksummed.

The hub dataset carries only the cases; the statutes that SARA (numeric and binary)
and airline cases are read against live in the upstream Git repository.  We pin one
commit of it in ``data/manifest.json`` together with each file's sha256, download the
files from that commit on first use, verify them, and keep them in the user's cache so
later runs make no request.  A local data folder that has ``statutes/`` is read as is.

Environment:

* ``DEONTICBENCH_STATUTES_URL``: base URL holding the repository's files (a mirror, or
  a loopback server in tests); ``<base>/statutes/sara/section1`` must be the file.
* ``DEONTICBENCH_CACHE``: cache folder instead of the platform's user cache folder
  (``_paths.cache_root``; statutes go under its ``statutes/``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._paths import CACHE_ENV, DATA, cache_root  # noqa: F401  (CACHE_ENV: documented here)
from ..errors import DataError
from .domains import Domain
from .pinned import REPOSITORY_URL_ENV, fetch_pinned, sha256_hex
from .sources import DataSource

STATUTES_URL_ENV = REPOSITORY_URL_ENV
MANIFEST_PATH = DATA / "manifest.json"
SEPARATOR = "\n\n\n\n"
"""Between concatenated statute files: upstream joins them with four newlines.  Upstream
takes the files in directory-listing order (``os.listdir``), which differs between
filesystems; we take them in natural file-name order (``natural_key``), so every machine
builds the same prompt."""


@dataclass(frozen=True)
class Manifest:
    """The pinned data: hub dataset id and configs, statute commit and checksums."""

    hub_repo: str
    hub_revision: str
    hub_configs: Mapping[str, tuple[str, ...]]
    statutes_repo: str
    statutes_commit: str
    statutes_url: str
    """Base URL template with ``{commit}``."""
    statute_files: Mapping[str, str]
    """Repository path -> sha256 hex digest."""
    upstream_files: Mapping[str, str] = field(default_factory=dict)
    """Upstream's prompt and script files at the same commit (the paper protocol reads
    its texts from them, ``data/upstream.py``): repository path -> sha256 hex digest."""

    def default_base_url(self) -> str:
        return self.statutes_url.format(commit=self.statutes_commit)


def load_manifest(path: Path = MANIFEST_PATH) -> Manifest:
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
        hub, statutes = raw["hub"], raw["statutes"]
        return Manifest(
            hub_repo=str(hub["repo"]),
            hub_revision=str(hub["revision"]),
            hub_configs={str(k): tuple(v) for k, v in hub["configs"].items()},
            statutes_repo=str(statutes["repo"]),
            statutes_commit=str(statutes["commit"]),
            statutes_url=str(statutes["url"]),
            statute_files={str(k): str(v) for k, v in statutes["files"].items()},
            upstream_files={
                str(k): str(v) for k, v in raw.get("upstream_code", {}).get("files", {}).items()
            },
        )
    except OSError as exc:
        raise DataError(f"the data manifest {path} cannot be read ({exc.strerror}).") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(f"the data manifest {path} is malformed ({exc!r}).") from None


@lru_cache(maxsize=1)
def _manifest() -> Manifest:
    return load_manifest()


def natural_key(name: str) -> list[Any]:
    """Sort key that orders section2 before section10."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def base_url(manifest: Manifest | None = None) -> str:
    m = manifest or _manifest()
    return (os.environ.get(STATUTES_URL_ENV) or m.default_base_url()).rstrip("/")


def statute_paths(dom: Domain, manifest: Manifest | None = None) -> list[str]:
    """Repository paths of a shared-statute domain's files, in natural order."""
    m = manifest or _manifest()
    prefix = f"statutes/{dom.statute_dir}/"
    names = [p for p in m.statute_files if p.startswith(prefix)]
    if not names:
        raise DataError(f"the data manifest lists no statute files under {prefix}.")
    return sorted(names, key=lambda p: natural_key(p.rsplit("/", 1)[1]))


def cached_path(path: str, manifest: Manifest | None = None) -> Path:
    """Where the verified copy of a pinned statute file is kept (keyed by commit)."""
    m = manifest or _manifest()
    return cache_root() / "statutes" / m.statutes_commit / path


def fetch_statute(path: str, manifest: Manifest | None = None) -> bytes:
    """One pinned statute file's bytes, verified; downloaded once, then read from the cache."""
    m = manifest or _manifest()
    expected = m.statute_files.get(path)
    if expected is None:
        raise DataError(f"statute file {path} is not listed in the data manifest.")
    return fetch_pinned(
        path, expected, base=base_url(m), target=cached_path(path, m), what="statute file"
    )


def shared_statutes(dom: Domain, src: DataSource, *, by_name: bool = False) -> str:
    """The statute text shared by every case of ``dom``, from ``src`` or the pinned download.

    Files are joined in natural file-name order (section2 before section10); ``by_name``
    joins them in plain sorted file-name order instead, which the paper protocol uses:
    upstream joins them in directory-listing order, which differs between filesystems,
    so the protocol pins sorted order in its place."""
    return SEPARATOR.join(text for _, text in statute_files(dom, src, by_name=by_name))


def statute_files(dom: Domain, src: DataSource, *, by_name: bool = False) -> list[tuple[str, str]]:
    """Each shared statute file of ``dom`` as (file name, text), in the order
    ``shared_statutes`` joins them; the DAR protocol joins them its own way."""
    key = _file_name if by_name else natural_key
    m = _manifest()
    folder = _local_statutes(src)
    if folder is not None and (folder / dom.statute_dir).is_dir():
        return _read_local(folder / dom.statute_dir, key)
    paths = sorted(statute_paths(dom, m), key=lambda p: key(p.rsplit("/", 1)[1]))
    return [(p.rsplit("/", 1)[1], fetch_statute(p, m).decode("utf-8")) for p in paths]


def _file_name(name: str) -> str:
    return name


def describe_statutes(src: DataSource) -> str:
    """Which shared statute text ``src`` gives, in words that do not depend on paths.

    The pinned commit when the text is the pinned files (downloaded, or a local copy
    whose files all match the checksums); otherwise a digest of the local files.  It
    covers every shared-statute domain, whichever were loaded, so that a resumed run
    that adds a domain describes its data the same way.
    """
    m = _manifest()
    pinned = f"{m.statutes_repo}@{m.statutes_commit}"
    folder = _local_statutes(src)
    if folder is None:
        return pinned
    digest = hashlib.sha256()
    matches = True
    for sub in sorted({p.split("/")[1] for p in m.statute_files}):
        if not (folder / sub).is_dir():
            continue  # this domain's statutes would be downloaded: the pinned files
        files = sorted(p for p in (folder / sub).iterdir() if p.is_file())
        for p in files:
            if p.name.startswith("."):
                continue
            rel = f"statutes/{sub}/{p.name}"
            try:
                body = p.read_bytes()
            except OSError:
                return f"local files under {folder.name}/ (unreadable)"
            digest.update(rel.encode() + b"\0" + sha256_hex(body).encode() + b"\0")
            matches = matches and m.statute_files.get(rel) == sha256_hex(body)
        listed = {p for p in m.statute_files if p.startswith(f"statutes/{sub}/")}
        present = {f"statutes/{sub}/{p.name}" for p in files if not p.name.startswith(".")}
        matches = matches and listed == present
    if matches:
        return pinned
    return f"local files, sha256 {digest.hexdigest()[:16]}"


def _local_statutes(src: DataSource) -> Path | None:
    if src.kind == "local" and src.path is not None and (src.path / "statutes").is_dir():
        return src.path / "statutes"
    return None


def _read_local(folder: Path, key: Callable[[str], Any]) -> list[tuple[str, str]]:
    files = sorted(
        (p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")),
        key=lambda p: key(p.name),
    )
    if not files:
        raise DataError(f"the statute folder {folder} holds no files.")
    texts: list[tuple[str, str]] = []
    for p in files:
        try:
            texts.append((p.name, p.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"the statute file {p} cannot be read ({exc}).") from None
    return texts
