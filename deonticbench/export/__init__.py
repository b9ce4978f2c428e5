"""Training data from the benchmark: SFT, DPO and RL files for LLaMA-Factory, TRL and verl.

    report = export_dataset("trl-sft", out_dir, source=resolve_source())

See ``examples`` for what goes in (the whole split minus the hard split, prompts as the
harness renders them, reference programs re-verified in the sandbox) and ``formats`` for
the file shapes; ``lengths`` measures completions in a trainer's tokens.  Reads the data
and the reward; hands files to trainers.  ``dataset`` runs one export; every export writes
``manifest.json`` (``manifest``): the data source and its revision (hub commit, or sha256
of the local files read), template hashes, the counts per domain and the sha256 of every
file written.
"""

from __future__ import annotations

from .dataset import export_dataset
from .examples import first_cases
from .formats import FORMATS
from .manifest import data_revision, harness_version

__all__ = [
    "FORMATS",
    "data_revision",
    "export_dataset",
    "first_cases",
    "harness_version",
]
