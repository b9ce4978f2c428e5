"""The bootstrap's seeds: one random stream per domain, shared by every run, mode and
stage scored with the same seed (their differences are then paired)."""

from __future__ import annotations

import hashlib

import numpy as np


def domain_rng(seed: int, domain: str) -> np.random.Generator:
    """The generator for one domain's bootstrap.

    Keyed by the domain only: every mode and stage of a domain, and every run scored with
    the same seed, resample the same cases whenever they hold the same case ids, so their
    differences are paired.  Scoring one domain does not shift another's draws.

    The key is a stable hash of the domain's *name*, not its place in ``DOMAINS``: a
    domain added anywhere leaves every other domain's intervals as they were.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(domain_key(domain),)))


def domain_key(domain: str) -> int:
    """A domain's bootstrap stream key: the first 8 bytes of sha256 of its name (Python's
    ``hash`` of a str changes between processes, so it cannot be used)."""
    return int.from_bytes(hashlib.sha256(domain.encode("utf-8")).digest()[:8], "big")
