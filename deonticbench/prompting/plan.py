"""The plan of a run: every domain x case x mode it will do, with its few-shot exemplars.

    plan = plan_run(domains, split="hard", modes=MODES, source=resolve_source())

Planning loads the cases (from the source pinned once, so every domain reads the same
snapshot) and chooses each few-shot case's exemplars; it sends nothing and writes
nothing.  The runner (``evaluation/runner.py``) carries a plan out; the dry run
(``evaluation/dryrun.py``) counts what carrying it out would send.  The plan sits in
prompting, not evaluation, because the report and the exports rebuild a run's prompts from
it without carrying anything out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from ..data.cases import Case, load_cases, pin_source
from ..data.domains import Domain
from ..data.selection import CaseLimit, check_ids_found, select_cases
from ..data.sources import DataSource
from .exemplars import choose_exemplars, exemplar_pool
from .modes import Mode, prompted_counterpart


@dataclass(frozen=True)
class Unit:
    """One domain x case x mode: its samples share the first prompt."""

    domain: Domain
    case: Case
    mode: Mode
    k: int
    exemplars: tuple[Case, ...] = ()

    def sample_keys(self) -> list[tuple[str, str, Mode, int]]:
        """(domain, case, mode, sample) of each sample: the store's record keys."""
        return [(self.domain.name, self.case.id, self.mode, s) for s in range(self.k)]


@dataclass
class RunPlan:
    domains: list[Domain]
    split: str
    modes: list[Mode]
    k: dict[str, int]
    units: list[Unit]
    seed: int
    pool_notes: dict[str, str] = field(default_factory=dict)
    source: DataSource | None = None
    """The data source, pinned: every case of the plan was read from this snapshot."""

    @property
    def total_samples(self) -> int:
        return sum(u.k for u in self.units)

    def totals(self) -> dict[tuple[str, str], int]:
        """Samples per (domain, mode): what the progress display counts towards."""
        out: dict[tuple[str, str], int] = {}
        for u in self.units:
            key = (u.domain.name, u.mode)
            out[key] = out.get(key, 0) + u.k
        return out


def plan_run(
    domains: Sequence[Domain],
    *,
    split: str,
    modes: Sequence[Mode],
    source: DataSource,
    k: int | Sequence[tuple[str, int]] | None = None,
    limit: CaseLimit | None = None,
    seed: int = 0,
    load: Callable[[Domain, str, DataSource], list[Case]] | None = None,
    case_ids: Collection[str] | None = None,
) -> RunPlan:
    """Load the cases and choose few-shot exemplars: everything a run will do, in order.

    ``k`` is samples per case: one number, ``(domain, K)`` pairs, or None for each
    domain's default (see ``RunSpec.k``).  ``limit`` and ``case_ids`` choose cases (see
    ``selection.select_cases``)."""
    loader = load or load_cases
    if load is None:
        source = pin_source(source)
    units: list[Unit] = []
    ks: dict[str, int] = {}
    notes: dict[str, str] = {}
    for domain in domains:
        cases = select_cases(loader(domain, split, source), limit=limit, case_ids=case_ids)
        if isinstance(k, int):
            ks[domain.name] = k
        else:  # None, or per domain (a resumed run's config): the domain's default else
            ks[domain.name] = dict(k or ()).get(domain.name, domain.default_k)
        pool: list[Case] = []
        if any(prompted_counterpart(m) == "few-shot" for m in modes):
            pool_cases, note = exemplar_pool(domain, source)
            pool = list(pool_cases)
            notes[domain.name] = note
        for case in cases:
            for mode in modes:
                exemplars: tuple[Case, ...] = ()
                # agent-few-shot gets the very exemplars few-shot gets: a fair pairing
                if prompted_counterpart(mode) == "few-shot":
                    exemplars = tuple(
                        choose_exemplars(domain, pool, case, domain.few_shot_count, seed)
                    )
                units.append(Unit(domain, case, mode, ks[domain.name], exemplars))
    check_ids_found(case_ids, (u.case.id for u in units))
    return RunPlan(list(domains), split, list(modes), ks, units, seed, notes, source)
