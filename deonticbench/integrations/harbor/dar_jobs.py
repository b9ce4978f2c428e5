"""DAR's two scorers over a Harbor jobs folder, read directly (``deonticbench score
--dar-rules JOBS_DIR``): the report their scripts print, the same text.

* ``adapters``: the scorer of DAR's adapters (``evaluate_deonticbench.py``).  Each
  argument is a jobs folder holding run folders (or one run folder); a trial is any
  child of a run with a ``result.json``; it is named ``agent / model`` from the trial's
  ``config.json``; of the runs of one agent/model under one argument only the latest (by
  folder name, Harbor's ``%Y-%m-%d__%H-%M-%S``) counts; ``--errors-as-incorrect`` is
  its strict behaviour.
* ``meta-harness``: the scorer of its meta-harness runs (terminus-KIRA,
  ``evaluate_jobs.py``).  Job folders are found up to three levels down (a trial is a
  folder whose ``result.json`` names its task); the agent is the module of the agent's
  import path (``agents.`` dropped), the model the last part of its name; the latest-run
  rule groups job folders by parent and by the job ``config.json``'s agents; it has no
  strict behaviour.

Both read only the verifier's ``Normalized expected:`` / ``Normalized got:`` lines
(``dar_scorer.read_verifier_output``) and score by DAR's rules (``scoring.dar_scorer``).  See
docs/harbor.md.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ...scoring import dar_scorer
from ...store.records_file import RECORDS_NAME

ScorerName = Literal["adapters", "meta-harness"]
SCORERS: tuple[ScorerName, ...] = ("adapters", "meta-harness")
HARBOR_CONFIG = "config.json"
"""Harbor's own settings file in a job folder and in each trial folder (which agent, which
model): Harbor's layout, not a run folder's config.json, which only the store opens."""

DATASETS = ("sara-numeric", "airline", "sara-binary", "uscis-aao")
"""DAR's four datasets in the order their tables print them."""
ACCURACY_DATASETS = ("sara-numeric", "airline")
ERROR_TYPES = (
    "RuntimeError",
    "AgentTimeoutError",
    "RewardFileNotFoundError",
    "ServiceUnavailableError",
)
"""The exception types both scorers' CSV counts in columns of their own."""
_USAGE = ("n_input_tokens", "n_output_tokens", "n_cache_tokens")


@dataclass(frozen=True)
class JobsTrial:
    """One trial as DAR's scorers read it: the verifier's pair, the exception, usage."""

    trial: dar_scorer.DarTrial
    usage: dict[str, Any]

    @property
    def exception(self) -> str | None:
        return self.trial.exception


@dataclass
class LabelTrials:
    """One agent/model's trials: per dataset, and all in the order the scorer met them
    (its token means and cost are float sums, so the order is kept)."""

    datasets: dict[str, list[JobsTrial]]
    found: list[JobsTrial]

    def add(self, dataset: str, trial: JobsTrial) -> None:
        self.datasets.setdefault(dataset, []).append(trial)
        self.found.append(trial)


class Groups(defaultdict[str, LabelTrials]):
    """``groups[label]``: the trials of one agent/model."""

    def __init__(self) -> None:
        super().__init__(lambda: LabelTrials({}, []))


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _read_trial(folder: Path, result: dict[str, Any]) -> JobsTrial:
    """The pair the verifier printed, "" and "" when it printed nothing; parse failure as
    both scorers define it (an empty answer in a trial without exception)."""
    agent_result = result.get("agent_result") or {}
    info = result.get("exception_info") or {}
    usage: dict[str, Any] = {key: agent_result.get(key) or 0 for key in _USAGE}
    usage["cost_usd"] = agent_result.get("cost_usd") or 0.0
    stdout = folder / "verifier" / "test-stdout.txt"
    missing = not stdout.exists()
    expected, got = ("", "") if missing else dar_scorer.read_verifier_output(stdout.read_text())
    usage["parse_failure"] = not missing and got == "" and not info
    exception = info.get("exception_type")
    trial = dar_scorer.DarTrial(expected, got, exception=exception, missing_stdout=missing)
    return JobsTrial(trial, usage)


def _dataset(task_name: str, meta_harness: bool) -> str | None:
    for name in ("sara-numeric", "sara-binary", "airline", "uscis-aao"):
        if f"-{name}-" in task_name or (meta_harness and task_name.endswith(f"-{name}")):
            return name
    if meta_harness:
        # the meta-harness scorer's fallback: the name with its hyphens taken out
        squeezed = task_name.replace("-", "")
        for name in ("sara-numeric", "sara-binary", "uscis-aao", "airline"):
            if name.replace("-", "") in squeezed:
                return name
    return None


def _subfolders(folder: Path) -> list[Path]:
    return sorted(child for child in folder.iterdir() if child.is_dir())


# ---- the adapters' scorer -------------------------------------------------------------


def _run_folders(jobs: Path) -> list[Path]:
    """The runs under one argument: its subfolders when any of them has a child with a
    ``result.json``; else the argument itself when a subfolder has one; else its
    subfolders."""
    subfolders = _subfolders(jobs)
    for candidate in subfolders:
        if any(c.is_dir() and (c / "result.json").exists() for c in candidate.iterdir()):
            return subfolders
    if any((d / "result.json").exists() for d in subfolders):
        return [jobs]
    return subfolders


def _adapters_label(trial_folder: Path) -> str:
    config = trial_folder / HARBOR_CONFIG
    if not config.exists():
        return "unknown"
    agent = json.loads(config.read_text()).get("agent", {})
    return f"{agent.get('name') or 'unknown'} / {agent.get('model_name') or 'unknown'}"


def _collect_adapters(jobs_dirs: Sequence[Path], out: list[str]) -> Groups:
    found: dict[tuple[Path, str, Path], list[tuple[str, JobsTrial]]] = defaultdict(list)
    foreign = 0
    for jobs in jobs_dirs:
        for run in _run_folders(jobs):
            for folder in sorted(run.iterdir()):
                if not (folder / "result.json").exists():
                    continue
                result = json.loads((folder / "result.json").read_text())
                dataset = _dataset(result.get("task_name", ""), meta_harness=False)
                if dataset is None:
                    foreign += 1
                    continue
                label = _adapters_label(folder)
                found[(jobs, label, run)].append((dataset, _read_trial(folder, result)))
    if foreign:
        out.append(f"(skipped {foreign} non-deonticbench trials)\n")
    latest: dict[tuple[Path, str], Path] = {}
    for jobs, label, run in found:
        if (jobs, label) not in latest or run.name > latest[(jobs, label)].name:
            latest[(jobs, label)] = run
    older: dict[tuple[Path, str], list[Path]] = defaultdict(list)
    for jobs, label, run in found:
        if run != latest[(jobs, label)]:
            older[(jobs, label)].append(run)
    for (jobs, label), runs in sorted(older.items()):
        names = [r.name for r in sorted(runs)]
        out.append(
            f"  [latest-only] {label} in {jobs}: using {latest[(jobs, label)].name}, "
            f"skipping {names}"
        )
    if older:
        out.append("")
    groups = Groups()
    for (jobs, label, run), trials in found.items():
        if run == latest[(jobs, label)]:
            for dataset, trial in trials:
                groups[label].add(dataset, trial)
    return groups


# ---- the meta-harness scorer ----------------------------------------------------------


def _is_trial(folder: Path) -> bool:
    return bool(_json(folder / "result.json").get("task_name"))


def _job_folders(root: Path) -> list[Path]:
    """Job folders (holding trials) at the root or one or two levels below it."""
    subfolders = _subfolders(root)
    if any(_is_trial(d) for d in subfolders):
        return [root]
    jobs = []
    for sub in subfolders:
        children = _subfolders(sub)
        if any(_is_trial(d) for d in children):
            jobs.append(sub)
            continue
        jobs.extend(c for c in children if any(_is_trial(d) for d in _subfolders(c)))
    return jobs


def _agent_module(import_path: str) -> str:
    return re.sub(r"^agents\.", "", import_path.split(":")[0]) if import_path else ""


def _job_agents(job: Path) -> str:
    """The latest-run rule's key: the job config's agents (import path @ model)."""
    agents = _json(job / HARBOR_CONFIG).get("agents") or []
    return "|".join(f"{a.get('import_path', '')}@{a.get('model_name', '')}" for a in agents)


def _latest_jobs(jobs: list[Path], out: list[str]) -> list[Path]:
    grouped: dict[tuple[Path, str], list[Path]] = defaultdict(list)
    for job in dict.fromkeys(jobs):
        grouped[(job.parent, _job_agents(job))].append(job)
    kept: list[Path] = []
    for (_, agents), members in grouped.items():
        if len(members) > 1 and agents:
            latest = max(members, key=lambda d: d.name)
            for older in members:
                if older != latest:
                    out.append(f"(skipping older run {older.name} in favour of {latest.name})")
            kept.append(latest)
        else:
            kept.extend(members)
    return sorted(kept, key=lambda d: (d.parent, d.name))


def _collect_meta_harness(inputs: Sequence[Path], out: list[str]) -> Groups:
    groups = Groups()
    foreign = 0
    for job in _latest_jobs([j for p in inputs for j in _job_folders(p)], out):
        config_module = _agent_module(
            (_json(job / HARBOR_CONFIG).get("agent") or {}).get("import_path", "")
        )
        fallback = config_module or re.sub(r"^(evolve|smoke)-", "", job.name)
        for folder in sorted(job.iterdir()):
            if not _is_trial(folder):
                continue
            result = _json(folder / "result.json")
            dataset = _dataset(result.get("task_name", ""), meta_harness=True)
            if dataset is None:
                foreign += 1
                continue
            agent = (result.get("config") or {}).get("agent") or {}
            module = _agent_module(agent.get("import_path", "")) or fallback
            model = (agent.get("model_name") or "").split("/")[-1] or "unknown"
            groups[f"{module} / {model}"].add(dataset, _read_trial(folder, result))
    if foreign:
        out.append(f"(skipped {foreign} non-deonticbench trials)\n")
    return groups


# ---- the report -----------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    dataset: str
    metric: str
    score: float
    n: int
    correct: int
    details: str


def _row(dataset: str, trials: Sequence[JobsTrial], strict: bool, scorer: ScorerName) -> _Row:
    plain = [t.trial for t in trials]
    n, correct = len(plain), dar_scorer.correct_count(plain, strict)
    if dataset in ACCURACY_DATASETS:
        details = f"{correct}/{n}" + (" correct" if scorer == "adapters" else "")
        return _Row(dataset, "Accuracy", correct / n if n else 0.0, n, correct, details)
    per_class = dar_scorer.class_scores(dar_scorer.scored_pairs(plain, strict))
    f1 = sum(s.f1 for s in per_class.values()) / len(per_class) if per_class else 0.0
    details = "  ".join(
        f"{cls}: P={s.precision:.2f} R={s.recall:.2f} F1={s.f1:.2f}" for cls, s in per_class.items()
    )
    return _Row(dataset, "Macro-F1", f1, n, correct, details)


def _table(groups: Groups, strict: bool, scorer: ScorerName) -> list[str]:
    rule = "  " + "-" * (63 if scorer == "adapters" else 65)
    lines = ["", "(strict scoring: errored trials counted as incorrect)"] if strict else []
    for label in sorted(groups):
        lines += ["", f"Model: {label}" if scorer == "adapters" else label]
        lines.append(f"  {'Dataset':<15} {'Metric':<10} {'Score':>8}  {'N':>5}  Details")
        lines.append(rule)
        total_correct = total_n = 0
        for dataset in DATASETS:
            if dataset in groups[label].datasets:
                r = _row(dataset, groups[label].datasets[dataset], strict, scorer)
                total_correct, total_n = total_correct + r.correct, total_n + r.n
                lines.append(
                    f"  {r.dataset:<15} {r.metric:<10} {r.score:>8.3f}  {r.n:>5}  {r.details}"
                )
        if total_n:
            lines.append(rule)
            overall = total_correct / total_n
            lines.append(f"  {'Overall':<15} {'Accuracy':<10} {overall:>8.3f}  {total_n:>5}")
    return lines


def _usage_columns(trials: Sequence[JobsTrial], scorer: ScorerName) -> dict[str, str]:
    """Mean tokens over the trials that used any input, total cost, error counts."""
    ran = [t.usage for t in trials if t.usage["n_input_tokens"] > 0]
    n_ran = len(ran) or 1
    sum_in = sum(u["n_input_tokens"] for u in ran)
    sum_out = sum(u["n_output_tokens"] for u in ran)
    mean_in, mean_out = sum_in / n_ran, sum_out / n_ran
    # the two scripts round the mean total from different sums
    total = mean_in + mean_out if scorer == "adapters" else (sum_in + sum_out) / n_ran
    counts = {kind: sum(1 for t in trials if t.exception == kind) for kind in ERROR_TYPES}
    parse_failures = sum(1 for t in trials if t.usage["parse_failure"])
    return {
        "avg_input_tokens": f"{mean_in:.0f}",
        "avg_output_tokens": f"{mean_out:.0f}",
        "avg_total_tokens": f"{total:.0f}",
        "avg_cache_tokens": f"{sum(u['n_cache_tokens'] for u in ran) / n_ran:.0f}",
        "total_cost_usd": f"{sum(t.usage['cost_usd'] for t in trials):.4f}",
        "n_trials": str(len(trials)),
        "total_errors": str(sum(counts.values()) + parse_failures),
        **{kind: str(count) for kind, count in counts.items()},
        "parse_failure": str(parse_failures),
    }


def _csv(groups: Groups, strict: bool, scorer: ScorerName) -> str:
    rows = []
    for label in sorted(groups):
        if scorer == "adapters":
            agent, sep, rest = label.partition(" / ")
            row = {"model": f"{agent} / {rest.split('/')[-1]}" if sep else label.split("/")[-1]}
        else:
            agent, _, model = label.partition(" / ")
            row = {"agent": agent, "model": model}
        datasets = groups[label].datasets
        scored = {d: _row(d, datasets[d], strict, scorer) for d in DATASETS if d in datasets}
        row.update({d: f"{scored[d].score:.4f}" if d in scored else "" for d in DATASETS})
        if scorer == "meta-harness":
            n = sum(r.n for r in scored.values())
            correct = sum(r.correct for r in scored.values())
            row["overall_accuracy"] = f"{correct / n:.4f}" if n else ""
        rows.append(row | _usage_columns(groups[label].found, scorer))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


_COLLECT: dict[ScorerName, Callable[[Sequence[Path], list[str]], Groups]] = {
    "adapters": _collect_adapters,
    "meta-harness": _collect_meta_harness,
}


def pick_scorer(jobs_dirs: Sequence[Path]) -> ScorerName:
    """``meta-harness`` when every trial's agent is loaded by import path and has no name
    (how meta-harness runs terminus-KIRA), else ``adapters``."""
    agents = [
        (_json(path).get("config") or {}).get("agent") or {}
        for jobs in jobs_dirs
        for path in jobs.rglob("result.json")
        if _json(path).get("task_name")
    ]
    by_path = agents and all(a.get("import_path") and not a.get("name") for a in agents)
    return "meta-harness" if by_path else "adapters"


def jobs_report(
    jobs_dirs: Sequence[Path], scorer: ScorerName, errors_as_incorrect: bool = False
) -> str:
    """What the chosen scorer prints for these jobs folders (its table, then its CSV)."""
    head = "Jobs: " if scorer == "adapters" else "Inputs: "
    out = [head + ", ".join(str(d) for d in jobs_dirs)]
    groups = _COLLECT[scorer](jobs_dirs, out)
    if not groups:
        return "\n".join([*out, "No deonticbench results found."]) + "\n"
    out += _table(groups, errors_as_incorrect, scorer)
    out.append("")
    return "\n".join(out) + "\n" + _csv(groups, errors_as_incorrect, scorer)


def is_jobs_folder(path: Path) -> bool:
    """A folder holding Harbor trials (a ``result.json`` up to four levels down) that is
    not a run folder of this harness."""
    if not path.is_dir() or (path / RECORDS_NAME).is_file():
        return False
    return any(
        True for depth in range(5) for _ in path.glob("/".join(["*"] * depth + ["result.json"]))
    )


__all__ = ["SCORERS", "JobsTrial", "ScorerName", "is_jobs_folder", "jobs_report", "pick_scorer"]
