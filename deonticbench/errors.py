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
