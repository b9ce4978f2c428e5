"""Paired comparisons: run against run, mode against mode, agentic against prompted,
each a paired bootstrap difference over the cases both sides scored (paper B.3)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..store.run import RunLike
from ..vocabulary.modes import ALL_MODES, is_agentic, prompted_counterpart
from ..vocabulary.protocols import mode_protocol
from .metrics import DEFAULT_BOOTSTRAP, BootstrapEstimate, paired_difference, point_metric
from .notes import cross_protocol_note
from .rows import NothingToScoreError
from .scores import GroupScore, RunScores, scores_of
from .seeds import domain_rng
from .variants import by_original_case


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
    a: RunScores | RunLike,
    b: RunScores | RunLike,
    bootstrap_b: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> list[Comparison]:
    """Paired bootstrap differences of every group the two runs share (each side scored,
    or a run or run folder, scored here with the same draws).

    Counterfactual variants (``deonticbench perturb``) are paired with their original
    case: a case's variants count as one case, scored by the mean over them."""
    a, b = scores_of(a, bootstrap_b, seed), scores_of(b, bootstrap_b, seed)
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
    in two folders).  Each prompted stage is paired: ``first`` (attempt 0, before any
    retry) and, when the prompted run retried, ``final``.  The comparison's ``mode`` reads
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


def comparisons_note(comparisons: Sequence[Comparison]) -> str | None:
    """``notes.cross_protocol_note`` of these differences, each labelled as the tables
    label it: what ``score`` and the report say once under their paired differences."""
    return cross_protocol_note(
        [(f"{c.run_b} - {c.run_a} {c.mode}", c.protocol_a, c.protocol_b) for c in comparisons]
    )


def pair_from_spec(
    scores: Sequence[RunScores], spec: str, replicates: int, seed: int
) -> list[Comparison]:
    """``--pair MODE:BASELINE``: each mode from the first run folder that has it."""
    mode, sep, baseline = spec.partition(":")
    if not sep or mode not in ALL_MODES or baseline not in ALL_MODES:
        raise ConfigError(
            f"--pair takes MODE:BASELINE with modes from {', '.join(ALL_MODES)}, not {spec!r}."
        )
    with_mode = next((s for s in scores if mode in s.modes), None)
    with_baseline = next((s for s in scores if baseline in s.modes), None)
    if with_mode is None or with_baseline is None:
        missing = mode if with_mode is None else baseline
        raise ConfigError(f"--pair {spec}: no run folder given holds {missing} records.")
    return compare_modes(with_baseline, baseline, with_mode, mode, replicates, seed)


def requested_comparisons(
    scores: Sequence[RunScores],
    compare_runs: bool,
    pairs: Sequence[str],
    with_counterparts: bool,
    replicates: int,
    seed: int,
) -> tuple[list[Comparison], str | None]:
    """The paired differences ``score`` was asked for (--compare: each run against the
    first; --pair; --pair-modes), and a note when any sets two protocols' figures
    against each other."""
    comparisons = (
        [c for other in scores[1:] for c in compare(scores[0], other, replicates, seed)]
        if compare_runs
        else []
    )
    comparisons += [c for p in pairs for c in pair_from_spec(scores, p, replicates, seed)]
    if with_counterparts:
        paired = pair_modes(scores, replicates, seed)
        if not paired:
            raise NothingToScoreError(
                "--pair-modes found no agentic mode with its prompted counterpart in the "
                "given run folders."
            )
        comparisons += paired
    return comparisons, comparisons_note(comparisons)
