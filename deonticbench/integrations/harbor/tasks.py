"""``deonticbench export --format harbor``: one Harbor task per case.

    <out>/deonticbench-zeroshot-sara-numeric-tax-case-10/
        instruction.md          the agentic instruction (the harness's template)
        task.toml               Harbor's schema: limits, no network, metadata, artifacts
        environment/Dockerfile  Debian with swi-prolog-nox, python3 and tmux
        environment/workspace/  the agentic workspace (statutes, case, examples, output/)
        solution/reference.pl   the case's reference program, prepared as validate runs it
        solution/solve.sh       the oracle: puts solution/reference.pl to work
        tests/test.sh           runs tests/verifier.pyz, the harness's own judging
        tests/case.json         domain, case id, mode and the gold label
        tests/verifier.pyz

The gold label is only under ``tests/``, which Harbor copies in after the agent has
finished.  ``manifest.json`` at the top says what was exported from which data.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from ...agents.workspace import ANSWER_FILE, SOLUTION_FILE, build_workspace, instruction_text
from ...data.cases import Case, load_cases
from ...data.domains import Domain
from ...data.sources import SPLITS, DataSource
from ...errors import ConfigError, DataError
from ...evaluation.validate import reference_program
from ...export import data_revision, harness_version
from ...prompting.exemplars import choose_exemplars, exemplar_pool
from ...store.spec import AgentOptions
from ...vocabulary.modes import Mode
from ._bundle import verifier_zip
from .naming import FRAMINGS, PROMPT_MODES, task_name
from .verifier import CASE_FILE, TASK_WORKDIR

AGENT_TIMEOUT_S = AgentOptions.timeout_s
"""DAR's budget per task, and the harness's agentic default (``store.spec.AgentOptions``)."""
VERIFIER_TIMEOUT_S = 120.0
CPUS = 1
MEMORY_MB = 2048
TOOL_SET = "terminal"
"""Harbor's agents bring their own tools: the instruction says only that there is a terminal."""
MANIFEST = "manifest.json"

DOCKERFILE = f"""\
# DeonticBench task environment: SWI-Prolog runs the agent's program, python3 the
# verifier, tmux the terminal agents.  Only Debian's own packages are fetched.
FROM debian:bookworm-slim
RUN apt-get update \\
    && apt-get install -y --no-install-recommends swi-prolog-nox python3 tmux \\
    && rm -rf /var/lib/apt/lists/*
WORKDIR {TASK_WORKDIR}
COPY workspace/ {TASK_WORKDIR}/
"""

TEST_SH = f"""\
#!/bin/bash
# DeonticBench verifier: judge what the agent left in {TASK_WORKDIR} by the harness's rules.
# reward.json is written whatever happens (a verifier that cannot start scores 0).
mkdir -p /logs/verifier
if ! python3 -I /tests/verifier.pyz /tests {TASK_WORKDIR} /logs/verifier; then
  echo "the verifier could not run (is python3 installed?)"
  echo '{{"reward": 0, "correct": 0, "wrong": 0, "abstain": 1}}' > /logs/verifier/reward.json
fi
exit 0
"""

SOLVE_PROGRAM_SH = f"""\
#!/bin/bash
# The oracle: leave the case's reference program where an agent leaves its program.
set -euo pipefail
mkdir -p {TASK_WORKDIR}/output
cp /solution/reference.pl {TASK_WORKDIR}/{SOLUTION_FILE}
"""

SOLVE_DIRECT_SH = f"""\
#!/bin/bash
# The oracle: run the case's reference program and leave the answer line it prints.
set -euo pipefail
mkdir -p {TASK_WORKDIR}/output
swipl -q -f /solution/reference.pl -t halt > {TASK_WORKDIR}/{ANSWER_FILE}
"""


@dataclass
class TaskExportReport:
    out: Path
    prompt_mode: str
    split: str
    counts: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    tasks: list[str] = field(default_factory=list)
    what: str = "Harbor tasks"
    """Whose tasks, in words: the harness's (Harbor tasks) or DAR's."""
    origin: str = ""
    """Where the tasks' files came from, when not from the harness (DAR's files)."""

    def lines(self) -> list[str]:
        """What the export wrote, one line per domain, then where."""
        return [
            *(f"{name}: {count} tasks" for name, count in self.counts.items()),
            *(f"{name}: skipped ({reason})" for name, reason in self.skipped.items()),
            f"wrote {len(self.tasks)} {self.what} ({self.prompt_mode}, {self.split}) to "
            f"{self.out}{self.origin}",
        ]


def task_toml(metadata: dict[str, Any], direct: bool) -> str:
    """The task's ``task.toml``, written by ``tomli_w`` so that every string, whatever
    characters it holds (outside the Basic Multilingual Plane, control characters),
    reads back through ``tomllib`` as it was."""
    artifacts = [f"{TASK_WORKDIR}/{ANSWER_FILE if direct else SOLUTION_FILE}"]
    document: dict[str, Any] = {
        "schema_version": "1.4",
        "artifacts": artifacts,
        "metadata": metadata,
        "agent": {"timeout_sec": AGENT_TIMEOUT_S},
        "verifier": {"timeout_sec": VERIFIER_TIMEOUT_S},
        "environment": {
            "cpus": CPUS,
            "memory_mb": MEMORY_MB,
            "network_mode": "no-network",
            "workdir": TASK_WORKDIR,
        },
    }
    return tomli_w.dumps(document)


def portable_revision(revision: dict[str, Any]) -> dict[str, Any]:
    """The data revision as a task folder states it: without a local folder's path.

    Task folders are shared (DAR publishes its own), and the path is a fact of the machine
    that exported them, not of the data: the sha256 of each file read, or the hub commit,
    already say which data it was."""
    return {key: value for key, value in revision.items() if key != "path"}


def _write(path: Path, text: str | bytes, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(0o755)


def write_task(
    folder: Path,
    domain: Domain,
    case: Case,
    mode: Mode,
    split: str,
    revision: dict[str, Any],
    exemplars: Sequence[Case] = (),
) -> None:
    """Write one task folder (``folder`` must not exist)."""
    direct = mode == "agent-direct"
    folder.mkdir(parents=True)
    _write(
        folder / "instruction.md", instruction_text(case, mode, TOOL_SET, workspace=TASK_WORKDIR)
    )
    metadata = {
        "domain": domain.name,
        "case_id": case.id,
        "mode": mode,
        "split": split,
        "category": "legal-reasoning",
        "tags": ["legal", "deontic", "prolog", domain.name],
        "data_revision": portable_revision(revision),
    }
    _write(folder / "task.toml", task_toml(metadata, direct))
    _write(folder / "environment" / "Dockerfile", DOCKERFILE)
    build_workspace(case, mode, folder / "environment" / "workspace", exemplars=exemplars)
    _write(folder / "solution" / "reference.pl", reference_program(domain, case).text)
    _write(
        folder / "solution" / "solve.sh",
        SOLVE_DIRECT_SH if direct else SOLVE_PROGRAM_SH,
        executable=True,
    )
    gold = {"domain": domain.name, "case_id": case.id, "mode": mode, "gold": case.gold}
    _write(folder / "tests" / CASE_FILE, json.dumps(gold, indent=2) + "\n")
    _write(folder / "tests" / "verifier.pyz", verifier_zip())
    _write(folder / "tests" / "test.sh", TEST_SH, executable=True)


def export_tasks(
    out: str | Path,
    *,
    source: DataSource,
    domains: Sequence[Domain],
    prompt_mode: str,
    split: str = "hard",
    limit: int | None = None,
    seed: int = 0,
    skip_missing: bool = False,
) -> TaskExportReport:
    """Write one Harbor task per case of ``domains`` on ``split`` into ``out``."""
    if prompt_mode not in PROMPT_MODES:
        raise ConfigError(
            f"unknown prompt mode {prompt_mode!r} for Harbor tasks; "
            f"choose from {', '.join(PROMPT_MODES)}."
        )
    if split not in SPLITS:
        raise ConfigError(
            f"unknown split {split!r} for Harbor tasks; choose from {', '.join(SPLITS)}."
        )
    framing = PROMPT_MODES[prompt_mode]
    mode = FRAMINGS[framing]
    report = TaskExportReport(out=Path(out), prompt_mode=prompt_mode, split=split)
    with task_folder(report.out) as folder:
        for domain in domains:
            cases = cases_to_export(domain, source, report, limit, skip_missing)
            if cases is None:
                continue
            revision = data_revision(source, [domain], split)
            pool: list[Case] = []
            if mode == "agent-few-shot":
                pool, _ = exemplar_pool(domain, source)
            for case in cases:
                name = task_name(domain, case.id, framing)
                exemplars = _exemplars(domain, pool, case, seed) if pool else []
                write_task(folder / name, domain, case, mode, split, revision, exemplars)
                report.tasks.append(name)
            report.counts[domain.name] = len(cases)
    _write_manifest(report, mode, data_revision(source, domains, split), seed)
    return report


@contextmanager
def task_folder(folder: Path) -> Iterator[Path]:
    """An empty output folder for an export (refused if it holds anything), removed again
    if the export fails: nothing half-written is left to be mistaken for a dataset."""
    if folder.exists() and any(folder.iterdir()):
        raise ConfigError(f"{folder} is not empty; choose another --out or remove it.")
    folder.mkdir(parents=True, exist_ok=True)
    try:
        yield folder
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def cases_to_export(
    domain: Domain,
    source: DataSource,
    report: TaskExportReport,
    limit: int | None,
    skip_missing: bool,
) -> list[Case] | None:
    """The first ``limit`` cases of ``domain`` on the report's split; None when the data
    lacks the domain and ``skip_missing`` says to go on (the reason is in the report)."""
    try:
        cases = load_cases(domain, report.split, source)
    except DataError as exc:
        if not skip_missing:
            raise
        report.skipped[domain.name] = str(exc)
        return None
    return cases if limit is None else cases[:limit]


def _exemplars(domain: Domain, pool: list[Case], case: Case, seed: int) -> list[Case]:
    return choose_exemplars(domain, pool, case, seed=seed)


def _write_manifest(
    report: TaskExportReport, mode: str, revision: dict[str, Any], seed: int
) -> None:
    manifest = {
        "harness": "deonticbench",
        "version": harness_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "format": "harbor",
        "prompt_mode": report.prompt_mode,
        "mode": mode,
        "split": report.split,
        "seed": seed,
        "data": portable_revision(revision),
        "domains": dict(report.counts),
        "skipped": dict(report.skipped),
        "tasks": len(report.tasks),
        "verifier_sha256": hashlib.sha256(verifier_zip()).hexdigest(),
    }
    (report.out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


__all__ = [
    "SPLITS",
    "TaskExportReport",
    "cases_to_export",
    "export_tasks",
    "task_folder",
    "task_toml",
    "write_task",
]
