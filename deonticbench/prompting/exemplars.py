"""Few-shot exemplars: the leak-free pool a domain's exemplars come from, and the
seeded choice of a case's exemplars (never the case itself, never a hard case), or the
pool cases most similar to it by BM25 (``retrieve_exemplars``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..data.cases import Case, cases_from_rows, load_cases
from ..data.domains import Domain
from ..data.sources import DataSource
from ..errors import DataError
from .templates import EXCLUDE_FILE, SYNTHETIC_POOL_FILE, prompts_root

# --- exemplars -------------------------------------------------------------------------


def _content_key(case: Case) -> tuple[str, ...]:
    """What makes two cases the same problem whatever their ids: upstream's whole split
    repeats some hard uscis cases under new ids (same case number, same text)."""
    number = str(case.extra.get("case_number", "")).strip()
    if number:
        return ("case_number", number)
    return ("content", case.text.strip(), case.question.strip(), str(case.extra.get("state", "")))


def problem_key(case: Case) -> tuple[str, ...]:
    """What makes two cases the same problem whatever their ids (see ``_content_key``):
    the training exports hold out the hard split by this key as well as by id."""
    return _content_key(case)


@dataclass(frozen=True)
class HardComplement:
    """The whole split minus the hard split, by id and by content: the one rule both the
    harness's exemplar pool and the training exports hold the evaluated cases out by."""

    whole: list[Case]
    hard: list[Case]
    unseen: list[Case]
    """The whole split's cases whose ids are not hard ids."""
    cases: list[Case]
    """Of ``unseen``, those that are no copy of a hard case under another id."""


def hard_complement(domain: Domain, source: DataSource) -> HardComplement:
    """``domain``'s whole split minus its hard split (``problem_key`` decides a copy)."""
    whole = load_cases(domain, "whole", source)
    hard = load_cases(domain, "hard", source)
    hard_ids = {c.id for c in hard}
    hard_keys = {_content_key(c) for c in hard}
    unseen = [c for c in whole if c.id not in hard_ids]
    cases = [c for c in unseen if _content_key(c) not in hard_keys]
    return HardComplement(whole, hard, unseen, cases)


def exemplar_pool(
    domain: Domain, source: DataSource, *, prompts_dir: Path | None = None
) -> tuple[list[Case], str]:
    """The domain's few-shot pool and a note for the run's config.json.

    The pool is the whole split minus the hard split, matched by case id and by content
    (see ``_content_key``).  When the whole split is not available offline (housing: the
    mirror has no housing/whole.json), the pool is the synthetic cases in
    ``prompts/<domain>/exemplars.json``, written for this harness and drawn from no split.
    """
    root = prompts_root(prompts_dir)
    if _whole_available(domain, source):
        return _whole_minus_hard(domain, source, root)
    return _synthetic_pool(domain, source, root)


def _whole_minus_hard(domain: Domain, source: DataSource, root: Path) -> tuple[list[Case], str]:
    """The whole split minus the hard split (by id and by content) and minus the cases
    ``root``'s exclude list names, with a note that counts what each rule dropped."""
    complement = hard_complement(domain, source)
    unseen, fresh = complement.unseen, complement.cases
    excluded = excluded_ids(domain, prompts_dir=root)
    pool = [c for c in fresh if c.id not in excluded]
    dropped = []
    if len(unseen) > len(fresh):
        dropped.append(f"{len(unseen) - len(fresh)} copies of hard cases under other ids")
    if len(fresh) > len(pool):
        dropped.append(
            f"{len(fresh) - len(pool)} whose reference program does not run cleanly, "
            f"listed in prompts/{domain.name}/{EXCLUDE_FILE}, "
            f"sha256 {_short_hash(root / domain.name / EXCLUDE_FILE)}"
        )
    note = (
        f"{domain.name}: few-shot pool is the whole split minus the hard split, "
        f"{len(pool)} cases" + (f" (dropped: {'; '.join(dropped)})" if dropped else "") + "."
    )
    return pool, note


def _synthetic_pool(domain: Domain, source: DataSource, root: Path) -> tuple[list[Case], str]:
    """The synthetic exemplars of ``root``'s ``<domain>/exemplars.json`` and a note that
    says why they stand in; DataError when the file is missing or is not a JSON list."""
    path = root / domain.name / SYNTHETIC_POOL_FILE
    if not path.exists():
        raise DataError(
            f"The {domain.name} whole split is not available from {_describe(source)} and "
            f"{path} does not exist, so there are no few-shot exemplars: use --hub."
        )
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON (line {exc.lineno}: {exc.msg}).") from None
    if not isinstance(rows, list):
        raise DataError(f"{path} should hold a JSON list of cases.")
    pool = cases_from_rows(domain, rows, str(path), None)
    note = (
        f"{domain.name}: the whole split is not available from {_describe(source)}, so the "
        f"few-shot pool is the {len(pool)} synthetic exemplars in "
        f"prompts/{domain.name}/{SYNTHETIC_POOL_FILE} (sha256 {_short_hash(path)}), written "
        "for this harness and taken from no split; use --hub for upstream's pool."
    )
    return pool, note


def _short_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def excluded_ids(domain: Domain, *, prompts_dir: Path | None = None) -> frozenset[str]:
    """Case ids listed in ``prompts/<domain>/exclude.txt`` (first word of each line that
    is not blank or a ``#`` comment): pool cases never shown as exemplars."""
    path = prompts_root(prompts_dir) / domain.name / EXCLUDE_FILE
    if not path.exists():
        return frozenset()
    lines = path.read_text(encoding="utf-8").splitlines()
    return frozenset(
        line.split()[0] for line in lines if line.strip() and not line.lstrip().startswith("#")
    )


def _whole_available(domain: Domain, source: DataSource) -> bool:
    # Only a missing local file means "not available"; an unreadable one, or a hub
    # failure, is an error the user must see rather than a silent fallback.  The path
    # follows the upstream layout that data.load_cases reads.
    if source.kind == "local" and source.path is not None:
        return (source.path / "data" / domain.mirror_dir / "whole.json").exists()
    return True


def _describe(source: DataSource) -> str:
    return str(source.path) if source.kind == "local" else f"the hub ({source.repo})"


def choose_exemplars(
    domain: Domain, pool: Sequence[Case], case: Case, count: int | None = None, seed: int = 0
) -> list[Case]:
    """Pick ``count`` exemplars (default ``domain.few_shot_count``) for ``case``.

    Deterministic for a (seed, case id): candidates are ranked by sha256 of the seed, the
    case id and the candidate id.  The case itself (by id or content) is never chosen.
    For binary domains with two or more shots, classes alternate down the ranking so the
    demonstrations mix outcomes, as the paper's curated few-shot sets do (B.1).
    """
    wanted = domain.few_shot_count if count is None else count
    if wanted < 0:
        raise ValueError("the number of exemplars cannot be negative")
    if wanted == 0:
        return []
    own = _content_key(case)
    candidates = [c for c in pool if c.id != case.id and _content_key(c) != own]
    if not candidates:
        raise DataError(f"The {domain.name} few-shot pool has no exemplar for case {case.id}.")
    ranked = _distinct(sorted(candidates, key=lambda c: _rank(seed, case.id, c.id)))
    if domain.label_kind != "binary" or wanted < 2:
        return ranked[:wanted]
    return _alternate_classes(ranked, wanted)


def _rank(seed: int, case_id: str, candidate_id: str) -> str:
    return hashlib.sha256(f"{seed}\0{case_id}\0{candidate_id}".encode()).hexdigest()


def _distinct(ranked: list[Case]) -> list[Case]:
    # The whole splits hold some cases twice under different ids: show each problem once.
    seen: set[tuple[str, ...]] = set()
    distinct: list[Case] = []
    for c in ranked:
        key = _content_key(c)
        if key not in seen:
            seen.add(key)
            distinct.append(c)
    return distinct


def _alternate_classes(ranked: list[Case], wanted: int) -> list[Case]:
    by_class: dict[str, list[Case]] = {}
    for c in ranked:
        by_class.setdefault(str(c.gold), []).append(c)
    # Class order follows the ranking too, so which class comes first varies by seed.
    queues = list(by_class.values())
    chosen: list[Case] = []
    while len(chosen) < wanted and any(queues):
        for queue in queues:
            if queue and len(chosen) < wanted:
                chosen.append(queue.pop(0))
    return chosen


# --- retrieved exemplars -----------------------------------------------------------------

_TOKEN = re.compile(r"[a-z0-9]+")


def _tokens(case: Case) -> list[str]:
    text = " ".join((case.text, case.question, str(case.extra.get("state", ""))))
    return _TOKEN.findall(text.lower())


def retrieve_exemplars(
    domain: Domain, pool: Sequence[Case], case: Case, count: int | None = None, seed: int = 0
) -> list[Case]:
    """The ``count`` pool cases most similar to ``case`` (``--exemplars retrieved``).

    Similarity is BM25 (``bm25s``, numpy backend, float64 scores) over the words of the
    case text, question and state; ties are broken by case id, so the choice is the same
    on every machine.  The pool is the same leak-free pool as the paper's choice (never a
    hard case), and the case itself (by id or content) is never chosen.  ``seed`` is
    accepted for symmetry with ``choose_exemplars`` and changes nothing.
    """
    del seed  # retrieval is deterministic without one
    import bm25s  # imported here: only runs that ask for retrieval need it

    wanted = domain.few_shot_count if count is None else count
    if wanted <= 0:
        return []
    own = _content_key(case)
    candidates = _distinct(
        sorted((c for c in pool if c.id != case.id and _content_key(c) != own), key=lambda c: c.id)
    )
    if not candidates:
        raise DataError(f"The {domain.name} few-shot pool has no exemplar for case {case.id}.")
    index = bm25s.BM25(dtype="float64", backend="numpy")
    # An empty document would make bm25s's vocabulary empty: every case has some text.
    index.index([_tokens(c) or ["_"] for c in candidates], show_progress=False)
    scores = index.get_scores(_tokens(case))
    ranked = sorted(range(len(candidates)), key=lambda i: (-float(scores[i]), candidates[i].id))
    return [candidates[i] for i in ranked[:wanted]]


# --- a setting's exemplars, in their split parts ------------------------------------------

ExemplarChooser = Callable[[Domain, Sequence[Case], Case, "int | None", int], list[Case]]
SplitParts = Callable[[Domain, Sequence[Case]], Mapping[tuple[str, str], tuple[str, str]]]
"""For pool cases: (case id, setting) -> (the part the setting gives, the part it asks
for), for each case whose split is usable in that setting (``settings.given``)."""


class SplitExemplars:
    """The exemplars of ``rules-given`` and ``facts-given`` units: chosen from the same
    pool and in the same way as few-shot's (the paper's seeded choice or BM25), each shown
    in its own split parts.  A pool case whose split is not usable in the setting is
    skipped and the next one in the ranking taken; the skips are counted (``note``).

    Pool cases are split lazily (in the sandbox, by ``parts``), as the rankings reach
    them, and each only once."""

    def __init__(self, domain: Domain, pool: Sequence[Case], parts: SplitParts) -> None:
        self.domain = domain
        self.pool = list(pool)
        self._parts = parts
        self._looked_at: set[str] = set()
        self._usable: dict[tuple[str, str], tuple[str, str]] = {}
        self.shown: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.short: Counter[str] = Counter()
        self.without: Counter[str] = Counter()

    def _split(self, cases: Sequence[Case]) -> None:
        fresh = list({c.id: c for c in cases if c.id not in self._looked_at}.values())
        if fresh:
            self._usable.update(self._parts(self.domain, fresh))
            self._looked_at.update(c.id for c in fresh)

    def _ranking(self, case: Case, choose: ExemplarChooser, seed: int) -> list[Case]:
        if not self.pool:
            return []
        return choose(self.domain, self.pool, case, len(self.pool), seed)

    def prepare(self, cases: Sequence[Case], choose: ExemplarChooser, seed: int) -> None:
        """Split, in one batch, the pool cases the rankings of ``cases`` start with."""
        wanted = self.domain.few_shot_count
        self._split([c for case in cases for c in self._ranking(case, choose, seed)[:wanted]])

    def choose(
        self, case: Case, setting: str, choose: ExemplarChooser, seed: int
    ) -> tuple[tuple[Case, ...], tuple[tuple[str, str], ...]]:
        """``case``'s exemplars for ``setting`` and their (given, written) parts."""
        wanted = self.domain.few_shot_count
        ranking = self._ranking(case, choose, seed)
        chosen: list[Case] = []
        at = 0
        while len(chosen) < wanted and at < len(ranking):
            batch = ranking[at : at + wanted]
            self._split(batch)
            for candidate in batch:
                at += 1
                if (candidate.id, setting) in self._usable:
                    chosen.append(candidate)
                    if len(chosen) == wanted:
                        break
                else:
                    self.skipped[setting] += 1
        self.shown[setting] += len(chosen)
        if not chosen:
            self.without[setting] += 1
        elif len(chosen) < wanted:
            self.short[setting] += 1
        return tuple(chosen), tuple(self._usable[(c.id, setting)] for c in chosen)

    def note(self) -> str:
        """What config.json says of the settings' exemplars, per setting."""
        told: list[str] = []
        for setting in sorted(set(self.shown) | set(self.skipped) | set(self.without)):
            line = (
                f"{setting} {self.shown[setting]} exemplars shown, {self.skipped[setting]} "
                "skipped (split not usable in the setting)"
            )
            if self.short[setting]:
                line += (
                    f", {self.short[setting]} cases with fewer than {self.domain.few_shot_count}"
                )
            if self.without[setting]:
                line += f", {self.without[setting]} cases left out (no usable exemplar)"
            told.append(line)
        return f"{self.domain.name}: " + "; ".join(told) + "."
