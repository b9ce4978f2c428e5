"""Upstream's own prompt and script files, read at run time and checked against sha256.

The paper protocol (``vocabulary.protocols``) sends what upstream's released
``scripts/generate_e2e.py`` sends.  Its texts stay upstream's: this project never carries
a copy of them.  They are read from the local data folder when it has the upstream layout
(``--data-dir`` / ``DEONTICBENCH_DATA`` with ``scripts/`` and ``prompts/``), or downloaded
from the upstream repository at the commit ``data/manifest.json`` pins, into the cache
folder, like the shared statutes (``data/pinned.py``).  Either way each file must have the
sha256 the manifest lists: a file that differs is refused in one sentence, because a prompt
built from an edited script would no longer be the paper's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .._paths import cache_root
from ..errors import DataError
from .pinned import fetch_pinned, sha256_hex
from .sources import DataSource
from .statutes import Manifest, _manifest, base_url

GENERATE_SCRIPT = "scripts/generate_e2e.py"
"""SARA and airline composers, the system message, sampling per model, airline retrieval."""
DATASET_PROMPTS = "prompts/dataset_prompts.py"
"""Housing and USCIS composers."""
CASE_EXEMPLARS = "prompts/case_exemplars.py"
"""The few-shot exemplar texts."""
MODEL_CONFIG = "model_config.yaml"
"""Upstream's reasoning models and per-model request overrides."""
UPSTREAM_FILES = (GENERATE_SCRIPT, DATASET_PROMPTS, CASE_EXEMPLARS, MODEL_CONFIG)


@dataclass(frozen=True)
class UpstreamFiles:
    """The verified texts of upstream's files, by repository path, and where they came
    from (``local <folder>`` or ``<repo>@<commit>``)."""

    texts: tuple[tuple[str, str], ...]
    origin: str
    commit: str

    def text(self, path: str) -> str:
        return dict(self.texts)[path]

    def digest(self, paths: tuple[str, ...] = UPSTREAM_FILES) -> str:
        """sha256 over the named files' sums: a prompt's template hash."""
        sums = dict(self.texts)
        joined = "\n".join(f"{p}\0{sha256_hex(sums[p].encode('utf-8'))}" for p in paths)
        return sha256_hex(joined.encode("utf-8"))


def upstream_cached_path(path: str, manifest: Manifest) -> Path:
    """Where the verified download of upstream file ``path`` is kept (keyed by commit)."""
    return cache_root() / "upstream" / manifest.statutes_commit / path


def upstream_files(source: DataSource | None) -> UpstreamFiles:
    """Upstream's files from ``source``'s folder when it has them, else the pinned download;
    each verified against the manifest (DataError in one sentence otherwise)."""
    folder = source.path if source is not None and source.kind == "local" else None
    if folder is not None and (folder / GENERATE_SCRIPT).is_file():
        return _local(str(folder))
    return _downloaded(base_url())


@lru_cache(maxsize=4)
def _local(folder: str) -> UpstreamFiles:
    m = _manifest()
    texts: list[tuple[str, str]] = []
    for path in UPSTREAM_FILES:
        expected = _expected(m, path)
        full = f"{folder}/{path}"
        try:
            with open(full, "rb") as handle:
                body = handle.read()
        except OSError as exc:
            raise DataError(f"upstream file {full} cannot be read ({exc.strerror}).") from None
        got = sha256_hex(body)
        if got != expected:
            raise DataError(
                f"upstream file {full} has sha256 {got}, not the pinned {expected}: the paper "
                "protocol reads upstream's texts only as released (restore the file, or use a "
                "data folder without scripts/ to download them)."
            )
        texts.append((path, _decode(body, full)))
    return UpstreamFiles(tuple(texts), f"local {folder}", m.statutes_commit)


@lru_cache(maxsize=4)
def _downloaded(base: str) -> UpstreamFiles:
    m = _manifest()
    texts: list[tuple[str, str]] = []
    for path in UPSTREAM_FILES:
        target = cache_root() / "upstream" / m.statutes_commit / path
        body = fetch_pinned(
            path, _expected(m, path), base=base, target=target, what="upstream file"
        )
        texts.append((path, _decode(body, path)))
    return UpstreamFiles(tuple(texts), f"{m.statutes_repo}@{m.statutes_commit}", m.statutes_commit)


def _expected(m: Manifest, path: str) -> str:
    expected = m.upstream_files.get(path)
    if expected is None:
        raise DataError(f"upstream file {path} is not listed in the data manifest.")
    return expected


def _decode(body: bytes, where: str) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"upstream file {where} is not UTF-8 ({exc.reason}).") from None
