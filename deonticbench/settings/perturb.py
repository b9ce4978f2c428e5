"""Counterfactual cases: the same case with other amounts, and the gold the perturbed
reference program prints (``deonticbench perturb``, docs/robustness.md).

An amount is eligible when it is written as money (``$236422``) exactly once in the case
text and question, and its value is a constant of exactly one case fact of the reference
program (the rule/fact split, ``split``), and appears once in that fact.  Each variant
moves every eligible amount by a factor drawn in [0.7, 1.3], rounded as the original was
(to its trailing zeros, or its decimals), in the text and in the fact alike.  Its gold is
what the perturbed program (rules, perturbed facts, query) prints in the sandbox.  A case
yields variants only when its own reference reproduced its gold and its split recombines;
a variant is kept only when its program prints an answer.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..data.cases import Case, load_cases, variant_case_id
from ..data.domains import Domain
from ..data.sources import DataSource
from ..data.statutes import fetch_statute, statute_paths
from ..data.upstream import GENERATE_SCRIPT, upstream_files
from ..errors import DataError
from ..reading.answers import answer_from_execution
from ..solver import Solver
from .split import CaseSplit, join_parts, split_cases

SPREAD = 0.3
"""Money moves within ±30 %."""
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_MONEY = re.compile(rf"\$\s?({_NUM})(?![\d,]\d)")
_NUMBER = re.compile(rf"(?<![\w.]){_NUM}(?![\w])")


@dataclass(frozen=True)
class Amount:
    """An eligible amount: its text in the case and its value."""

    text: str
    value: Decimal


@dataclass
class PerturbReport:
    """What ``perturb`` did for one domain."""

    domain: str
    cases: int = 0
    variants: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    """Cases that gave no variant, by reason."""
    dropped_variants: int = 0
    """Variants whose perturbed program printed no answer."""


def eligible_amounts(case: Case, split: CaseSplit) -> list[Amount]:
    """The money amounts a variant may change (see the module's docstring)."""
    assert split.split is not None
    text = f"{case.text}\n{case.question}"
    fact_values = Counter(
        value
        for _, constants in split.split.fact_constants
        for value in (_decimal(c) for c in constants)
        if value is not None
    )
    stated = Counter(_decimal(m.group(0)) for m in _NUMBER.finditer(text))
    out: list[Amount] = []
    for match in _MONEY.finditer(case.text):
        value = _decimal(match.group(1))
        if value is None or value == 0 or stated[value] != 1 or fact_values[value] != 1:
            continue
        if len(_number_spots(split.split.facts, value)) != 1:
            continue
        out.append(Amount(match.group(1), value))
    return out


def _decimal(text: str) -> Decimal | None:
    cleaned = text.replace(",", "")
    return Decimal(cleaned) if re.fullmatch(r"-?\d+(\.\d+)?", cleaned) else None


def _number_spots(program_part: str, value: Decimal) -> list[re.Match[str]]:
    return [m for m in _NUMBER.finditer(program_part) if _decimal(m.group(0)) == value]


def moved(amount: Amount, rng: random.Random) -> Decimal:
    """The amount times a factor in [1 - SPREAD, 1 + SPREAD], rounded as it was written,
    never equal to it and never below one unit of its rounding."""
    value = amount.value
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent < 0:
        step = Decimal(1).scaleb(exponent)
    else:
        digits = str(int(value))
        zeros = len(digits) - len(digits.rstrip("0"))
        step = Decimal(10) ** min(zeros, len(digits) - 1)
    factor = Decimal(str(round(rng.uniform(1 - SPREAD, 1 + SPREAD), 6)))
    new = (value * factor / step).to_integral_value() * step
    if new == value:
        new = value + step
    return max(new, step)


def _written(new: Decimal, like: str) -> str:
    """``new`` written as ``like`` was: thousands separators when it had them."""
    text = f"{new:f}"
    if "," in like:
        whole, _, frac = text.partition(".")
        text = f"{int(whole):,}" + (f".{frac}" if frac else "")
    return text


def make_variants(
    case: Case, split: CaseSplit, count: int, seed: int
) -> list[tuple[dict[str, Any], str]]:
    """Up to ``count`` variants of ``case``: (row without its gold, perturbed program)."""
    assert split.split is not None
    amounts = eligible_amounts(case, split)
    out: list[tuple[dict[str, Any], str]] = []
    for number in range(1, count + 1):
        rng = random.Random(f"{seed}\0{case.id}\0{number}")
        text, facts, changes = case.text, split.split.facts, []
        for amount in amounts:
            new = moved(amount, rng)
            written = _written(new, amount.text)
            text = re.sub(rf"\$(\s?){re.escape(amount.text)}(?![\d,]\d)", rf"$\g<1>{written}", text)
            spot = _number_spots(facts, amount.value)[0]
            facts = facts[: spot.start()] + f"{new:f}" + facts[spot.end() :]
            changes.append({"from": amount.text, "to": written})
        program = join_parts(split.split.rules, facts, split.split.query)
        row = {
            "id": variant_case_id(case.id, number),
            "text": text,
            "question": case.question,
            "reference_prolog": program,
            "original_id": case.id,
            "perturbation": changes,
        }
        out.append((row, program))
    return out


def perturb_domain(
    domain: Domain,
    cases: Sequence[Case],
    solver: Solver,
    *,
    variants: int,
    seed: int,
) -> tuple[list[dict[str, Any]], PerturbReport]:
    """Every kept variant of ``cases`` as upstream rows, and the domain's report."""
    if domain.label_kind != "numeric":
        raise DataError(f"perturb changes amounts: {domain.name} has no numeric answer.")
    report = PerturbReport(domain.name, cases=len(cases))
    pending: list[dict[str, Any]] = []
    programs: list[str] = []
    for case, split in zip(cases, split_cases(cases, solver), strict=True):
        if not split.kept:
            report.skipped[_reason(split.dropped or "no split")] += 1
            continue
        if not eligible_amounts(case, split):
            report.skipped["no eligible amount"] += 1
            continue
        for row, program in make_variants(case, split, variants, seed):
            pending.append(row)
            programs.append(program)
    rows: list[dict[str, Any]] = []
    for row, execution in zip(pending, solver.map(programs), strict=True):
        answer = answer_from_execution(domain, execution)
        if not isinstance(answer.value, float):
            report.dropped_variants += 1
            continue
        rows.append({**row, "label": round(answer.value)})
    report.variants = len(rows)
    return rows, report


def _reason(text: str) -> str:
    return text.split(" (")[0].split(":")[0]


def write_variants(
    out: Path,
    domain: Domain,
    split: str,
    rows: Sequence[dict[str, Any]],
    source: DataSource,
) -> None:
    """Write the variants as a data folder in the upstream layout: ``data/<dir>/<split>.json``,
    the domain's shared statutes under ``statutes/``, upstream's prompt files (for the
    paper protocol), and its whole split without the originals (so a few-shot pool never
    shows a variant's own case)."""
    folder = out / "data" / domain.mirror_dir
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{split}.json").write_text(
        json.dumps(list(rows), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    originals = {row["original_id"] for row in rows}
    if source.kind == "local" and source.path is not None:
        whole = source.path / "data" / domain.mirror_dir / "whole.json"
        if whole.exists() and split != "whole":
            kept_text = {(c.text, c.question) for c in load_cases(domain, split, source)}
            others = [
                r
                for r in json.loads(whole.read_text(encoding="utf-8"))
                if r.get("id") not in originals
                and (r.get("text"), r.get("question")) not in kept_text
            ]
            (folder / "whole.json").write_text(
                json.dumps(others, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
            )
    # The paper protocol reads upstream's prompt texts from the data folder it evaluates:
    # variants of a local mirror that has them carry the same verified files, so a run on
    # them needs no download (from elsewhere, that run downloads them as it would anyway).
    local = source.path if source.kind == "local" else None
    if local is not None and (local / GENERATE_SCRIPT).is_file():
        for path, text in upstream_files(source).texts:
            (out / path).parent.mkdir(parents=True, exist_ok=True)
            (out / path).write_text(text, encoding="utf-8", newline="")
    if domain.statute_source != "shared":
        return
    target = out / "statutes" / domain.statute_dir
    local = source.path / "statutes" / domain.statute_dir if source.path is not None else None
    if local is not None and local.is_dir():
        shutil.copytree(local, target, dirs_exist_ok=True)
        return
    for path in statute_paths(domain):
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(fetch_statute(path))


def _where(source: DataSource) -> str:
    return str(source.path) if source.kind == "local" else f"the hub dataset {source.repo}"


class PerturbOutputError(DataError):
    """The output folder of ``perturb`` already holds data."""


def perturb_split(
    domains: Sequence[Domain],
    *,
    split: str,
    out: Path,
    source: DataSource,
    variants: int = 3,
    seed: int = 0,
    solver: Solver | None = None,
) -> list[PerturbReport]:
    """Write counterfactual variants of ``domains``' ``split`` to the data folder ``out``."""
    _check_request(domains, out, variants)
    own = solver is None
    staging = _staging_beside(out)
    pool = solver or Solver()
    try:
        reports = _perturb_into(staging, domains, split, source, pool, variants, seed)
        if out.exists():
            out.rmdir()  # checked empty above
        staging.rename(out)
    finally:
        if own:
            pool.close()
        shutil.rmtree(staging, ignore_errors=True)
    return reports


def _check_request(domains: Sequence[Domain], out: Path, variants: int) -> None:
    """Refuse, before anything is read or written, a request perturb cannot carry out: no
    variant asked for, an ``out`` that already holds files, a domain without amounts."""
    if variants < 1:
        raise DataError("perturb needs at least one variant per case.")
    if out.exists() and any(out.iterdir()):
        raise PerturbOutputError(f"{out} is not empty: perturb writes a new data folder.")
    for domain in domains:
        if domain.label_kind != "numeric":
            raise DataError(f"perturb changes amounts: {domain.name} has no numeric answer.")


def _staging_beside(out: Path) -> Path:
    """A new empty folder beside ``out`` that the variants are written to and that is moved
    into place at the end: a failure (a corrupt source, a stop) leaves no half-written
    folder that a re-run would refuse.  PerturbOutputError when it cannot be made."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    except OSError as exc:
        raise PerturbOutputError(f"cannot write {out}: {exc.strerror or exc}.") from None


def _perturb_into(
    staging: Path,
    domains: Sequence[Domain],
    split: str,
    source: DataSource,
    pool: Solver,
    variants: int,
    seed: int,
) -> list[PerturbReport]:
    """Write each domain's variants to ``staging`` and report on them; DataError when a
    domain's split holds no case or when no case yielded a variant at all."""
    reports: list[PerturbReport] = []
    for domain in domains:
        cases = load_cases(domain, split, source)
        if not cases:
            raise DataError(
                f"the {split} split of {domain.name} holds no case in {_where(source)}: "
                "nothing to perturb."
            )
        rows, report = perturb_domain(domain, cases, pool, variants=variants, seed=seed)
        write_variants(staging, domain, split, rows, source)
        reports.append(report)
    if not any(r.variants for r in reports):
        raise DataError(
            f"perturb made no variant of the {split} split (no case had an amount that "
            "could be changed and still printed an answer); nothing was written."
        )
    return reports
