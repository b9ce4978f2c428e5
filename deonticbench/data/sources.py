"""Where benchmark data comes from, and how to choose one.

A leaf module (it imports nothing of the package but ``errors``): ``data`` (loading
cases), ``hub`` (the Hugging Face source) and ``statutes`` (the shared statute files)
all build on it, and none of them needs another to know what a source is.  The cache
folder they share is the leaf ``_paths.cache_root``.

A ``DataSource`` is immutable.  A hub source names a revision (a branch, tag or sha);
``cases.pin_source`` returns a copy with the commit that revision resolved to, which is
what every split of one run is then read at and what the run folder records.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ConfigError, DataError

DATA_ENV = "DEONTICBENCH_DATA"
"""A local data folder in the upstream layout, used when no --data-dir is given."""
HUB_REPO = "gydou/DeonticBench"
SPLITS = ("smoke", "hard", "whole")
"""``smoke`` is the first five cases of ``hard``, as upstream derives it."""


@dataclass(frozen=True)
class DataSource:
    """A local folder (``path``) or a hub dataset (``repo`` at ``revision``).

    ``commit`` is the hub commit sha ``revision`` resolved to, and ``offline`` says the
    rows came from the ``datasets`` cache without asking the hub; both are set only on
    the pinned copy ``cases.pin_source`` returns.  Neither takes part in equality: a
    source is the same source before and after it is pinned.
    """

    kind: Literal["local", "hub"]
    path: Path | None = None
    repo: str = HUB_REPO
    revision: str = "main"
    commit: str | None = None
    offline: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DataSource):
            return NotImplemented
        return self._identity() == other._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    def _identity(self) -> tuple[object, ...]:
        return (self.kind, self.path, self.repo, self.revision)

    @property
    def pinned(self) -> bool:
        return self.kind == "local" or self.commit is not None


def resolve_source(
    data_dir: str | os.PathLike[str] | None = None,
    *,
    hub: bool = False,
    revision: str | None = None,
) -> DataSource:
    """Choose a data source: an explicit folder, then ``DEONTICBENCH_DATA``, else the hub.
    A revision without the hub, or the hub beside a folder, names no one source."""
    if revision and not hub:
        raise ConfigError("--revision picks a hub revision: use it with --hub.")
    if hub and data_dir:
        raise ConfigError("--hub and --data-dir name two data sources: choose one.")
    if hub:
        return DataSource(kind="hub", revision=revision or "main")
    chosen = data_dir or os.environ.get(DATA_ENV)
    if chosen:
        path = Path(chosen).expanduser().resolve()
        if not (path / "data").is_dir():
            raise DataError(
                f"{path} is not a DeonticBench data folder: it has no data/ subfolder "
                "(expected the upstream layout data/<domain>/<split>.json)."
            )
        return DataSource(kind="local", path=path)
    return DataSource(kind="hub", revision=revision or "main")
