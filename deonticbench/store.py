"""Where a run lives, re-exported for code written against the old single module.

store.py used to hold five jobs; each now has its own module, and new code imports from
there:

* ``runconfig``: config.json (fingerprint, reading, merging, may-this-run-resume);
* ``recordsfile``: records.jsonl (the one reader with its policy, the line format, the
  replay file);
* ``cache``: the sqlite response cache;
* ``runfolder``: an open run folder (lock, append, set aside);
* ``runs``: naming run folders and finding the one to resume;
* ``environment``: the versions a run was made with.
"""

from __future__ import annotations

from .cache import CachedResponse, ResponseCache, cache_key, default_cache_path
from .environment import environment_facts
from .records import RecordKey
from .recordsfile import (
    RECORDS_NAME,
    LoadedRecords,
    ReadPolicy,
    iter_records,
    json_line,
    read_records,
    write_replay_file,
)
from .runconfig import (
    CONFIG_NAME,
    FINGERPRINT_FIELDS,
    check_resumable,
    config_mismatch,
    fingerprint,
    read_config,
)
from .runfolder import LOCK_NAME, RunFolder, is_run_folder, set_aside
from .runs import RUNS_DIR, find_resumable, model_slug, new_run_path

__all__ = [
    "CONFIG_NAME",
    "FINGERPRINT_FIELDS",
    "LOCK_NAME",
    "RECORDS_NAME",
    "RUNS_DIR",
    "CachedResponse",
    "LoadedRecords",
    "ReadPolicy",
    "RecordKey",
    "ResponseCache",
    "RunFolder",
    "cache_key",
    "check_resumable",
    "config_mismatch",
    "default_cache_path",
    "environment_facts",
    "find_resumable",
    "fingerprint",
    "is_run_folder",
    "iter_records",
    "json_line",
    "model_slug",
    "new_run_path",
    "read_config",
    "read_records",
    "set_aside",
    "write_replay_file",
]
