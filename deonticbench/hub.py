"""Cases from the Hugging Face hub dataset, pinned to the commit actually read.

``datasets`` and ``huggingface_hub`` are imported here only, on demand: importing them
takes about half a second and most commands never touch the hub.

A requested revision (a branch such as ``main``, a tag or a sha) is first resolved to
its commit sha, once per ``DataSource``; every split is then loaded at that sha.  This
way all domains of one run read the same snapshot even if the dataset is updated
mid-run, and the run folder records the exact commit (``DataSource.describe()``).

The endpoint is ``HF_ENDPOINT`` (default: the public hub), the caches are
``HF_HOME`` / ``HF_DATASETS_CACHE``, as for any ``datasets`` user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .domains import Domain
from .errors import DataError

if TYPE_CHECKING:
    from .data import DataSource

_OFFLINE_HINT = "check the network or pass --data-dir with a local copy of the data"


def endpoint() -> str:
    """The hub endpoint ``huggingface_hub`` talks to (``HF_ENDPOINT`` or the public hub)."""
    from huggingface_hub import constants

    return str(constants.ENDPOINT)


def resolve_revision(src: DataSource) -> str:
    """The commit sha ``src.revision`` points at; remembered in ``src.pins``."""
    pinned = src.pins.get("commit")
    if pinned:
        return pinned
    _require_datasets()
    from huggingface_hub import HfApi
    from huggingface_hub.errors import (
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{endpoint()}/datasets/{src.repo}"
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
        raise DataError(
            f"cannot reach the Hugging Face hub at {where} ({_reason(exc)}); {_OFFLINE_HINT}."
        ) from None
    sha = str(info.sha or "")
    if not sha:
        raise DataError(f"the hub gave no commit sha for dataset {src.repo} at {where}.")
    src.pins["commit"] = sha
    return sha


def load_hub_rows(dom: Domain, split: str, src: DataSource) -> tuple[list[Any], str]:
    """All rows of one config's split, as plain dicts, and a label naming where they came from."""
    sha = resolve_revision(src)
    datasets = _require_datasets()
    origin = f"hub dataset {src.repo}@{sha[:12]} config {dom.hub_config} split {split}"
    try:
        ds = datasets.load_dataset(src.repo, dom.hub_config, split=split, revision=sha)
    except ValueError as exc:
        # Unknown config or split: datasets lists the available ones in the message.
        raise DataError(f"{origin} cannot be loaded ({_reason(exc)}).") from None
    except Exception as exc:
        raise DataError(
            f"{origin} cannot be loaded from {endpoint()} ({_reason(exc)}); {_OFFLINE_HINT}."
        ) from None
    return list(ds.to_list()), origin


def _require_datasets() -> Any:
    try:
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
