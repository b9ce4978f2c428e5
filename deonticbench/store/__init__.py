"""Stage 7, the store: a run folder on disk, which every later stage reads.

``RunSpec`` (what a run is), config.json (``config``: fingerprint, resume), records and
records.jsonl (``record``, ``records_file``), the open folder and its lock (``folder``),
run folder names and finding one to resume (``naming``), and provenance (``provenance``,
``environment``: what produced the numbers).  Hands records and config to scoring,
analysis, the report, rewards and exports.
"""

from __future__ import annotations

from .config import CONFIG_NAME, check_resumable, config_mismatch, read_config
from .environment import environment_facts
from .folder import RunFolder, is_run_folder, set_aside
from .naming import find_resumable, model_slug, new_run_path
from .provenance import build_config
from .record import Attempt, Record, RecordKey
from .records_file import RECORDS_NAME, iter_records, read_records, write_replay_file
from .spec import DEFAULT_ATTEMPTS, DEFAULT_CONCURRENCY, SPEC_SCHEMA, RunSpec

__all__ = [
    "CONFIG_NAME",
    "DEFAULT_ATTEMPTS",
    "DEFAULT_CONCURRENCY",
    "RECORDS_NAME",
    "SPEC_SCHEMA",
    "Attempt",
    "Record",
    "RecordKey",
    "RunFolder",
    "RunSpec",
    "build_config",
    "check_resumable",
    "config_mismatch",
    "environment_facts",
    "find_resumable",
    "is_run_folder",
    "iter_records",
    "model_slug",
    "new_run_path",
    "read_config",
    "read_records",
    "set_aside",
    "write_replay_file",
]
