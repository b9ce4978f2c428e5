"""Reading the user's YAML option files (``--prices``, ``--costs``): one mapping, or one
sentence saying what is wrong."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError


def read_mapping(
    file: Path, what: str, shape: str, error: type[ConfigError] = ConfigError
) -> Mapping[Any, Any]:
    """The file's top-level mapping; ``error`` naming ``what`` the file is (e.g. "prices
    file") and the ``shape`` it should have otherwise."""
    try:
        doc = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise error(f"The {what} {file} cannot be read ({exc.strerror}).") from None
    except yaml.YAMLError:
        raise error(f"The {what} {file} is not valid YAML.") from None
    if not isinstance(doc, Mapping):
        raise error(f"The {what} {file} should {shape}.")
    return doc
