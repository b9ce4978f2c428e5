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

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..data.cases import Case, load_cases, pin_source
from ..data.domains import Domain
from ..data.selection import CaseLimit, check_ids_found, select_cases
from ..data.sources import DataSource
from ..data.statutes import shared_statutes
from ..vocabulary.exemplar_choice import DEFAULT_EXEMPLARS, EXEMPLAR_CHOICES, ExemplarChoice
from ..vocabulary.modes import SETTINGS, Mode, prompted_counterpart
from ..vocabulary.protocols import (
    LEGACY_PROTOCOL,
    ProtocolName,
    check_protocol,
    mode_protocol,
    shows_reference_programs,
)
from .distractors import SectionsNeeded, with_distractors
from .exemplars import (
    ExemplarChooser,
    SplitExemplars,
    choose_exemplars,
    exemplar_pool,
    retrieve_exemplars,
)
from .paper import AirlinePool, PaperTexts, render_paper
from .paper import load_paper_texts as _load_paper_texts
from .render import Prompt, render


class GivenParts(Protocol):
    """The settings' parts of reference programs, computed above prompting (the split
    runs in the sandbox, ``deonticbench.settings``) and handed in by ``api.prepare``."""

    def given(
        self, domain: Domain, cases: Sequence[Case]
    ) -> tuple[Mapping[tuple[str, str], str], str]:
        """The part of each case's reference program a setting shows, keyed (case id,
        mode), and a note for config.json saying what was left out and why.  A case
        missing for a setting is left out of it."""
        ...

    def exemplar_parts(
        self, domain: Domain, cases: Sequence[Case]
    ) -> Mapping[tuple[str, str], tuple[str, str]]:
        """For pool cases: (case id, mode) -> (the part the setting gives, the part it
        asks for), for each case whose split is usable in that setting."""
        ...

    def needed_sections(self, domain: Domain, cases: Sequence[Case]) -> SectionsNeeded:
        """For ``--distractors`` on a domain whose prompt holds its whole statute: the
        sections each case's reference program uses, or why that cannot be told."""
        ...


@dataclass(frozen=True)
class Unit:
    """One domain x case x mode: its samples share the first prompt."""

    domain: Domain
    case: Case
    mode: Mode
    k: int
    exemplars: tuple[Case, ...] = ()
    retrieved: bool = False
    """Its exemplars were retrieved (``--exemplars retrieved``): records name them."""
    given: str = ""
    """A setting's given part of the reference program (its rules or its case facts),
    shown in the prompt and put before the model's program when it runs."""
    exemplar_parts: tuple[tuple[str, str], ...] = ()
    """A setting's exemplars in their split parts (given, written), one per exemplar."""
    paper: PaperTexts | None = None
    """Upstream's texts when the unit follows the paper protocol (``--protocol paper``,
    direct, zero-shot and few-shot only); None: the harness's templates."""
    paper_exemplar: str = ""
    paper_statutes: str = ""
    """Under the paper protocol, the domain's shared statutes as upstream's prompts join
    them (sorted file names, ``data.statutes.shared_statutes``); empty: the case's own."""
    """Airline few-shot under the paper protocol: upstream's retrieved exemplar, which
    shows another case's reference program (``exemplars`` holds that case)."""

    @property
    def protocol(self) -> ProtocolName:
        """The protocol this unit's first prompt follows."""
        return "paper" if self.paper is not None else "harness"

    @property
    def shows_reference_programs(self) -> bool:
        """Its prompt shows reference programs of the evaluated split (paper airline
        few-shot): every figure of the cell must say so."""
        return shows_reference_programs(self.protocol, self.domain.name, self.mode)

    def render(self) -> Prompt:
        """The unit's first prompt: the one place a unit becomes messages."""
        if self.paper is not None:
            return render_paper(
                self.paper,
                self.case,
                self.mode,
                exemplar=self.paper_exemplar,
                statutes=self.paper_statutes,
            )
        return render(
            self.case,
            self.mode,
            self.exemplars,
            given=self.given,
            exemplar_parts=self.exemplar_parts,
        )

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
    setting_notes: dict[str, str] = field(default_factory=dict)
    """Per domain, what the settings left out and why (config.json ``settings``)."""
    protocol: ProtocolName = LEGACY_PROTOCOL
    """What direct, zero-shot and few-shot units follow (``vocabulary.protocols``)."""

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
    exemplars: ExemplarChoice = DEFAULT_EXEMPLARS,
    distractors: int | None = None,
    given_parts: GivenParts | None = None,
    protocol: ProtocolName = LEGACY_PROTOCOL,
) -> RunPlan:
    """Load the cases and choose few-shot exemplars: everything a run will do, in order.

    ``k`` is samples per case: one number, ``(domain, K)`` pairs, or None for each
    domain's default (see ``RunSpec.k``).  ``limit`` and ``case_ids`` choose cases (see
    ``selection.select_cases``).  ``exemplars`` chooses how few-shot exemplars are
    picked, ``distractors`` how many unrelated statute sections each case's statutes get
    (None: the paper's statutes; ``distractors.with_distractors``), and ``given_parts``
    the settings' parts and the sections each case uses.  ``protocol`` is what the
    direct, zero-shot and few-shot units follow: ``paper`` renders them from upstream's
    own files (read from ``source`` or downloaded, ``prompting.paper``), with upstream's
    exemplars; the other modes keep the harness's templates and exemplars."""
    check_protocol(protocol)
    if exemplars not in EXEMPLAR_CHOICES:
        raise ValueError(f"exemplars must be one of {', '.join(EXEMPLAR_CHOICES)}")
    settings = [m for m in modes if m in SETTINGS]
    if settings and given_parts is None:
        raise ValueError(f"{', '.join(settings)} need the given parts of the reference programs")
    loader = load or load_cases
    if load is None:
        source = pin_source(source)
    paper: PaperTexts | None = None
    needs_paper = any(mode_protocol(protocol, m) == "paper" for m in modes)
    units: list[Unit] = []
    ks: dict[str, int] = {}
    notes: dict[str, str] = {}
    setting_notes: dict[str, str] = {}
    selected: list[str] = []
    for domain in domains:
        everything = loader(domain, split, source)
        if needs_paper and paper is None:
            # After the first cases: a broken case file is named before a missing
            # upstream file is looked for (and perhaps downloaded).
            paper = _load_paper_texts(source)
        cases = select_cases(everything, limit=limit, case_ids=case_ids)
        selected.extend(c.id for c in cases)  # a case a setting leaves out was still found
        given: Mapping[tuple[str, str], str] = {}
        if settings and given_parts is not None:
            given, setting_notes[domain.name] = given_parts.given(domain, cases)
        if distractors is not None:
            cases = _with_distractors(
                domain, cases, distractors, everything, seed, given_parts, setting_notes
            )
        ks[domain.name] = _k_of(domain, k)
        planner = _DomainPlanner(
            domain, ks[domain.name], modes, protocol, paper, seed, exemplars == "retrieved", given
        )
        if paper is not None and domain.statute_source == "shared" and distractors is None:
            # Distractors change each case's statutes: those prompts keep the case's own.
            planner.paper_statutes = shared_statutes(domain, source, by_name=True)
        planner.find_exemplars(source, everything, cases, given_parts, notes)
        for case in cases:
            units.extend(planner.units(case))
        if planner.split_shots is not None and settings:
            setting_notes[f"{domain.name}/exemplars"] = planner.split_shots.note()
    check_ids_found(case_ids, selected)
    return RunPlan(
        list(domains), split, list(modes), ks, units, seed, notes, source, setting_notes, protocol
    )


def _k_of(domain: Domain, k: int | Sequence[tuple[str, int]] | None) -> int:
    """Samples per case of ``domain``: one number for all, else per domain (a resumed
    run's config), else the domain's default."""
    if isinstance(k, int):
        return k
    return dict(k or ()).get(domain.name, domain.default_k)


def _with_distractors(
    domain: Domain,
    cases: list[Case],
    distractors: int,
    everything: list[Case],
    seed: int,
    given_parts: GivenParts | None,
    setting_notes: dict[str, str],
) -> list[Case]:
    """``cases`` with unrelated statute sections shuffled in; the note, if any, goes to
    ``setting_notes``."""
    needed = None
    if domain.statute_source == "shared" and domain.section_terms:
        if given_parts is None:
            raise ValueError(f"{domain.name} distractors need the sections cases use")
        needed = given_parts.needed_sections(domain, cases)
    shuffled, note = with_distractors(
        domain, cases, distractors, material=everything, seed=seed, needed=needed
    )
    if note:
        setting_notes[f"{domain.name}/distractors"] = note
    return list(shuffled)


AIRLINE_LEAK_NOTE = (
    "paper protocol: few-shot exemplars are upstream's cabin-class retrieval from the "
    "evaluated split itself (leave-one-out by text), so each prompt shows another "
    "evaluated case's reference program"
)


@dataclass
class _DomainPlanner:
    """What planning one domain's cases shares: its K, modes, protocol and exemplars."""

    domain: Domain
    k: int
    modes: Sequence[Mode]
    protocol: ProtocolName
    paper: PaperTexts | None
    seed: int
    retrieved: bool
    given: Mapping[tuple[str, str], str]
    pool: list[Case] = field(default_factory=list)
    airline_pool: AirlinePool | None = None
    split_shots: SplitExemplars | None = None
    paper_statutes: str = ""

    @property
    def choose(self) -> ExemplarChooser:
        return retrieve_exemplars if self.retrieved else choose_exemplars

    def find_exemplars(
        self,
        source: DataSource,
        everything: list[Case],
        cases: list[Case],
        given_parts: GivenParts | None,
        notes: dict[str, str],
    ) -> None:
        """The harness's pool where a mode keeps the harness's exemplars, upstream's
        airline retrieval where few-shot follows the paper, and the settings' split
        exemplars; each pool's note goes to ``notes``."""
        domain, modes = self.domain, self.modes
        settings = [m for m in modes if m in SETTINGS]
        # Under the paper protocol few-shot takes upstream's exemplars: the harness's
        # pool is needed only by the modes that keep the harness's (agent-few-shot).
        # Under dar, agent-few-shot's examples are DAR's examples.txt: no pool either.
        harness_shots = [m for m in modes if mode_protocol(self.protocol, m) == "harness"]
        if any(prompted_counterpart(m) == "few-shot" for m in harness_shots) or settings:
            pool_cases, note = exemplar_pool(domain, source)
            self.pool = list(pool_cases)
            notes[domain.name] = note
        if (
            self.paper is not None
            and "few-shot" in modes
            and shows_reference_programs(self.protocol, domain.name, "few-shot")
        ):
            # generate_e2e.py's default pool is the cases file itself: the whole split
            # being evaluated, whatever --limit or --ids select.
            self.airline_pool = AirlinePool(self.paper, everything)
            harness_note = notes.get(domain.name)
            notes[domain.name] = (
                f"{harness_note}; {AIRLINE_LEAK_NOTE}" if harness_note else AIRLINE_LEAK_NOTE
            )
        if settings and given_parts is not None:
            self.split_shots = SplitExemplars(domain, self.pool, given_parts.exemplar_parts)
            self.split_shots.prepare(
                [c for c in cases if any((c.id, m) in self.given for m in settings)],
                self.choose,
                self.seed,
            )

    def units(self, case: Case) -> Iterator[Unit]:
        """The case's unit in each mode (a setting's only when its part and an exemplar
        are there: the notes count the others)."""
        domain = self.domain
        for mode in self.modes:
            shots: tuple[Case, ...] = ()
            shot_parts: tuple[tuple[str, str], ...] = ()
            unit_paper = self.paper if mode_protocol(self.protocol, mode) == "paper" else None
            paper_exemplar = ""
            if unit_paper is not None:
                if mode == "few-shot" and self.airline_pool is not None:
                    paper_exemplar, shown = self.airline_pool.exemplar(case)
                    shots = (shown,) if shown is not None else ()
            # agent-few-shot gets the very exemplars few-shot gets: a fair pairing
            elif (
                prompted_counterpart(mode) == "few-shot"
                and mode_protocol(self.protocol, mode) == "harness"
            ):
                shots = tuple(
                    self.choose(domain, self.pool, case, domain.few_shot_count, self.seed)
                )
            part = self.given.get((case.id, mode), "") if mode in SETTINGS else ""
            if mode in SETTINGS:
                if not part:
                    continue  # left out of the setting: counted in setting_notes
                assert self.split_shots is not None
                shots, shot_parts = self.split_shots.choose(case, mode, self.choose, self.seed)
                if not shots:
                    continue  # no usable exemplar: counted in split_shots.note
            yield Unit(
                domain,
                case,
                mode,
                self.k,
                shots,
                retrieved=bool(shots) and self.retrieved,
                given=part,
                exemplar_parts=shot_parts,
                paper=unit_paper,
                paper_exemplar=paper_exemplar,
                paper_statutes=self.paper_statutes if unit_paper is not None else "",
            )
