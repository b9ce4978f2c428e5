"""``deonticbench export --format harbor --protocol dar``: DAR's task folders.

The folders DAR's adapters write, byte for byte (the tree DAR's ``run_adapter.py`` makes
for the same cases; tests/integrations/test_dar_export.py compares them):

    <out>/deonticbench-fewshot-sara-numeric-tax-case-10/
        instruction.md              DAR's template, rendered for the case
        task.toml                   DAR's template, rendered (its subdomain tag)
        environment/Dockerfile      DAR's, copying the files below to /app
        environment/statute.txt     -> /app/statute.txt
        environment/examples.txt    -> /app/examples.txt (few-shot)
        tests/test.sh               DAR's verifier
        tests/expected_label.txt    the gold label, which only the verifier reads

What goes in them is ``prompting.dar_task.dar_task``'s, which ``eval --protocol dar`` shows
its agents too.  Nothing else is written (no manifest: DAR's tree has none); the command
prints where DAR's files and the data came from.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ...data.dar_files import dar_origin
from ...data.domains import DAR_DOMAINS, Domain
from ...data.sources import SPLITS, DataSource
from ...errors import ConfigError
from ...prompting.dar_task import DAR_PROMPT_MODES, DarTask, check_dar_domain, dar_task
from .naming import PROMPT_MODES, task_name
from .tasks import TaskExportReport, cases_to_export, task_folder

ENVIRONMENT = "environment"
TESTS = "tests"


def write_dar_task(folder: Path, task: DarTask) -> None:
    """Write one task folder in DAR's layout (``folder`` must not exist)."""
    folder.mkdir(parents=True)
    files = {
        "instruction.md": task.instruction,
        "task.toml": task.task_toml,
        f"{ENVIRONMENT}/Dockerfile": task.dockerfile,
        f"{TESTS}/test.sh": task.test_sh,
        f"{TESTS}/expected_label.txt": task.expected_label,
    }
    # DAR's Dockerfile copies each of them from environment/ to /app.
    files.update({f"{ENVIRONMENT}/{name}": text for name, text in task.app_files.items()})
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        # bytes: no newline translation, as DAR's adapter writes them on Linux
        path.write_bytes(text.encode("utf-8"))
    (folder / TESTS / "test.sh").chmod(0o755)


def export_dar_tasks(
    out: str | Path,
    *,
    source: DataSource,
    domains: Sequence[Domain],
    prompt_mode: str,
    split: str = "hard",
    limit: int | None = None,
    skip_missing: bool = False,
    root: str | os.PathLike[str] | None = None,
) -> TaskExportReport:
    """Write DAR's task for each case of ``domains`` on ``split`` into ``out``.

    ``skip_missing`` (every domain asked for) leaves out the domains DAR did not run and
    any the data lacks, saying why; a domain named outside DAR's set is refused."""
    if prompt_mode not in DAR_PROMPT_MODES:
        raise ConfigError(
            f"unknown prompt mode {prompt_mode!r} for DAR's tasks; "
            f"choose from {', '.join(DAR_PROMPT_MODES)}."
        )
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}.")
    report = TaskExportReport(out=Path(out), prompt_mode=prompt_mode, split=split)
    chosen: list[Domain] = []
    for domain in domains:
        if skip_missing and domain.name not in DAR_DOMAINS:
            report.skipped[domain.name] = "not in DAR's task set"
            continue
        check_dar_domain(domain.name)  # refused in one sentence before anything is written
        chosen.append(domain)
    framing = PROMPT_MODES[prompt_mode]
    with task_folder(report.out) as folder:
        for domain in chosen:
            cases = cases_to_export(domain, source, report, limit, skip_missing)
            for case in cases or []:
                name = task_name(domain, case.id, framing)
                write_dar_task(folder / name, dar_task(case, prompt_mode, root=root, source=source))
                report.tasks.append(name)
            if cases is not None:
                report.counts[domain.name] = len(cases)
    report.what, report.origin = "DAR tasks", f", from DAR's files ({dar_origin(root)})"
    return report


__all__ = ["export_dar_tasks", "write_dar_task"]
