"""Cases from the Hugging Face hub dataset, pinned to the commit actually read.

``datasets`` and ``huggingface_hub`` are imported here only, on demand: importing them
takes about half a second and most commands never touch the hub.

A requested revision (a branch such as ``main``, a tag or a sha) is first resolved to
its commit sha (``resolve_revision`` returns the pinned copy of the ``DataSource``);
every split is then loaded at that sha.  This
way all domains of one run read the same snapshot even if the dataset is updated
mid-run, and the run folder records the exact commit (``cases.describe_source``).

The endpoint is ``HF_ENDPOINT`` (default: the public hub), the caches are
``HF_HOME`` / ``HF_DATASETS_CACHE``, as for any ``datasets`` user.  Each resolved sha is
remembered in the deonticbench cache folder, so that offline (``HF_HUB_OFFLINE=1``, or
the hub unreachable) a revision loaded once before is read from the ``datasets`` cache
at the same commit.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._paths import cache_root
from ..errors import DataError
from .domains import Domain
from .sources import DataSource

_OFFLINE_HINT = "check the network or pass --data-dir with a local copy of the data"
_SHA = re.compile(r"[0-9a-f]{40}")


def endpoint() -> str:
    """The hub endpoint ``huggingface_hub`` talks to (``HF_ENDPOINT`` or the public hub)."""
    # optional: the hub extra, only when the hub is used
    from huggingface_hub import constants

    return str(constants.ENDPOINT)


def resolve_revision(src: DataSource) -> DataSource:
    """``src`` pinned: with the commit sha ``src.revision`` points at.

    Online, the hub answers and the answer is remembered on this machine.  Offline
    (``HF_HUB_OFFLINE`` set, or the hub unreachable), the sha remembered from an earlier
    online load is used and ``datasets`` reads its own cache; the pinned source's
    ``offline`` then says so.
    """
    if src.commit is not None:
        return src
    _require_datasets()
    # optional: the hub extra, only when the hub is used
    from huggingface_hub import HfApi, constants
    from huggingface_hub.errors import (
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{endpoint()}/datasets/{src.repo}"
    if constants.HF_HUB_OFFLINE:
        return _pin_offline(src, "offline mode (HF_HUB_OFFLINE) is on")
    try:
        info = HfApi().dataset_info(src.repo, revision=src.revision)
    except RevisionNotFoundError:
        raise DataError(
            f"the hub dataset {src.repo} has no revision {src.revision!r} at {where}."
        ) from None
    except RepositoryNotFoundError:
        raise DataError(
            f"the hub dataset {src.repo} cannot be found or accessed at {where}; {_OFFLINE_HINT}."
        ) from None
    except HfHubHTTPError as exc:
        status = exc.response.status_code if exc.response is not None else "?"
        raise DataError(
            f"the hub answered HTTP {status} for dataset {src.repo} at {where}; {_OFFLINE_HINT}."
        ) from None
    except Exception as exc:  # transport errors: the client library's own classes
        return _pin_offline(src, f"cannot reach the Hugging Face hub at {where} ({_reason(exc)})")
    sha = str(info.sha or "")
    if not _SHA.fullmatch(sha):
        raise DataError(f"the hub gave no commit sha for dataset {src.repo} at {where}.")
    _remember(src, sha)
    return replace(src, commit=sha)


def load_hub_rows(dom: Domain, split: str, src: DataSource) -> tuple[list[Any], str]:
    """All rows of one config's split, as plain dicts, and a label naming where they came from."""
    src = resolve_revision(src)
    assert src.commit is not None
    sha = src.commit
    datasets = _require_datasets()
    origin = f"hub dataset {src.repo}@{sha[:12]} config {dom.hub_config} split {split}"
    offline = src.offline is not None
    try:
        with _offline_mode(offline):
            ds = datasets.load_dataset(src.repo, dom.hub_config, split=split, revision=sha)
    except ValueError as exc:
        # Unknown config or split: datasets lists the available ones in the message.
        raise DataError(f"{origin} cannot be loaded ({_reason(exc)}).") from None
    except Exception as exc:
        where = "the local datasets cache" if offline else endpoint()
        raise DataError(
            f"{origin} cannot be loaded from {where} ({_reason(exc)}); {_OFFLINE_HINT}."
        ) from None
    # Offline, datasets falls back to the newest cached copy of the config, whatever its
    # commit; the cache path names that commit, so a different snapshot is refused.
    actual = _cached_commit(ds)
    if actual is not None and actual != sha:
        raise DataError(
            f"{origin}: the only cached copy is of commit {actual[:12]}, not {sha[:12]}; "
            "go online once, or pass --data-dir with a local copy of the data."
        )
    return list(ds.to_list()), origin


def _pin_offline(src: DataSource, why: str) -> DataSource:
    sha = _recall(src) or (src.revision if _SHA.fullmatch(src.revision) else None)
    if sha is None:
        raise DataError(
            f"{why}, and revision {src.revision!r} of {src.repo} was never loaded on this "
            f"machine; {_OFFLINE_HINT}."
        )
    return replace(src, commit=sha, offline="datasets cache")


@contextmanager
def _offline_mode(on: bool) -> Iterator[None]:
    """Make datasets and huggingface_hub skip the network for one load.

    Both libraries read their offline flag from module globals at call time; setting
    them avoids some thirty seconds of connection retries per load when the hub is
    known to be unreachable.  Restored afterwards.
    """
    if not on:
        yield
        return
    # optional: the hub extra, only when the hub is used
    import datasets.config as ds_config
    from huggingface_hub import constants

    saved = (ds_config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE)
    ds_config.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        ds_config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = saved


def _cached_commit(ds: Any) -> str | None:
    for entry in getattr(ds, "cache_files", None) or []:
        for part in Path(str(entry.get("filename", ""))).parts:
            if _SHA.fullmatch(part):
                return part
    return None


# -- which sha a revision resolved to, remembered per machine for offline use ---------


def _memory_file() -> Path:
    return cache_root() / "hub-revisions.json"


def _memory_key(src: DataSource) -> str:
    return f"{endpoint()} {src.repo}@{src.revision}"


def _recall(src: DataSource) -> str | None:
    try:
        known = json.loads(_memory_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    sha = known.get(_memory_key(src)) if isinstance(known, dict) else None
    return sha if isinstance(sha, str) and _SHA.fullmatch(sha) else None


def _remember(src: DataSource, sha: str) -> None:
    path = _memory_file()
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    known[_memory_key(src)] = sha
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".hub-revisions.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(known, handle, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError:
        # Only an offline convenience: a read-only cache must not stop an online run.
        pass


def _require_datasets() -> Any:
    try:
        # optional: the hub extra, only when the hub is used
        import datasets
    except ImportError:
        raise DataError(
            "loading from the Hugging Face hub needs the 'datasets' package: install "
            "deonticbench[hub], or pass --data-dir with a local copy of the data."
        ) from None
    return datasets


def _reason(exc: BaseException) -> str:
    first = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
