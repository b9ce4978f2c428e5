"""DAR's adapter files, read at run time and checked against sha256.

DAR (*Deontic Reasoning with Agentic Harnesses*, the follow-up paper) ran DeonticBench's
hard split as Harbor tasks made by its own adapters.  The DAR protocol renders those tasks
from DAR's files: its adapters' ``adapter.py`` (the per-domain settings and answer-format
lines) and their ``template/`` folders.  They stay DAR's: this project never carries a
copy of them.  They are read from a local copy of DAR's repository (``root``, else
``DEONTICBENCH_DAR``), or downloaded from DAR's repository at the commit
``data/manifest.json`` pins for each file, into the cache folder, like upstream's files
(``data/upstream.py``).  Either way each file must have the sha256 the manifest lists.

Three template files are missing from DAR's public repository.  The manifest marks them
``filled``: each is read from the sibling adapter's file it names (``from``), for the
reason it gives (docs/harbor.md, "DAR's tasks").
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._paths import cache_root
from ..errors import DataError
from .pinned import fetch_pinned, sha256_hex
from .statutes import MANIFEST_PATH

DAR_DIR_ENV = "DEONTICBENCH_DAR"
"""A local copy of DAR's repository (its layout: ``adapters/deonticbench_direct/...``)."""
DAR_URL_ENV = "DEONTICBENCH_DAR_URL"
"""Base URL holding DAR's files at every commit the manifest names (``{commit}`` in it is
replaced); a mirror, or a loopback server in tests."""


@dataclass(frozen=True)
class DarFile:
    """One of DAR's files as the manifest pins it."""

    path: str
    sha256: str
    commit: str
    filled_from: str | None = None
    """The file read in its place when it is missing from DAR's public repository."""
    reason: str = ""


@dataclass(frozen=True)
class DarManifest:
    repo: str
    url: str
    """Base URL template with ``{commit}``."""
    files: Mapping[str, DarFile]


@lru_cache(maxsize=1)
def dar_manifest(path: Path = MANIFEST_PATH) -> DarManifest:
    """The manifest's ``dar`` section (DataError in one sentence if it is not there)."""
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))["dar"]
        files: dict[str, DarFile] = {}
        for name, entry in raw["files"].items():
            filled = bool(entry.get("filled"))
            files[name] = DarFile(
                path=name,
                sha256=str(entry["sha256"]),
                commit=str(entry.get("commit", "")),
                filled_from=str(entry["from"]) if filled else None,
                reason=str(entry.get("reason", "")),
            )
        return DarManifest(repo=str(raw["repo"]), url=str(raw["url"]), files=files)
    except OSError as exc:
        raise DataError(f"the data manifest {path} cannot be read ({exc.strerror}).") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(f"the data manifest {path} has no valid dar section ({exc!r}).") from None


def dar_root(root: str | os.PathLike[str] | None = None) -> Path | None:
    """The local copy of DAR's repository to read: ``root``, else ``DEONTICBENCH_DAR``,
    else None (download)."""
    chosen = root if root is not None else os.environ.get(DAR_DIR_ENV, "").strip() or None
    if chosen is None:
        return None
    folder = Path(chosen).expanduser()
    if not (folder / "adapters").is_dir():
        raise DataError(
            f"{folder} is not a copy of DAR's repository: it has no adapters/ folder "
            f"(set {DAR_DIR_ENV} to the folder holding adapters/deonticbench_direct/)."
        )
    return folder


def dar_text(path: str, root: str | os.PathLike[str] | None = None) -> str:
    """DAR's file ``path`` (a filled one read from the file it is filled from), verified."""
    return _text(path, str(dar_root(root) or ""))


def dar_origin(root: str | os.PathLike[str] | None = None) -> str:
    """Where DAR's files are read from, in words for a report line."""
    folder = dar_root(root)
    if folder is not None:
        return f"local {folder}"
    m = dar_manifest()
    commits = sorted({f.commit[:7] for f in m.files.values() if f.commit})
    return f"{m.repo}@{','.join(commits)}"


@lru_cache(maxsize=64)
def _text(path: str, folder: str) -> str:
    m = dar_manifest()
    entry = m.files.get(path)
    if entry is None:
        raise DataError(f"DAR's file {path} is not listed in the data manifest.")
    if entry.filled_from is not None:
        # The public repository lacks it: the manifest names the file that stands in.
        return _text(entry.filled_from, folder)
    body = _local(entry, Path(folder)) if folder else _download(entry, m)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"DAR's file {path} is not UTF-8 ({exc.reason}).") from None


def _local(entry: DarFile, folder: Path) -> bytes:
    full = folder / entry.path
    try:
        body = full.read_bytes()
    except OSError as exc:
        raise DataError(f"DAR's file {full} cannot be read ({exc.strerror}).") from None
    got = sha256_hex(body)
    if got != entry.sha256:
        raise DataError(
            f"DAR's file {full} has sha256 {got}, not the pinned {entry.sha256}: the DAR "
            "protocol renders DAR's files only as published (restore it, or unset "
            f"{DAR_DIR_ENV} to download them)."
        )
    return body


def _download(entry: DarFile, m: DarManifest) -> bytes:
    template = os.environ.get(DAR_URL_ENV, "").strip() or m.url
    base = template.replace("{commit}", entry.commit)
    target = cache_root() / "dar" / entry.commit / entry.path
    hint = (
        f"check the network, set {DAR_URL_ENV} to a mirror, or set {DAR_DIR_ENV} to a "
        "clone of DAR's repository"
    )
    return fetch_pinned(
        entry.path, entry.sha256, base=base, target=target, what="DAR file", hint=hint
    )


__all__ = [
    "DAR_DIR_ENV",
    "DAR_URL_ENV",
    "DarFile",
    "DarManifest",
    "dar_manifest",
    "dar_origin",
    "dar_root",
    "dar_text",
]
