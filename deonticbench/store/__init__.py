"""The store, after evaluation: a run folder on disk, which every later stage reads.

``RunSpec`` (what a run is), config.json (``config``: fingerprint, resume), records and
records.jsonl (``record``, ``records_file``), the open folder and its lock (``folder``),
a run folder opened for reading, with the policy for older folders (``run``: ``read_run``,
the one way every later stage opens a run, and ``Run``, what it returns),
run folder names and finding one to resume (``naming``), the facts of the machine a run
was made on (``environment``; ``evaluation.provenance`` builds the whole provenance),
agentic trajectories in ATIF (``trajectory``), the one step that writes a run imported
from another tool (``imported``), and the provider batches an ``eval --batch`` run
submitted (``batches``: an intent before each create, the id right after).  Hands records
and config to scoring, analysis, the report, rewards and exports.
"""

from __future__ import annotations

from .batches import BATCHES_NAME, BatchLog, Chunk
from .config import AGENT_TOOL_MODE_KEY, CASE_ORDER_KEY, check_existing, recorded_model_spec
from .environment import environment_facts
from .folder import RunFolder, is_run_folder, require_run_folder, set_aside
from .imported import refuse_existing, write_imported_run, written_line
from .naming import find_resumable, new_run_path, new_run_pattern
from .record import (
    STOP_EXPLANATIONS,
    STOP_REASONS,
    TURN_KINDS,
    AgentInfo,
    Attempt,
    Record,
    RecordKey,
)
from .records_file import RECORDS_NAME, read_records
from .run import READING_KEY, LoadReport, Run, RunLike, Session, read_run
from .spec import (
    AGENT_TOOL_SETS,
    CONFIDENCE_SIGNALS,
    DEFAULT_ATTEMPTS,
    LOGPROB_PARAM,
    AgentOptions,
    RunSpec,
    parse_params,
)
from .trajectory import (
    add_agent_turn,
    add_step,
    finish_trajectory,
    new_trajectory,
    read_trajectory,
    trajectory_path,
    write_trajectory,
)

__all__ = [
    "AGENT_TOOL_MODE_KEY",
    "AGENT_TOOL_SETS",
    "BATCHES_NAME",
    "CASE_ORDER_KEY",
    "CONFIDENCE_SIGNALS",
    "DEFAULT_ATTEMPTS",
    "LOGPROB_PARAM",
    "READING_KEY",
    "RECORDS_NAME",
    "STOP_EXPLANATIONS",
    "STOP_REASONS",
    "TURN_KINDS",
    "AgentInfo",
    "AgentOptions",
    "Attempt",
    "BatchLog",
    "Chunk",
    "LoadReport",
    "Record",
    "RecordKey",
    "Run",
    "RunFolder",
    "RunLike",
    "RunSpec",
    "Session",
    "add_agent_turn",
    "add_step",
    "check_existing",
    "environment_facts",
    "find_resumable",
    "finish_trajectory",
    "is_run_folder",
    "new_run_path",
    "new_run_pattern",
    "new_trajectory",
    "parse_params",
    "read_records",
    "read_run",
    "read_trajectory",
    "recorded_model_spec",
    "refuse_existing",
    "require_run_folder",
    "set_aside",
    "trajectory_path",
    "write_imported_run",
    "write_trajectory",
    "written_line",
]
