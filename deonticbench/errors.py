"""Errors a user can cause.  Each carries one sentence that the CLI prints as is."""

from __future__ import annotations


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


def missing_extra(feature: str, extra: str) -> MissingExtraError:
    """The one sentence for a feature whose optional dependency is missing, naming the
    extra that installs it, e.g. ``raise missing_extra("--tokenizer", "train") from exc``.
    ``extra`` is the name in pyproject's ``[project.optional-dependencies]``."""
    return MissingExtraError(
        f"{feature} needs the '{extra}' extra, which is not installed: "
        f"pip install 'deonticbench[{extra}]'."
    )
