"""A Harbor jobs folder, brought back as a run folder (``deonticbench import-harbor``).

    import_jobs("jobs/", "runs/terminus-2-harbor")

Every trial folder (one with a ``result.json`` naming its ``task_name``; folder names
are truncated, so the name is read from the file) of a task of our export or of DAR's
becomes one record of its domain × case × agentic mode; repeated trials of a task are
its samples, in the order they started.  The answer is re-judged by the harness, never
taken from Harbor's reward:

* program modes run the ``solution.pl`` the trial kept as an artifact in the harness's
  sandbox (the agentic judging, ``agents.judge``); direct mode reads the kept
  ``output/answer.txt``;
* a trial without those artifacts (DAR's tasks keep none) is read from its verifier's
  output: the ``Got:`` line, the raw answer the verifier found, read by the harness's
  direct-answer reader (``$1,166`` is 1166);
* a trial that left no readable answer (an exception before any answer, no file, no
  answer line) is an abstention whose reason names the exception: never dropped, never
  correct.

Tokens and cost come from the trial's agent result, the trajectory from
``agent/trajectory.json`` (stored through ``store.trajectory``).  ``harbor.jsonl`` in
the run folder keeps, per record, what DAR's scorer reads (expected, got, exception,
missing output), for ``deonticbench score --dar-rules``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ...agents import (
    ANSWER_FILE,
    SOLUTION_FILE,
    Judgement,
    agent_info,
    count_tool_calls,
    judge_workspace,
    trial_attempt,
)
from ...data.cases import Case, describe_source, load_cases
from ...data.domains import DOMAINS, Domain
from ...data.sources import DataSource
from ...errors import DataError
from ...evaluation.provenance import imported_config
from ...reading.answers import Answer, read_direct_answer
from ...scoring import dar_readings, dar_scorer
from ...solver import Limits, Solver
from ...store.imported import refuse_existing, write_imported_run
from ...store.record import Record
from ...store.run import Run
from ...store.spec import RunSpec
from ...vocabulary.modes import Mode
from .naming import TaskIndex
from .verifier import TASK_WORKDIR

DAR_FILE = dar_readings.DAR_VIEW_FILE
"""Per record, what DAR's scorer reads of the trial (``score --dar-rules``)."""
_GOT_LINE = "Got:"


@dataclass(frozen=True)
class HarborTrial:
    """One trial folder and its ``result.json``."""

    folder: Path
    result: dict[str, Any]

    @property
    def task_name(self) -> str:
        return str(self.result.get("task_name") or "")

    @property
    def exception(self) -> str | None:
        info = self.result.get("exception_info") or {}
        kind = info.get("exception_type")
        return str(kind) if kind else None

    @property
    def exception_text(self) -> str:
        info = self.result.get("exception_info") or {}
        message = str(info.get("exception_message") or "").strip().splitlines()
        return f"{self.exception}: {message[0]}" if message else str(self.exception)

    @property
    def never_ran(self) -> bool:
        """Harbor stopped the trial before its agent started (an environment that could
        not start): nothing it kept was made by the agent."""
        return bool(self.exception) and not self.result.get("agent_execution")

    @property
    def started(self) -> str:
        return str(self.result.get("started_at") or "")

    def seconds(self, part: str | None = None) -> float:
        span = self.result.get(part) if part else self.result
        if not isinstance(span, dict):
            return 0.0
        try:
            start = datetime.fromisoformat(str(span["started_at"]).replace("Z", "+00:00"))
            end = datetime.fromisoformat(str(span["finished_at"]).replace("Z", "+00:00"))
        except (KeyError, TypeError, ValueError):
            return 0.0
        return max(0.0, (end - start).total_seconds())

    @property
    def agent_name(self) -> str:
        info = self.result.get("agent_info") or {}
        config = (self.result.get("config") or {}).get("agent") or {}
        return str(info.get("name") or config.get("name") or "unknown")

    @property
    def model_name(self) -> str:
        config = (self.result.get("config") or {}).get("agent") or {}
        return str(config.get("model_name") or self.agent_name)

    @property
    def agent_result(self) -> dict[str, Any]:
        return self.result.get("agent_result") or {}

    def verifier_output(self) -> str | None:
        path = self.folder / "verifier" / "test-stdout.txt"
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None

    def kept_workspace(self, relative: str) -> Path | None:
        """The host folder standing for ``/app`` when the trial collected ``/app/<relative>``
        as an artifact (``artifacts/manifest.json``), whether the file was there or not
        (Harbor marks a missing one "failed"); None when the task declared no such
        artifact (DAR's tasks)."""
        manifest = self.folder / "artifacts" / "manifest.json"
        try:
            entries = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("source") == f"{TASK_WORKDIR}/{relative}":
                kept = (self.folder / str(entry.get("destination") or "")).resolve()
                workspace = kept.parents[len(Path(relative).parts) - 1]
                if workspace.is_relative_to(self.folder.resolve()):
                    return workspace
        return None


@dataclass
class HarborImport:
    """What ``import_jobs`` wrote, and what it left out."""

    run: Run | None = None
    """The run folder written, read back: every reader of a run takes it (None until
    the records are written)."""
    foreign: list[str] = field(default_factory=list)
    """Task names of trials that are not DeonticBench tasks (not imported)."""
    abstained: int = 0
    from_artifacts: int = 0
    from_verifier: int = 0
    never_ran: int = 0
    """Trials Harbor stopped before their agent started: abstentions naming why."""
    never_ran_because: list[str] = field(default_factory=list)
    """Each distinct exception of those trials (type: first line)."""


def find_trials(jobs_dir: Path) -> list[HarborTrial]:
    """Every trial under ``jobs_dir`` (a jobs folder, one job, or one trial)."""
    trials = []
    for path in sorted(_result_files(jobs_dir)):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"{path} is not a readable Harbor result ({exc}).") from None
        if isinstance(result, dict) and result.get("task_name") and "trial_name" in result:
            trials.append(HarborTrial(path.parent, result))
    return trials


def _result_files(root: Path, depth: int = 0) -> Iterator[Path]:
    if (root / "result.json").is_file():
        yield root / "result.json"
    if depth < 3:
        for child in sorted(p for p in root.iterdir() if p.is_dir()):
            yield from _result_files(child, depth + 1)


def _index(source: DataSource, split: str) -> TaskIndex:
    cases: list[Case] = []
    for domain in DOMAINS.values():
        try:
            cases.extend(load_cases(domain, split, source))
        except DataError:
            continue  # a domain this data source lacks: its tasks are reported as foreign
    return TaskIndex(cases)


def _from_verifier(domain: Domain, trial: HarborTrial) -> Judgement:
    """The answer the trial's verifier echoed (``Got:``), read by the harness."""
    output = trial.verifier_output()
    reason = f"harbor {trial.exception_text}" if trial.exception else None
    if output is None:
        return Judgement(None, Answer.abstain(reason or "no verifier output"))
    got = ""
    for line in output.splitlines():
        if line.startswith(_GOT_LINE):
            got = line[len(_GOT_LINE) :].strip()
    if not got:
        return Judgement(None, Answer.abstain(reason or "no answer line in the verifier's output"))
    return Judgement(got, read_direct_answer(domain, f"Answer: {got}"))


def _judge(
    domain: Domain, mode: Mode, trial: HarborTrial, solver: Solver
) -> tuple[Judgement, bool]:
    """(the judgement, whether it came from the trial's artifacts)."""
    wanted = ANSWER_FILE if mode == "agent-direct" else SOLUTION_FILE
    workspace = trial.kept_workspace(wanted)
    if workspace is not None:
        return judge_workspace(domain, mode, workspace, solver), True
    return _from_verifier(domain, trial), False


def _trajectory(trial: HarborTrial) -> dict[str, Any] | None:
    path = trial.folder / "agent" / "trajectory.json"
    try:
        atif = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return atif if isinstance(atif, dict) else None


def _record(
    domain: Domain, case: Case, mode: Mode, sample: int, trial: HarborTrial, judgement: Judgement
) -> tuple[Record, dict[str, Any] | None]:
    """A trial's record (by the agents' rules for an attempt and ``AgentInfo``) and its
    trajectory."""
    usage = trial.agent_result
    reason = judgement.answer.reason
    ended = (
        f"harbor {trial.exception_text}"
        if trial.exception and reason and "harbor" not in reason
        else None
    )
    attempt = trial_attempt(
        judgement,
        domain,
        case.gold,
        prompt_hash=trial.task_name,
        tokens=(int(usage.get("n_input_tokens") or 0), int(usage.get("n_output_tokens") or 0)),
        ended=ended,
        latency_s=trial.seconds("agent_execution"),
    )
    atif = _trajectory(trial)
    calls = count_tool_calls(atif)
    metadata = usage.get("metadata") or {}
    cost = usage.get("cost_usd")
    record = Record(
        domain=domain.name,
        case_id=case.id,
        mode=mode,
        sample=sample,
        gold=case.gold,
        model=trial.model_name,
        attempts=[attempt],
        agent=agent_info(
            f"harbor:{trial.agent_name}",
            turns=int(metadata.get("n_episodes") or sum(calls.values()) or 0),
            atif=atif,
            stop_reason=f"harbor:{trial.exception or 'completed'}",
            wall_s=trial.seconds(),
            cost_usd=float(cost) if cost is not None else None,
        ),
    )
    return record, atif


def _dar_view(record: Record, trial: HarborTrial) -> dict[str, Any]:
    """What DAR's scorer reads of a trial (a row of ``harbor.jsonl``)."""
    output = trial.verifier_output()
    expected, got = dar_scorer.read_verifier_output(output or "")
    return {
        "key": list(record.key),
        "task_name": trial.task_name,
        "trial": trial.folder.name,
        "expected": expected,
        "got": got,
        "exception": trial.exception,
        "missing_stdout": output is None,
        "harbor_reward": ((trial.result.get("verifier_result") or {}).get("rewards") or {}).get(
            "reward"
        ),
    }


def import_jobs(
    jobs_dir: str | Path, out: str | Path, *, source: DataSource, split: str = "hard"
) -> HarborImport:
    """Write the trials of a Harbor jobs folder as records of a new run folder."""
    root = Path(jobs_dir)
    if not root.is_dir():
        raise DataError(f"{root} is not a folder (expected a Harbor jobs folder).")
    folder = Path(out)
    refuse_existing(folder)
    trials = find_trials(root)
    if not trials:
        raise DataError(f"{root} holds no Harbor trial (no result.json with a task_name).")
    index = _index(source, split)
    result = HarborImport()
    matched = _matched(trials, index, result)
    if not matched:
        raise DataError(
            f"none of the {len(trials)} trials in {root} is a DeonticBench task of the "
            f"{split} split (task names like deonticbench-zeroshot-airline-...)."
        )
    samples: Counter[tuple[str, str, str]] = Counter()
    pending: list[tuple[Record, HarborTrial, dict[str, Any] | None, dict[str, Any]]] = []
    with Solver(limits=Limits()) as solver:
        for domain, case, mode, trial in matched:
            sample = samples[(domain.name, case.id, mode)]
            samples[(domain.name, case.id, mode)] += 1
            judgement = _trial_judgement(domain, mode, trial, solver, result)
            record, atif = _record(domain, case, mode, sample, trial, judgement)
            if record.final.outcome == "abstain":
                result.abstained += 1
            pending.append((record, trial, atif, _dar_view(record, trial)))
    records = [r for r, _, _, _ in pending]
    config = _config(root, records, pending[0][1], split, source)
    written = write_imported_run(folder, config, [(r, atif) for r, _, atif, _ in pending])
    lines = [json.dumps(dar_view) for _, _, _, dar_view in pending]
    (folder / DAR_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    result.run = written
    return result


def _matched(
    trials: list[HarborTrial], index: TaskIndex, result: HarborImport
) -> list[tuple[Domain, Case, Mode, HarborTrial]]:
    """The trials of DeonticBench tasks with their domain, case and mode, in a stable
    order (task name, start, folder); the others' task names go to ``result.foreign``."""
    matched: list[tuple[Domain, Case, Mode, HarborTrial]] = []
    for trial in sorted(trials, key=lambda t: (t.task_name, t.started, t.folder.name)):
        found = index.find(trial.task_name)
        if found is None:
            result.foreign.append(trial.task_name)
        else:
            matched.append((*found, trial))
    return matched


def _trial_judgement(
    domain: Domain, mode: Mode, trial: HarborTrial, solver: Solver, result: HarborImport
) -> Judgement:
    """The trial's judgement, counted in ``result`` by where it came from: an abstention
    naming Harbor's exception when the agent never ran, else judged from the kept
    artifacts or from the verifier's output."""
    if trial.never_ran:
        # Its empty artifacts folder would otherwise be "judged from kept artifacts".
        reason = f"harbor {trial.exception_text} (the agent never ran)"
        result.never_ran += 1
        if trial.exception_text not in result.never_ran_because:
            result.never_ran_because.append(trial.exception_text)
        return Judgement(None, Answer.abstain(reason))
    judgement, from_artifacts = _judge(domain, mode, trial, solver)
    if from_artifacts:
        result.from_artifacts += 1
    else:
        result.from_verifier += 1
    return judgement


def _config(
    root: Path, records: list[Record], first: HarborTrial, split: str, source: DataSource
) -> dict[str, Any]:
    domains = tuple(dict.fromkeys(r.domain for r in records))
    spec = RunSpec(
        model=first.model_name,
        domains=domains,
        split=split,
        modes=tuple(dict.fromkeys(r.mode for r in records)),
        k=tuple((d, 1 + max(r.sample for r in records if r.domain == d)) for d in domains),
        attempts=1,
    )
    return {
        **imported_config(spec, "harbor"),
        "data": describe_source(source),
        "harbor": {
            "jobs": str(root.resolve()),
            "agent": first.agent_name,
            "trials": len(records),
        },
    }


def read_dar_view(run_dir: str | Path) -> list[dict[str, Any]]:
    """The rows of ``harbor.jsonl``; a run not imported from Harbor has none."""
    rows = dar_readings.read_view_file(run_dir)
    if rows is None:
        raise not_imported(run_dir)
    return rows


def not_imported(run_dir: str | Path) -> DataError:
    """The error of ``score --dar-rules`` on a run that holds no DAR view."""
    return DataError(
        f"{run_dir} was not imported from Harbor (no {DAR_FILE}): --dar-rules scores "
        "runs made by deonticbench import-harbor."
    )


__all__ = [
    "DAR_FILE",
    "HarborImport",
    "HarborTrial",
    "find_trials",
    "import_jobs",
    "not_imported",
    "read_dar_view",
]
