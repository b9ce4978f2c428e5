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
the runner's own ``evaluate_attempt`` with the paper reader, its programs run in the
harness's sandbox: an imported reply and the same reply sent by ``eval --protocol paper``
become the same record.  Upstream's ``swipl/`` outputs are not read: the programs are
run again here.  The run's protocol is ``paper``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass
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
from ..store.imported import ImportedRun, refuse_existing, write_imported_run
from ..store.record import Record
from ..store.spec import RunSpec
from ..vocabulary.chat import Message
from ..vocabulary.modes import Mode
from ..vocabulary.protocols import ProtocolName

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


@dataclass(frozen=True)
class UpstreamImport:
    """What an import wrote, and how its replies were read."""

    run: ImportedRun
    model: str
    files: int
    abstained: int
    failed_generations: int
    """Replies upstream's script recorded as not generated (a status other than ok)."""


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
                found.append(
                    UpstreamOutput(DOMAINS[domain_name], mode, "/".join(parts) or model or "", path)
                )
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


def _completion(row: dict[str, Any], sample: int, mode: Mode) -> Completion:
    """A reply as the runner would have received it.  A reply upstream recorded as not
    generated is a failed request, except a non-empty one in a program mode: upstream's
    process_generated_prolog.py runs whatever text there is, whatever its status."""
    text = row["answers"][sample]
    text = "" if text is None else str(text)
    statuses = row.get("generation_statuses") or []
    errors = row.get("generation_errors") or []
    status = statuses[sample] if sample < len(statuses) else None
    # The case's token counts were billed once for its K replies: the first carries them
    # (as a backend's first completion of an n=K request does).
    tokens_in = int(row.get("prompt_tokens") or 0) if sample == 0 else 0
    tokens_out = int(row.get("generated_tokens") or 0) if sample == 0 else 0
    if status not in OK_STATUSES and (mode == "direct" or not text.strip()):
        error = errors[sample] if sample < len(errors) and errors[sample] else status
        return Completion(
            text=None, error=f"upstream: {error}", tokens_in=tokens_in, tokens_out=tokens_out
        )
    return Completion(text=text, tokens_in=tokens_in, tokens_out=tokens_out)


def _prompt(row: dict[str, Any]) -> Prompt:
    # The user message as generate_e2e.py recorded it; its system message is not in
    # the output file.
    messages = (Message(role="user", content=str(row.get("prompt") or "")),)
    return Prompt(
        messages=messages, template="upstream", template_hash="", prompt_hash=prompt_hash(messages)
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
    splits: dict[str, list[Case]] = {}
    jobs: list[tuple[Domain, Case, Mode, int, Prompt, Completion]] = []
    failed = 0
    for output in outputs:
        domain = output.domain
        if domain.name not in splits:
            splits[domain.name] = load_cases(domain, split, source)
        rows = read_output(output)
        for row, case in zip(
            rows, match_cases(output, rows, splits[domain.name], split), strict=True
        ):
            prompt = _prompt(row)
            for sample in range(len(row["answers"])):
                completion = _completion(row, sample, output.mode)
                failed += completion.error is not None
                jobs.append((domain, case, output.mode, sample, prompt, completion))
    run_limits = limits or Limits()
    with Solver(limits=run_limits) as solver:
        records = asyncio.run(_judge(jobs, reader, solver, name))
    config = _config(Path(outputs_dir), outputs, records, splits, split, source, name, run_limits)
    written = write_imported_run(folder, config, [(r, None) for r in records])
    return UpstreamImport(
        run=written,
        model=name,
        files=len(outputs),
        abstained=sum(r.first.outcome == "abstain" for r in records),
        failed_generations=failed,
    )


async def _judge(
    jobs: list[tuple[Domain, Case, Mode, int, Prompt, Completion]],
    reader: Reader,
    solver: Solver,
    model: str,
) -> list[Record]:
    """Every reply through the runner's evaluate_attempt, ``solver.size`` programs at a
    time; the records in the order of the jobs."""
    slots = asyncio.Semaphore(solver.size)

    async def execute(program: str) -> Execution:
        async with slots:
            return await solver.arun(program, toplevel=reader.toplevel)

    async def one(job: tuple[Domain, Case, Mode, int, Prompt, Completion]) -> Record:
        domain, case, mode, sample, prompt, completion = job
        attempt, _ = await evaluate_attempt(
            domain, case, mode, prompt, 0, completion, execute, reader=reader
        )
        return Record(domain.name, case.id, mode, sample, case.gold, model, [attempt])

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
