"""Errors a user can cause.  Each carries one sentence that the CLI prints as is."""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DataError",
    "DeonticBenchError",
    "MissingExtraError",
    "SandboxError",
    "missing_extra",
]


class DeonticBenchError(Exception):
    """Base class: the message is a complete sentence meant for the user."""


class DataError(DeonticBenchError):
    """Missing, malformed or unverifiable benchmark data."""


class ConfigError(DeonticBenchError):
    """A bad flag, model spec, missing key or unreachable server."""


class SandboxError(DeonticBenchError):
    """The sandbox could not be started (not a program failure)."""


class MissingExtraError(ConfigError):
    """A feature needs an optional dependency that is not installed."""


def missing_extra(
    feature: str, extra: str | None, *, package: str | None = None, also: str = ""
) -> MissingExtraError:
    """The one sentence for a feature whose optional dependency is missing, naming what
    installs it: ``raise missing_extra("--tokenizer", "train", package="tokenizers")``.
    ``extra`` is a name of pyproject's ``[project.optional-dependencies]``; None for a
    core dependency that is somehow missing (a broken install).  ``also`` is a clause
    added before the full stop (another way to install it, or where it runs)."""
    needs = f"the {package} package" if package else f"the '{extra}' extra"
    target = f"deonticbench[{extra}]" if extra else "deonticbench"
    more = f" {also}" if also else ""
    return MissingExtraError(
        f"{feature} needs {needs}, which is not installed: pip install '{target}'{more}."
    )
