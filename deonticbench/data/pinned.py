"""Files of the upstream repository pinned by sha256: downloaded once, verified, cached.

One owner for the download-verify-cache rule that the shared statutes
(``data/statutes.py``) and upstream's prompt files (``data/upstream.py``) both follow:
a file is fetched from ``<base URL>/<repository path>``, its sha256 compared with the
one ``data/manifest.json`` pins, and only a verified copy is written (atomically) to the
cache folder; a cached copy is re-verified on every read, so a cache edited by hand can
never silently change a prompt.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from .._paths import CACHE_ENV
from ..errors import DataError

REPOSITORY_URL_ENV = "DEONTICBENCH_STATUTES_URL"
"""Base URL holding the pinned repository's files (a mirror, or a loopback server in
tests); ``<base>/statutes/sara/section1`` must be the file.  Named after the statutes,
its first use; upstream's prompt files are read from the same base."""
TIMEOUT_S = 30.0


def fetch_pinned(
    path: str, expected: str, *, base: str, target: Path, what: str, hint: str | None = None
) -> bytes:
    """The bytes of repository file ``path`` whose sha256 must be ``expected``: from the
    cached copy ``target`` when it verifies, else downloaded from ``base`` and cached.
    ``what`` names the kind of file in messages ("statute file"); ``hint`` says how to do
    without the download (default: upstream's mirror variable or a local data folder)."""
    if target.is_file():
        body = target.read_bytes()
        if sha256_hex(body) == expected:
            return body
    url = f"{base.rstrip('/')}/{path}"
    body = download(url, path, what=what, hint=hint)
    got = sha256_hex(body)
    if got != expected:
        raise DataError(
            f"{what} {path} downloaded from {url} has sha256 {got}, not the pinned "
            f"{expected}, so it was not used or cached."
        )
    try:
        write_atomically(target, body)
    except OSError as exc:
        raise DataError(
            f"cannot write {what} {path} to the cache folder {target.parent} "
            f"({exc.strerror}); set {CACHE_ENV} to a writable folder."
        ) from None
    return body


def download(url: str, path: str, *, what: str, hint: str | None = None) -> bytes:
    # urllib (with http.client and email) is imported only when something is downloaded:
    # local runs never pay for it at start-up.
    import urllib.error
    import urllib.request

    hint = hint or (
        f"check the network, set {REPOSITORY_URL_ENV} to a mirror, or pass --data-dir "
        "with a local copy of the upstream repository"
    )
    request = urllib.request.Request(url, headers={"User-Agent": "deonticbench"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            body: bytes = response.read()
            return body
    except urllib.error.HTTPError as exc:
        raise DataError(
            f"downloading {what} {path} from {url} failed with HTTP {exc.code}; {hint}."
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(
            f"cannot reach {url} to download {what} {path} ({reason}); {hint}."
        ) from None


def write_atomically(target: Path, body: bytes) -> None:
    # A temp file in the same folder plus os.replace: readers (or a concurrent run)
    # see either no file or the whole verified file, never a partial one.
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def sha256_hex(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()
