"""Naming run folders and finding the one to resume under ``runs/``."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import DataError
from .config import CONFIG_NAME, config_mismatch, read_config

RUNS_DIR = Path("runs")


def model_slug(spec: str) -> str:
    """A folder-name form of a model spec: ``openai:gpt-4.1`` -> ``openai-gpt-4.1``."""
    slug = re.sub(r"[^A-Za-z0-9._]+", "-", spec.split("@", 1)[0]).strip("-.").lower()
    return (slug or "model")[:60]


STAMP_FORMAT = "%Y%m%dT%H%M%SZ"
"""A new run folder's last part: the UTC time the run was named (so names sort by age)."""


def new_run_path(spec: str, split: str, *, root: Path = RUNS_DIR) -> Path:
    return root / f"{model_slug(spec)}-{split}-{time.strftime(STAMP_FORMAT, time.gmtime())}"


def new_run_pattern(spec: str, split: str, *, root: Path = RUNS_DIR) -> str:
    """How the folder a run will be given is named, for a caller that names none yet (the
    dry run): the time in it is the run's own start, not the caller's."""
    return f"{root / model_slug(spec)}-{split}-<UTC start time, {STAMP_FORMAT}>"


def find_resumable(config: Mapping[str, Any], *, root: Path = RUNS_DIR) -> Path | None:
    """The newest run folder of this model and split whose configuration matches, so
    that the same command without --out picks up where it stopped."""
    spec = str((config.get("model") or {}).get("spec", ""))
    prefix = f"{model_slug(spec)}-{config.get('split')}-"
    if not root.is_dir():
        return None
    candidates = sorted(
        (p for p in root.iterdir() if p.is_dir() and p.name.startswith(prefix)),
        key=lambda p: p.name,
        reverse=True,
    )
    for folder in candidates:
        if not (folder / CONFIG_NAME).exists():
            continue
        try:
            old = read_config(folder)
        except DataError:
            continue
        if config_mismatch(old, config) is None:
            return folder
    return None
