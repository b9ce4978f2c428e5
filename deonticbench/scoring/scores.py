"""Scoring run folders: read ``records.jsonl``, encode outcomes as arrays, bootstrap.

A run folder (written by the runner) holds ``config.json`` and an append-only
``records.jsonl``.  Loading is forgiving: a missing, truncated or corrupt line is
skipped and counted with its reason, duplicate keys keep the first record, and what is
left is scored.  Records are matched to gold labels by case id; cases are put in sorted
id order so that the bootstrap's draws do not depend on the order the runner happened
to write records in.

The public entry point is ``score_runs(paths, bootstrap=1000, seed=0)``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..data.cases import original_case_id
from ..data.domains import DISPLAY_ORDER, DOMAINS, Domain
from ..errors import ConfigError, DeonticBenchError
from ..store.config import CONFIG_NAME
from ..store.folder import RunFolderError as RunFolderError  # re-exported: its old home
from ..store.folder import require_run_folder
from ..store.record import Attempt, Record
from ..store.records_file import RECORDS_NAME, read_records
from ..store.spec import RunSpec
from ..vocabulary.modes import ALL_MODES, Mode, is_agentic, prompted_counterpart
from ..vocabulary.protocols import (
    PROTOCOL_MODES,
    ProtocolName,
    ReaderName,
    check_protocol,
    departure_note,
    mode_protocol,
    recorded_protocol,
    reference_leak_note,
    sampling_departures,
    shows_reference_programs,
)
from .metrics import (
    DEFAULT_BOOTSTRAP,
    NEGATIVE,
    POSITIVE,
    BootstrapEstimate,
    Outcomes,
    Rates,
    bootstrap,
    correct_matrix,
    paired_difference,
    point_metric,
    rates,
)
from .notes import bootstrap_gap_note, cross_protocol_note, run_notes

Stage = Literal["first", "final"]
STAGES: tuple[Stage, ...] = ("first", "final")
"""``first`` is attempt 0 (the paper's protocol); ``final`` the last retry with feedback."""


# -- loading ---------------------------------------------------------------------------


@dataclass
class LoadReport:
    """What loading a run folder skipped, and why."""

    lines: int = 0
    kept: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)

    @property
    def n_skipped(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str | None:
        """One line for the user, or None when nothing was skipped."""
        if not self.skipped:
            return None
        reasons = ", ".join(f"{n} {why}" for why, n in self.skipped.most_common())
        return f"skipped {self.n_skipped} of {self.lines} lines ({reasons})"


@dataclass
class Run:
    path: Path
    config: dict[str, Any]
    records: list[Record]
    report: LoadReport

    @property
    def name(self) -> str:
        return self.path.name

    @cached_property
    def spec(self) -> RunSpec | None:
        """The run's spec as config.json states it (None: the config names no model)."""
        try:
            return RunSpec.from_config(self.config, strict=False)
        except ConfigError:
            return None

    @property
    def model(self) -> str:
        """The model spec from config.json, else from the records."""
        spec = self.spec
        if spec is not None:
            return spec.model
        return self.records[0].model if self.records else "?"

    @property
    def protocol(self) -> ProtocolName:
        """The protocol the run followed (config.json; ``harness`` for a run made before
        protocols existed).  Every figure of the run is printed beside it."""
        return recorded_protocol(self.config)

    def reading(self, mode: str) -> ReaderName:
        """The reader the figures of ``mode`` were read with: a re-read's
        (``rereading.reread_run``), else its protocol's (``mode_protocol``)."""
        return reading_of(self, mode)

    @property
    def split(self) -> str | None:
        """The split config.json names, if it names one."""
        split = self.config.get("split")
        return split if isinstance(split, str) else None

    def planned_k(self, domain: str) -> int | None:
        """Samples per case the run asked for (``config.json`` ``k``), if it says."""
        spec = self.spec
        if spec is None or not isinstance(spec.k, tuple):
            return None
        return dict(spec.k).get(domain)

    @property
    def has_retries(self) -> bool:
        return any(len(r.attempts) > 1 for r in self.records)


READING_KEY = "reading"
"""Set (in memory only) in the config of a re-read run: the reader its figures used."""


def reading_of(run: Run, mode: str) -> ReaderName:
    """The reader a run's figures of ``mode`` were read with: a re-read's, else the
    protocol's (``mode_protocol``)."""
    reading = run.config.get(READING_KEY)
    if reading is not None and mode in PROTOCOL_MODES:
        return check_protocol(reading, what="reader")
    return mode_protocol(run.protocol, mode)


def load_run(path: str | Path) -> Run:
    """Read a run folder; raises ``RunFolderError`` for a path that is not one."""
    folder = require_run_folder(path)
    config_path = folder / CONFIG_NAME
    records_path = folder / RECORDS_NAME
    report = LoadReport()
    config = _read_config(config_path, report)
    records = _read_records(records_path, report) if records_path.is_file() else []
    if not records_path.is_file():
        report.notes.append(f"{RECORDS_NAME} is missing: nothing has been recorded yet")
    return Run(path=folder, config=config, records=records, report=report)


def _read_config(path: Path, report: LoadReport) -> dict[str, Any]:
    if not path.is_file():
        report.notes.append(f"{CONFIG_NAME} is missing: the model name is taken from records")
        return {}
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        report.notes.append(f"{CONFIG_NAME} is unreadable ({exc}); it was ignored")
        return {}
    if not isinstance(config, dict):
        report.notes.append(f"{CONFIG_NAME} is not a JSON object; it was ignored")
        return {}
    return config


def _read_records(path: Path, report: LoadReport) -> list[Record]:
    loaded = read_records(path, policy="forgiving")
    report.lines = loaded.lines
    report.skipped.update(loaded.skipped)
    report.kept = len(loaded.records)
    return list(loaded.records.values())


# -- encoding --------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleDetail:
    """One sample as the per-case table shows it."""

    sample: int
    answer: float | str | None
    outcome: str
    reason: str | None


@dataclass(frozen=True)
class Encoded:
    outcomes: Outcomes
    gold: dict[str, Any]
    """Case id -> the gold label as recorded."""
    samples: dict[str, list[SampleDetail]]
    disagreements: int
    """Samples whose stored outcome differs from the re-judged one."""


def stage_attempt(record: Record, stage: Stage) -> Attempt:
    return record.first if stage == "first" else record.final


def _numeric_value(answer: object) -> float | None:
    # Like outcomes.judge: a string is no number; bools are not numbers either.
    if isinstance(answer, bool) or not isinstance(answer, int | float):
        return None
    value = float(answer)
    return value if math.isfinite(value) else None


def _class_index(domain: Domain, label: object) -> int | None:
    canonical = domain.canonical_label(label) if label is not None else None
    if canonical is None:
        return None
    return POSITIVE if canonical == domain.positive else NEGATIVE


def _gold_value(domain: Domain, gold: object) -> float | None:
    if domain.label_kind == "binary":
        index = _class_index(domain, gold)
        return None if index is None else float(index)
    try:
        return float(int(gold))  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def encode(domain: Domain, records: Iterable[Record], stage: Stage) -> Encoded:
    """Encode one domain's records (one mode) as arrays, cases sorted by id."""
    by_case: dict[str, list[Record]] = {}
    for record in records:
        by_case.setdefault(record.case_id, []).append(record)
    case_ids = sorted(by_case)
    k = max((len(v) for v in by_case.values()), default=1)
    n = len(case_ids)
    gold = np.zeros(n)
    pred = np.zeros((n, k))
    abstain = np.zeros((n, k), dtype=bool)
    present = np.zeros(n, dtype=np.intp)
    gold_raw: dict[str, Any] = {}
    details: dict[str, list[SampleDetail]] = {}
    stored: list[tuple[int, int, str]] = []
    kept_ids: list[str] = []
    for case_id in case_ids:
        group = sorted(by_case[case_id], key=lambda r: r.sample)
        gold_value = _gold_value(domain, group[0].gold)
        if gold_value is None:
            continue  # an unreadable gold label cannot be scored; counted by the caller
        row = len(kept_ids)
        kept_ids.append(case_id)
        gold[row] = gold_value
        gold_raw[case_id] = group[0].gold
        present[row] = len(group)
        for col, record in enumerate(group):
            attempt = stage_attempt(record, stage)
            if domain.label_kind == "numeric":
                value: float | None = _numeric_value(attempt.answer)
            else:
                index = _class_index(domain, attempt.answer)
                value = None if index is None else float(index)
            if value is None or attempt.outcome == "abstain":
                abstain[row, col] = True
            else:
                pred[row, col] = value
            stored.append((row, col, attempt.outcome))
    m = len(kept_ids)
    outcomes = Outcomes(
        kind=domain.label_kind,
        case_ids=tuple(kept_ids),
        gold=gold[:m],
        pred=pred[:m],
        abstain=abstain[:m],
        present=present[:m],
    )
    verdict = correct_matrix(outcomes)
    disagreements = 0
    judged: dict[tuple[int, int], str] = {}
    for row, col, outcome in stored:
        mine = "abstain" if abstain[row, col] else ("correct" if verdict[row, col] else "wrong")
        judged[(row, col)] = mine
        disagreements += mine != outcome
    for row, case_id in enumerate(kept_ids):
        group = sorted(by_case[case_id], key=lambda r: r.sample)
        details[case_id] = [
            SampleDetail(
                sample=r.sample,
                answer=stage_attempt(r, stage).answer,
                outcome=judged[(row, col)],
                reason=stage_attempt(r, stage).abstain_reason,
            )
            for col, r in enumerate(group)
        ]
    return Encoded(outcomes, gold_raw, details, disagreements)


# -- scoring ---------------------------------------------------------------------------


def domain_rng(seed: int, domain: str) -> np.random.Generator:
    """The generator for one domain's bootstrap.

    Keyed by the domain only: every mode and stage of a domain, and every run scored with
    the same seed, resample the same cases whenever they hold the same case ids, so their
    differences are paired.  Scoring one domain does not shift another's draws.

    The key is a stable hash of the domain's *name*, not its place in ``DOMAINS``: a
    domain added anywhere leaves every other domain's intervals as they were.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(domain_key(domain),)))


def domain_key(domain: str) -> int:
    """A domain's bootstrap stream key: the first 8 bytes of sha256 of its name (Python's
    ``hash`` of a str changes between processes, so it cannot be used)."""
    return int.from_bytes(hashlib.sha256(domain.encode("utf-8")).digest()[:8], "big")


@dataclass(frozen=True)
class GroupScore:
    """The score of one domain x mode x stage of a run."""

    run: str
    model: str
    domain: str
    mode: Mode
    stage: Stage
    metric: str
    n_cases: int
    k: int
    n_samples: int
    estimate: BootstrapEstimate
    rates: Rates
    encoded: Encoded


@dataclass
class RunScores:
    run: Run
    groups: list[GroupScore]
    stages: tuple[Stage, ...]
    bootstrap: int
    seed: int
    notes: list[str] = field(default_factory=list)

    def group(self, domain: str, mode: str, stage: str) -> GroupScore | None:
        for g in self.groups:
            if (g.domain, g.mode, g.stage) == (domain, mode, stage):
                return g
        return None

    @property
    def modes(self) -> list[Mode]:
        present = {g.mode for g in self.groups}
        return [m for m in ALL_MODES if m in present]


@dataclass(frozen=True)
class ScoreRow:
    """One row of the long table: a run x domain x mode x stage, fractions in [0, 1].

    ``mean``/``ci_low``/``ci_high`` are the bootstrap mean and 95% interval; ``point``
    the metric on the full data; ``upper``/``lower`` the interval's distances from the
    mean (the paper's super- and subscripts).  The field order is the CSV's columns.
    """

    domain: str
    mode: Mode
    stage: Stage
    metric: str
    n_cases: int
    k: int
    mean: float
    ci_low: float
    ci_high: float
    accuracy: float
    abstain_rate: float
    wrong_rate: float
    point: float
    upper: float
    lower: float
    n_samples: int
    bootstrap: int
    seed: int
    model: str
    run: str
    protocol: str
    """The protocol the run followed (``vocabulary.protocols``): which figures compare."""

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.columns()}


class NothingToScoreError(DeonticBenchError):
    """No run folder given holds a record that can be scored."""


def require_scorable(scores: Sequence[RunScores]) -> None:
    """Refuse, in one sentence, runs with nothing to score (``score`` and ``report``)."""
    if not any(s.groups for s in scores):
        # Named, so that a typo among several folders is found at once.
        names = ", ".join(str(s.run.path) for s in scores)
        raise NothingToScoreError(
            f"None of the given run folders holds a scorable record ({names})."
        )


def score_rows(scores: Sequence[RunScores]) -> list[ScoreRow]:
    """The long table of scored runs: one row per run x domain x mode x stage."""
    return [score_row(g, s) for s in scores for g in s.groups]


def score_row(g: GroupScore, s: RunScores) -> ScoreRow:
    e = g.estimate
    return ScoreRow(
        domain=g.domain,
        mode=g.mode,
        stage=g.stage,
        metric=g.metric,
        n_cases=g.n_cases,
        k=g.k,
        mean=e.mean,
        ci_low=e.low,
        ci_high=e.high,
        accuracy=g.rates.accuracy,
        abstain_rate=g.rates.abstain,
        wrong_rate=g.rates.wrong,
        point=e.point,
        upper=e.upper,
        lower=e.lower,
        n_samples=g.n_samples,
        bootstrap=s.bootstrap,
        seed=s.seed,
        model=g.model,
        run=g.run,
        protocol=s.run.protocol,
    )


def score_run(run: Run, bootstrap_b: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> RunScores:
    """Score every domain x mode (x stage when retries happened) of a loaded run."""
    if bootstrap_b < 1:
        raise ValueError("the bootstrap needs at least one replicate")
    stages: tuple[Stage, ...] = STAGES if run.has_retries else ("first",)
    groups: list[GroupScore] = []
    notes = [n for n in run.report.notes]
    summary = run.report.summary()
    if summary:
        notes.insert(0, f"{RECORDS_NAME}: {summary}")
    # The caveats the terminal printed under the run's summary, from the same source.
    notes.extend(run_notes(run.records, reference=run.model.split(":")[0] == "reference"))
    for domain in (DOMAINS[name] for name in DISPLAY_ORDER):  # one order in every output
        for mode in ALL_MODES:
            chosen = [r for r in run.records if r.domain == domain.name and r.mode == mode]
            if not chosen:
                continue
            for stage in stages:
                encoded = encode(domain, chosen, stage)
                o = encoded.outcomes
                notes.extend(_group_notes(run, domain.name, mode, stage, chosen, encoded))
                if stage == stages[-1] and encoded.disagreements:
                    notes.append(
                        f"{domain.name} {mode} ({stage}): {encoded.disagreements} sample(s) "
                        "whose stored outcome differs from re-judging; re-judged verdicts used"
                    )
                if o.n_cases == 0:
                    continue
                rng = domain_rng(seed, domain.name)
                estimate = bootstrap(o, bootstrap_b, rng)
                gap = bootstrap_gap_note(
                    domain.name,
                    mode,
                    stage,
                    point=estimate.point,
                    mean=estimate.mean,
                    gold=[int(g) for g in o.gold] if o.kind == "binary" else None,
                )
                if gap:
                    notes.append(gap)
                groups.append(
                    GroupScore(
                        run=run.name,
                        model=run.model,
                        domain=domain.name,
                        mode=mode,
                        stage=stage,
                        metric=o.metric,
                        n_cases=o.n_cases,
                        k=o.k,
                        n_samples=int(o.present.sum()),
                        estimate=estimate,
                        rates=rates(o),
                        encoded=encoded,
                    )
                )
    notes.extend(_leak_notes(run, groups))
    notes.extend(_departure_notes(run, groups))
    return RunScores(
        run=run, groups=groups, stages=stages, bootstrap=bootstrap_b, seed=seed, notes=notes
    )


IMPORTED_PROVIDERS = frozenset({"inspect", "harbor", "upstream"})
"""``config.json``'s ``model.provider`` of a run brought in from another tool's outputs."""


def _group_notes(
    run: Run, domain: str, mode: str, stage: str, chosen: list[Record], encoded: Encoded
) -> list[str]:
    """The caveats of one group's figure: cases not scored, cases short of K, samples
    whose request failed (first stage: the first attempts; final: the last)."""
    notes: list[str] = []
    o = encoded.outcomes
    n_cases_total = len({r.case_id for r in chosen})
    if o.n_cases < n_cases_total and stage == "first":
        notes.append(
            f"{domain} {mode}: {n_cases_total - o.n_cases} case(s) with an "
            "unreadable gold label were not scored"
        )
    planned = run.planned_k(domain)
    short = int((o.present < planned).sum()) if planned else 0
    if short and stage == "first":
        notes.append(
            f"{domain} {mode}: {short} of {o.n_cases} case(s) have fewer than "
            f"K={planned} samples; each is scored on the samples present"
        )
    failed = sum(1 for r in chosen if (r.first if stage == "first" else r.final).error)
    if failed:
        model = run.config.get("model")
        provider = model.get("provider") if isinstance(model, dict) else None
        redo = (
            "they failed in the tool that made the replies, so redo them there and import again"
            if provider in IMPORTED_PROVIDERS
            else "re-run the eval command with --retry-errors to redo them"
        )
        notes.append(
            f"{domain} {mode} ({stage}): {failed} sample(s) are abstentions "
            f"because the request failed, not the model; {redo}"
        )
    return notes


def _leak_notes(run: Run, groups: Sequence[GroupScore]) -> list[str]:
    """Beside the marked figures (``tables``): prompts that showed other cases' answers,
    one sentence per domain."""
    return list(
        dict.fromkeys(
            reference_leak_note(DOMAINS[g.domain].display_name)
            for g in groups
            if shows_reference_programs(run.protocol, g.domain, g.mode)
        )
    )


def _departure_notes(run: Run, groups: Sequence[GroupScore]) -> list[str]:
    """Beside the figures marked ``DEPARTURE_MARK`` (``tables``): upstream's flags set
    otherwise than in the published runs, said once."""
    found = (sampling_departures(run.protocol, g.mode, run.config) for g in groups)
    return list(dict.fromkeys(departure_note(d) for d in found if d))


def comparisons_note(comparisons: Sequence[Comparison]) -> str | None:
    """``notes.cross_protocol_note`` of these differences, each labelled as the tables
    label it: what ``score`` and the report say once under their paired differences."""
    return cross_protocol_note(
        [(f"{c.run_b} - {c.run_a} {c.mode}", c.protocol_a, c.protocol_b) for c in comparisons]
    )


def score_runs(
    paths: Sequence[str | Path], bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> list[RunScores]:
    """Load and score run folders; the library form of ``deonticbench score``."""
    runs = [load_run(p) for p in paths]  # every path is checked before any is scored
    return [score_run(run, bootstrap, seed) for run in runs]


# -- comparison ------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """``b - a`` for one domain x mode x stage over the cases both runs scored."""

    run_a: str
    run_b: str
    domain: str
    mode: str
    stage: str
    metric: str
    n_common: int
    only_a: int
    only_b: int
    point_a: float
    point_b: float
    difference: BootstrapEstimate
    protocol_a: str = "harness"
    protocol_b: str = "harness"
    """The protocol each side's figures came from (``vocabulary.protocols.mode_protocol``):
    a difference across protocols mixes prompts, sampling and reader into what it
    measures, and says so (``notes.cross_protocol_note``)."""


def compare(
    a: RunScores, b: RunScores, bootstrap_b: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> list[Comparison]:
    """Paired bootstrap differences of every group the two runs share.

    Counterfactual variants (``deonticbench perturb``) are paired with their original
    case: a case's variants count as one case, scored by the mean over them."""
    out: list[Comparison] = []
    for ga in a.groups:
        gb = b.group(ga.domain, ga.mode, ga.stage)
        if gb is None:
            continue
        out.append(_paired(a, ga, b, gb, bootstrap_b, seed, mode=ga.mode, stage=ga.stage))
    return out


def compare_modes(
    a: RunScores,
    mode_a: str,
    b: RunScores,
    mode_b: str,
    bootstrap_b: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> list[Comparison]:
    """``mode_b`` of run ``b`` minus ``mode_a`` of run ``a`` (one run or two), per domain
    and stage, paired over the cases both scored: e.g. a setting against zero-shot
    (docs/settings.md, ``score --pair B:A``).  The bootstrap draws are the domain's, as in
    ``compare``."""
    out: list[Comparison] = []
    for ga in a.groups:
        if ga.mode != mode_a:
            continue
        gb = b.group(ga.domain, mode_b, ga.stage)
        if gb is not None:
            label = f"{mode_b} - {mode_a}"
            out.append(_paired(a, ga, b, gb, bootstrap_b, seed, mode=label, stage=ga.stage))
    return out


def _paired(
    a: RunScores,
    ga: GroupScore,
    b: RunScores,
    gb: GroupScore,
    bootstrap_b: int,
    seed: int,
    *,
    mode: str,
    stage: str,
) -> Comparison:
    """``gb - ga`` over the cases both scored, resampled together (paper B.3's bootstrap,
    the domain's own stream: the same draws as each group's interval).  Counterfactual
    variants count as their original case (``by_original_case``)."""
    oa = by_original_case(ga.encoded.outcomes)
    ob = by_original_case(gb.encoded.outcomes)
    in_b = set(ob.case_ids)
    common = [c for c in oa.case_ids if c in in_b]  # both are sorted by id
    sa, sb = oa.subset(common), ob.subset(common)
    diff = paired_difference(sa, sb, bootstrap_b, domain_rng(seed, ga.domain))
    return Comparison(
        run_a=a.run.name,
        run_b=b.run.name,
        domain=ga.domain,
        mode=mode,
        stage=stage,
        metric=ga.metric,
        n_common=len(common),
        only_a=oa.n_cases - len(common),
        only_b=ob.n_cases - len(common),
        point_a=point_metric(sa) if common else float("nan"),
        point_b=point_metric(sb) if common else float("nan"),
        difference=diff,
        protocol_a=mode_protocol(a.run.protocol, ga.mode),
        protocol_b=mode_protocol(b.run.protocol, gb.mode),
    )


def pair_modes(
    scores: Sequence[RunScores], bootstrap_b: int = DEFAULT_BOOTSTRAP, seed: int = 0
) -> list[Comparison]:
    """Each agentic mode against its prompted counterpart on the same cases: ``agentic -
    prompted``, as a paired bootstrap difference (``score --pair-modes``).

    The prompted groups come from the agentic group's own run when it has them, else from
    the first other run that does (a prompted run and an agentic run of the same model,
    in two folders).  Each prompted stage is paired: ``first`` (the paper's protocol)
    and, when the prompted run retried, ``final``.  The comparison's ``mode`` reads
    ``agent-zero-shot - zero-shot``; its ``stage`` is the prompted one."""
    out: list[Comparison] = []
    for run in scores:
        for g in run.groups:
            if not is_agentic(g.mode) or g.stage != "first":
                continue
            base = prompted_counterpart(g.mode)
            for other in [run, *(o for o in scores if o is not run)]:
                found = [
                    pg
                    for stage in other.stages
                    if (pg := other.group(g.domain, base, stage)) is not None
                ]
                for pg in found:
                    out.append(
                        _paired(other, pg, run, g, bootstrap_b, seed,
                                mode=f"{g.mode} - {base}", stage=pg.stage)
                    )  # fmt: skip
                if found:
                    break
    return out


def by_original_case(o: Outcomes) -> Outcomes:
    """Outcomes with each original case's counterfactual variants as one case whose
    samples are all of theirs (unchanged when there are no variants).

    The variants have different gold amounts, so their samples are kept as right or
    wrong only: gold 0, a right sample 0, a wrong one 2 (outside the $1 tolerance), an
    abstention still an abstention.  Drawing one sample per case uniformly, as the
    bootstrap does, then scores the mean over the variants."""
    if not any(original_case_id(c) != c for c in o.case_ids):
        return o
    if o.kind != "numeric":
        raise ValueError("counterfactual variants are made for numeric domains only")
    right = correct_matrix(o)
    samples: dict[str, list[tuple[bool, bool]]] = {}
    for i, case_id in enumerate(o.case_ids):
        group = samples.setdefault(original_case_id(case_id), [])
        group += [(bool(right[i, j]), bool(o.abstain[i, j])) for j in range(int(o.present[i]))]
    ids = sorted(samples)
    k = max(len(v) for v in samples.values())
    pred = np.zeros((len(ids), k))
    abstain = np.zeros((len(ids), k), dtype=bool)
    for row, case_id in enumerate(ids):
        for col, (is_right, abstained) in enumerate(samples[case_id]):
            pred[row, col] = 0.0 if is_right else 2.0
            abstain[row, col] = abstained
    return Outcomes(
        kind="numeric",
        case_ids=tuple(ids),
        gold=np.zeros(len(ids)),
        pred=pred,
        abstain=abstain,
        present=np.array([len(samples[c]) for c in ids], dtype=np.intp),
    )
