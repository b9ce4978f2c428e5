"""Outputs of upstream's own scripts, brought in as a run folder (``import-upstream``).

    import_upstream("outputs/", "runs/gpt-4.1-upstream", source=resolve_source())

Upstream's ``scripts/generate_e2e.py`` writes, per domain, task and model, one JSON file
(``source.json`` for ``--task direct``, ``prolog.json`` for ``prolog``, the few-shot
mode, ``standalone_prolog.json`` for ``standalone``, the zero-shot mode): a list of the
cases in the split's order, each with its ``id``, the ``prompt`` sent and the K
``answers`` with their ``generation_statuses`` and ``generation_errors``.  Its
``bootstrap_outputs.py`` finds them as ``outputs/<domain>/<mode>/<model path>/<file>``
(the model path is e.g. ``openai/gpt-4.1-2025-04-14``); that is the layout read here:

    OUTPUTS_DIR/<domain>/direct/<model path>/source.json
    OUTPUTS_DIR/<domain>/few_shot/<model path>/prolog.json
    OUTPUTS_DIR/<domain>/zero_shot/<model path>/standalone_prolog.json

Every reply becomes one record (a case's answers are its samples 0..K-1) judged through
the runner's own ``evaluate_attempt`` with the paper reader.  A program mode's programs
are not run again where upstream's own outputs of them are there
(``OUTPUTS_DIR/<domain>/swipl/<mode>/<model>-fewshot.txt``, ``upstream_swipl``): the
reader reads what upstream's run printed, so the import equals ``bootstrap_outputs.py``
even where this machine's sandbox would run a program otherwise.  Without them (or for
a program the file does not hold) the program runs in the harness's sandbox, as
``eval --protocol paper`` runs it, and config.json and the command say so.  The run's
protocol is ``paper``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..data.cases import Case, describe_source, load_cases
from ..data.domains import DOMAINS, Domain
from ..data.sources import DataSource
from ..errors import DataError
from ..evaluation.provenance import imported_config
from ..evaluation.runner import evaluate_attempt
from ..models.base import Completion
from ..prompting.render import Prompt, prompt_hash
from ..reading.reader import Reader, reader_for
from ..solver import Limits, Solver
from ..solver.execution import Execution
from ..store.config import CASE_ORDER_KEY
from ..store.imported import refuse_existing, write_imported_run
from ..store.record import Record
from ..store.run import Run
from ..store.spec import RunSpec
from ..vocabulary.chat import Message
from ..vocabulary.modes import Mode
from ..vocabulary.protocols import ProtocolName
from .upstream_swipl import SwiplOutput, find_swipl_output, read_swipl_output

PROTOCOL: ProtocolName = "paper"
"""Upstream's outputs are the paper protocol's first attempts, read by its reader."""

MODE_FILES: dict[str, tuple[Mode, str]] = {
    "direct": ("direct", "source.json"),
    "few_shot": ("few-shot", "prolog.json"),
    "zero_shot": ("zero-shot", "standalone_prolog.json"),
}
"""Upstream's mode folder -> our mode and the file ``generate_e2e.py`` writes for it."""

DOMAIN_FOLDERS: dict[str, str] = {**{name: name for name in DOMAINS}, "uscis-aao": "uscis"}
"""Upstream's domain folder -> our domain (its outputs say ``uscis``, its data
``uscis-aao``)."""

OK_STATUSES = ("ok", None, "")
"""The generation statuses upstream reads a reply of (bootstrap_outputs.py)."""


@dataclass(frozen=True)
class UpstreamOutput:
    """One output file of ``generate_e2e.py``."""

    domain: Domain
    mode: Mode
    model: str
    """The model path below the mode folder, e.g. ``openai/gpt-4.1-2025-04-14``."""
    path: Path
    folder: Path
    """The domain's folder (``<domain>``, upstream's spelling), where ``swipl/`` sits."""


@dataclass(frozen=True)
class UpstreamImport:
    """What an import wrote, and how its replies were read."""

    run: Run
    """The run folder written, read back: every reader of a run takes it."""
    model: str
    files: int
    abstained: int
    failed_generations: int
    """Replies upstream's script recorded as not generated (a status other than ok)."""
    programs: dict[str, str]
    """Per ``<domain> <mode>`` of a program mode: where its programs' runs come from
    (upstream's ``swipl/`` file, or run again here)."""
    rerun: int
    """Programs run again in this machine's sandbox (none of upstream's output held them)."""


def find_outputs(root: Path, model: str | None = None) -> list[UpstreamOutput]:
    """The output files of ``root`` (the ``outputs`` folder), of the one model it holds
    or of ``model``; one sentence when the folder is not such a layout."""
    if not root.is_dir():
        raise DataError(f"{root} is not a folder (expected upstream's outputs folder).")
    found: list[UpstreamOutput] = []
    unknown: list[str] = []
    for domain_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        mode_dirs = [domain_dir / m for m in MODE_FILES if (domain_dir / m).is_dir()]
        if not mode_dirs:
            continue  # not a domain folder of generate_e2e's (e.g. bootstrap_results/)
        domain_name = DOMAIN_FOLDERS.get(domain_dir.name)
        if domain_name is None:
            unknown.append(domain_dir.name)
            continue
        for mode_dir in mode_dirs:
            mode, file_name = MODE_FILES[mode_dir.name]
            for path in sorted(mode_dir.rglob(file_name)):
                parts = path.parent.relative_to(mode_dir).parts
                name = "/".join(parts) or model or ""
                found.append(UpstreamOutput(DOMAINS[domain_name], mode, name, path, domain_dir))
    if unknown:
        raise DataError(
            f"{root} has outputs of unknown domain(s) {', '.join(unknown)}; upstream's "
            f"domain folders are {', '.join(DOMAIN_FOLDERS)}."
        )
    if not found:
        layout = ", ".join(f"<domain>/{m}/<model>/{f}" for m, (_, f) in MODE_FILES.items())
        raise DataError(f"{root} holds no output of upstream's generate_e2e.py ({layout}).")
    return _one_model(root, found, model)


def _one_model(root: Path, found: list[UpstreamOutput], model: str | None) -> list[UpstreamOutput]:
    models = sorted({o.model for o in found})
    if "" in models:
        where = next(o.path for o in found if not o.model)
        raise DataError(
            f"{where} sits directly in its mode folder, so its model cannot be told; "
            "name it with --model."
        )
    if model is not None:
        chosen = [o for o in found if o.model == model.strip("/")]
        if not chosen:
            raise DataError(f"{root} has no outputs of model {model}; it has {', '.join(models)}.")
        return chosen
    if len(models) > 1:
        raise DataError(
            f"{root} holds outputs of {len(models)} models ({', '.join(models)}); "
            "choose one with --model."
        )
    return found


def read_output(output: UpstreamOutput) -> list[dict[str, Any]]:
    """The cases of one output file, each checked to hold what generate_e2e.py writes."""
    try:
        rows = json.loads(output.path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{output.path} cannot be read as JSON ({exc}).") from None
    if not isinstance(rows, list) or not all(
        isinstance(r, dict) and isinstance(r.get("answers"), list) for r in rows
    ):
        raise DataError(
            f"{output.path} is not an output of generate_e2e.py (a list of cases, each "
            "with its answers)."
        )
    return rows


def match_cases(
    output: UpstreamOutput, rows: Sequence[dict[str, Any]], split: Sequence[Case], name: str
) -> list[Case]:
    """The split's case of each row, by id; the rows must follow the split's order, as
    generate_e2e.py writes them (upstream's bootstrap draws cases in the file's order)."""
    by_id = {c.id: (i, c) for i, c in enumerate(split)}
    matched: list[Case] = []
    last = -1
    for row in rows:
        case_id = str(row.get("id", ""))
        if case_id not in by_id:
            raise DataError(
                f"{output.path}: case {case_id or '(no id)'} is not a case of the {name} "
                f"split of {output.domain.name}."
            )
        position, case = by_id[case_id]
        if position <= last:
            raise DataError(
                f"{output.path}: case {case_id} is out of the {name} split's order "
                "(generate_e2e.py writes the cases in the split's order)."
            )
        last = position
        matched.append(case)
    return matched


def _completion(row: dict[str, Any], sample: int, mode: Mode, recorded: bool) -> Completion:
    """A reply as the runner would have received it.  A reply upstream recorded as not
    generated is a failed request, except a non-empty one in a program mode: upstream's
    process_generated_prolog.py runs whatever text there is, whatever its status; and
    except an empty one whose run upstream ``recorded``: its reader read that run's
    output (its stand-in program's), so it is read here too."""
    text = _text(row, sample)
    errors = row.get("generation_errors") or []
    # The case's token counts were billed once for its K replies: the first carries them
    # (as a backend's first completion of an n=K request does).
    tokens_in = int(row.get("prompt_tokens") or 0) if sample == 0 else 0
    tokens_out = int(row.get("generated_tokens") or 0) if sample == 0 else 0
    if _not_generated(row, sample, mode) and not (recorded and mode != "direct"):
        error = errors[sample] if sample < len(errors) and errors[sample] else _status(row, sample)
        return Completion(
            text=None, error=f"upstream: {error}", tokens_in=tokens_in, tokens_out=tokens_out
        )
    return Completion(text=text, tokens_in=tokens_in, tokens_out=tokens_out)


def _text(row: dict[str, Any], sample: int) -> str:
    text = row["answers"][sample]
    return "" if text is None else str(text)


def _status(row: dict[str, Any], sample: int) -> object:
    statuses = row.get("generation_statuses") or []
    return statuses[sample] if sample < len(statuses) else None


def _not_generated(row: dict[str, Any], sample: int, mode: Mode) -> bool:
    """Whether upstream recorded the reply as not generated and had no text of it to
    run (a program mode runs any text, whatever its status)."""
    if _status(row, sample) in OK_STATUSES:
        return False
    return mode == "direct" or not _text(row, sample).strip()


def _prompt(row: dict[str, Any]) -> Prompt:
    # The user message as generate_e2e.py recorded it; its system message is not in
    # the output file.
    messages = (Message(role="user", content=str(row.get("prompt") or "")),)
    return Prompt(
        messages=messages, template="upstream", template_hash="", prompt_hash=prompt_hash(messages)
    )


@dataclass(frozen=True)
class _Job:
    domain: Domain
    case: Case
    mode: Mode
    sample: int
    prompt: Prompt
    completion: Completion
    recorded: Execution | None
    """Upstream's own run of the reply's program (its swipl/ output), if there is one."""


def _swipl_output(output: UpstreamOutput) -> SwiplOutput | None:
    if output.mode == "direct":
        return None
    path = find_swipl_output(output.folder, output.mode, output.model)
    return None if path is None else read_swipl_output(path)


RERUN_NOTE = "run again in this machine's sandbox (no swipl/ output of upstream's holds them)"


@dataclass
class _Read:
    """Upstream's output files read into jobs to judge: each domain's split, where each
    program mode's runs come from, and the generations upstream recorded as failed."""

    outputs_dir: Path
    split: str
    source: DataSource
    splits: dict[str, list[Case]] = field(default_factory=dict)
    jobs: list[_Job] = field(default_factory=list)
    programs: dict[str, str] = field(default_factory=dict)
    failed: int = 0

    def add(self, output: UpstreamOutput) -> None:
        domain = output.domain
        if domain.name not in self.splits:
            self.splits[domain.name] = load_cases(domain, self.split, self.source)
        rows = read_output(output)
        swipl = _swipl_output(output)
        if output.mode != "direct":
            where = RERUN_NOTE if swipl is None else str(swipl.path.relative_to(self.outputs_dir))
            self.programs[f"{domain.name} {output.mode}"] = where
        cases = match_cases(output, rows, self.splits[domain.name], self.split)
        for position, (row, case) in enumerate(zip(rows, cases, strict=True), start=1):
            prompt = _prompt(row)
            for sample in range(len(row["answers"])):
                recorded = swipl.execution(position, sample) if swipl is not None else None
                completion = _completion(row, sample, output.mode, recorded is not None)
                self.failed += _not_generated(row, sample, output.mode)
                self.jobs.append(
                    _Job(domain, case, output.mode, sample, prompt, completion, recorded)
                )


def import_upstream(
    outputs_dir: str | Path,
    out: str | Path,
    *,
    source: DataSource,
    split: str = "hard",
    model: str | None = None,
    limits: Limits | None = None,
) -> UpstreamImport:
    """Write the outputs of upstream's generate_e2e.py under ``outputs_dir`` as a new run
    folder ``out``, every reply judged by the paper reader."""
    folder = Path(out)
    refuse_existing(folder)
    outputs = find_outputs(Path(outputs_dir), model)
    name = outputs[0].model
    reader = reader_for(PROTOCOL)
    read = _Read(Path(outputs_dir), split, source)
    for output in outputs:
        read.add(output)
    jobs, splits, programs, failed = read.jobs, read.splits, read.programs, read.failed
    run_limits = limits or Limits()
    rerun = sum(j.mode != "direct" and j.recorded is None and not j.completion.error for j in jobs)
    if rerun:
        with Solver(limits=run_limits) as solver:
            records = asyncio.run(_judge(jobs, reader, solver, name))
    else:
        records = asyncio.run(_judge(jobs, reader, None, name))
    config = _config(Path(outputs_dir), outputs, records, splits, split, source, name, run_limits)
    config["upstream"]["programs"] = programs
    config["upstream"]["programs_run_again"] = rerun
    written = write_imported_run(folder, config, [(r, None) for r in records])
    return UpstreamImport(
        run=written,
        model=name,
        files=len(outputs),
        abstained=sum(r.first.outcome == "abstain" for r in records),
        failed_generations=failed,
        programs=programs,
        rerun=rerun,
    )


async def _judge(
    jobs: list[_Job], reader: Reader, solver: Solver | None, model: str
) -> list[Record]:
    """Every reply through the runner's evaluate_attempt, upstream's recorded run of its
    program read where there is one, else ``solver.size`` programs run at a time; the
    records in the order of the jobs."""
    slots = asyncio.Semaphore(solver.size if solver is not None else 1)

    async def run_here(program: str) -> Execution:
        assert solver is not None, "a program without upstream's output needs a solver"
        async with slots:
            return await solver.arun(program, toplevel=reader.toplevel)

    async def one(job: _Job) -> Record:
        recorded = job.recorded

        async def read_recorded(_program: str) -> Execution:
            assert recorded is not None
            return recorded

        execute = run_here if recorded is None else read_recorded
        attempt, _ = await evaluate_attempt(
            job.domain, job.case, job.mode, job.prompt, 0, job.completion, execute, reader=reader
        )
        case = job.case
        return Record(job.domain.name, case.id, job.mode, job.sample, case.gold, model, [attempt])

    return list(await asyncio.gather(*(one(job) for job in jobs)))


def _config(
    root: Path,
    outputs: Sequence[UpstreamOutput],
    records: Sequence[Record],
    splits: dict[str, list[Case]],
    split: str,
    source: DataSource,
    model: str,
    limits: Limits,
) -> dict[str, Any]:
    domains = tuple(dict.fromkeys(o.domain.name for o in outputs))
    modes = tuple(m for m, _ in MODE_FILES.values() if any(o.mode == m for o in outputs))
    imported = {(r.domain, r.case_id) for r in records}
    spec = RunSpec(
        model=model,
        domains=domains,
        split=split,
        modes=modes,
        k=tuple(
            (d, 1 + max((r.sample for r in records if r.domain == d), default=0)) for d in domains
        ),
        attempts=1,
        limits=limits,
        protocol=PROTOCOL,
    )
    return {
        **imported_config(spec, "upstream"),
        "protocol": PROTOCOL,
        CASE_ORDER_KEY: {d: [c.id for c in splits[d] if (d, c.id) in imported] for d in domains},
        "data": describe_source(source),
        "upstream": {
            "outputs": str(root.resolve()),
            "files": [str(o.path.relative_to(root)) for o in outputs],
        },
    }
