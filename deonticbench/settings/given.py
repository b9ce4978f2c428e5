"""What each setting shows and what the reference backend answers with.

``rules-given`` shows a case's rules and asks for its facts and query; ``facts-given``
shows its case facts and asks for its rules and query.  A case enters a setting only when
its split is kept (``split.CaseSplit.kept``) and passes that setting's leak check; every
case left out is counted, with its reason, in the plan's note for config.json.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..data.cases import Case
from ..data.domains import Domain
from ..solver import Limits, Solver
from ..vocabulary.modes import SETTINGS
from .sections import needed_sections
from .split import CaseSplit, join_parts, split_cases


def shown_part(split: CaseSplit, setting: str) -> str:
    """The part a setting shows: the rules, or the case facts."""
    assert split.split is not None
    return split.split.rules if setting == "rules-given" else split.split.facts


def asked_part(split: CaseSplit, setting: str) -> str:
    """The part a setting asks the model for (what the reference backend answers)."""
    assert split.split is not None
    parts = split.split
    if setting == "rules-given":
        return join_parts(parts.facts, parts.query)
    return join_parts(parts.rules, parts.query)


def reason_left_out(split: CaseSplit, setting: str) -> str | None:
    if split.dropped is not None:
        return split.dropped
    leak = split.rules_given_out if setting == "rules-given" else split.facts_given_out
    return leak


@dataclass
class SettingParts:
    """The splits of the cases a run plans, for the plan (``given``) and the reference
    backend (``answers``).  ``solver`` runs the recombination checks."""

    limits: Limits | None = None
    splits: dict[tuple[str, str], CaseSplit] = field(default_factory=dict)

    def given(
        self, domain: Domain, cases: Sequence[Case]
    ) -> tuple[dict[tuple[str, str], str], str]:
        """``prompting.plan.GivenParts``: each usable case's shown part, and the note."""
        with Solver(limits=self.limits) as solver:
            found = split_cases(cases, solver)
        shown: dict[tuple[str, str], str] = {}
        notes: list[str] = []
        for setting in SETTINGS:
            reasons: Counter[str] = Counter()
            for split in found:
                self.splits[(split.domain, split.case_id)] = split
                why = reason_left_out(split, setting)
                if why is None:
                    shown[(split.case_id, setting)] = shown_part(split, setting)
                else:
                    reasons[_kind(why)] += 1
            kept = len(found) - sum(reasons.values())
            told = "; ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
            notes.append(
                f"{setting} {kept}/{len(found)}" + (f" (left out: {told})" if told else "")
            )
        return shown, f"{domain.name}: " + ", ".join(notes) + "."

    def exemplar_parts(
        self, domain: Domain, cases: Sequence[Case]
    ) -> dict[tuple[str, str], tuple[str, str]]:
        """``prompting.plan.GivenParts.exemplar_parts``: for pool cases, each one's
        (shown, asked) parts in every setting its split is usable in (the same checks as
        a case's own), so that an exemplar shows the part given and the part written."""
        del domain  # each case names its domain
        with Solver(limits=self.limits) as solver:
            found = split_cases(cases, solver)
        return {
            (split.case_id, setting): (shown_part(split, setting), asked_part(split, setting))
            for split in found
            for setting in SETTINGS
            if reason_left_out(split, setting) is None
        }

    def needed_sections(
        self, domain: Domain, cases: Sequence[Case]
    ) -> dict[str, frozenset[str] | str]:
        """``prompting.plan.GivenParts.needed_sections`` (``sections.needed_sections``)."""
        del domain  # each case names its domain
        return needed_sections(cases)

    def answers(self) -> Mapping[tuple[str, str, str], str]:
        """(domain, case id, setting) -> the part the setting asks for, for every case in
        a setting: what the reference backend answers with."""
        out: dict[tuple[str, str, str], str] = {}
        for (domain, case_id), split in self.splits.items():
            for setting in SETTINGS:
                if reason_left_out(split, setting) is None:
                    out[(domain, case_id, setting)] = asked_part(split, setting)
        return out


def _kind(reason: str) -> str:
    """A reason without its case-specific detail, to count alike reasons together."""
    return reason.split(" (")[0].split(":")[0]
