"""The five DeonticBench domains, each as one declarative spec.

This is the only module that knows domain facts: where a domain's data and statutes
live, what its labels look like, which line a program must print, and how a program is
entered.  Everything downstream (loading, prompting, reading answers, judging, scoring)
reads these specs instead of branching on domain names.

Label conventions follow paper 3.2 / B.3: numeric domains are scored by accuracy with a
$1 tolerance; binary domains by macro-F1 with a named positive class.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from ..errors import ConfigError
from ..vocabulary.protocols import DAR_PROTOCOL

LabelKind = Literal["numeric", "binary"]
"""Numeric domains are scored by accuracy, binary ones by macro-F1 (paper B.3)."""
NUMERIC_TOLERANCE = 1
"""The paper's $1: a numeric answer is correct iff ``|round(y) - int(gold)| <= 1``."""
StatuteSource = Literal["shared", "case"]


@dataclass(frozen=True)
class Entrypoint:
    """How a program of this domain must be entered (paper B.4).

    ``answer_predicate`` is the one-argument predicate a program defines for its answer;
    ``print_format`` is the SWI-Prolog ``format/2`` string that ``main/0`` prints it with.
    When a program lacks ``main/0`` or the initialization directive, the harness adds
    them once (see ``programs.ensure_entrypoint``).
    """

    answer_predicate: str
    print_format: str


@dataclass(frozen=True)
class Domain:
    name: str
    """Our name for the domain, used on the command line and in run folders."""
    display_name: str
    """Column heading in the paper's Table 2."""
    hub_config: str
    """Configuration name of the Hugging Face dataset ``gydou/DeonticBench``."""
    mirror_dir: str
    """Folder under ``data/`` in the upstream repository layout."""
    label_kind: LabelKind
    classes: tuple[str, str] = ()  # type: ignore[assignment]
    """Binary domains: (positive, negative) canonical class names; empty for numeric."""
    label_aliases: dict[str, str] = field(default_factory=dict)
    """Binary domains: raw label (lower-cased string form) -> canonical class.  Its
    alphabetic keys are also the words that name a class in a marked or bare direct
    answer (``label_words``)."""
    statute_source: StatuteSource = "case"
    statute_dir: str = ""
    """Shared statutes: folder under ``statutes/`` whose files are concatenated."""
    answer_patterns: tuple[str, ...] = ()
    """Regular expressions that find the answer line in program stdout.  Group 1 is the
    value; for binary domains it is mapped through ``label_aliases``."""
    answer_line: str = ""
    """Human-readable form of the answer line, used in prompts and error messages."""
    entrypoint: Entrypoint | None = None
    direct_words: tuple[str, ...] = ()
    """Binary domains: label words that count as an answer when a direct-mode response
    mentions exactly one label exactly once in prose (the last rule of the reading
    precedence, see ``answers``).  Empty means prose mentions never count, for domains
    whose class words are everyday words such as housing's yes/no; marked answers and
    leading or trailing bare labels count in every domain."""
    answer_markers: tuple[str, ...] = ()
    """Words that mark a direct-mode answer in this domain, besides the generic
    ``Answer:`` and ``Final answer:`` (each is read followed by ``:`` or ``=``)."""
    default_k: int = 4
    """Samples per case (paper 3.2)."""
    few_shot_count: int = 2
    """Default number of few-shot exemplars."""
    required_fields: tuple[str, ...] = ("id", "question", "label", "reference_prolog")
    hub_only_splits: tuple[str, ...] = ()
    """Splits published only on the hub, not in the upstream repository's folders."""
    section_terms: tuple[tuple[str, str], ...] = ()
    """Shared statutes split into sections (``--distractors``): (phrase, section number)
    pairs that say which section a reference program's predicate encodes when its name
    holds the phrase (words joined by ``_``).  A name that holds a section number
    (``tax_section_1a``, ``s7703``) names that section.  Empty: no section structure is
    known, so the domain gets no distractor sections."""
    section_fallback_terms: tuple[tuple[str, str], ...] = ()
    """Like ``section_terms``, read only for a name no other term or number maps (the
    generic ``tax`` of SARA: ``futa_tax`` is §3301, not §1)."""
    case_section: str = ""
    """A regular expression whose group 1, on a case id, is the section the case is filed
    under (SARA binary's ``s152_d_2_H_pos``): the needed sections must include it, or the
    reading of the program is not trusted (``--distractors``)."""

    @property
    def metric(self) -> Literal["accuracy", "macro_f1"]:
        return "accuracy" if self.label_kind == "numeric" else "macro_f1"

    @property
    def positive(self) -> str:
        return self.classes[0]

    @property
    def negative(self) -> str:
        return self.classes[1]

    @property
    def label_words(self) -> tuple[str, ...]:
        """Binary domains: every word that names a class in text (alphabetic aliases)."""
        return tuple(k for k in self.label_aliases if k.isalpha())

    def other_class(self, label: str) -> str:
        """The complement of a canonical class in this binary domain."""
        return self.negative if label == self.positive else self.positive

    def canonical_label(self, raw: object) -> str | None:
        """Map a raw label (gold or read from output) to a canonical class, or None."""
        key = str(raw).strip().lower()
        return self.label_aliases.get(key)


# Numeric answer lines capture everything after the label; ``answers.parse_number``
# then reads the whole value (``1,166.00``, ``$40,741.50``, ``-12.5``, ``26567.``) or
# the line is unreadable: a value is never cut down to a prefix that parses.
_VALUE = r"(.*?)"

# Which SARA section a predicate encodes, from the words of its name: each section's title
# and the terms it defines (docs/settings.md, "Distractor statutes").  Words that several
# sections use alike (joint return, gross income, nonresident alien) name none.
_SARA_SECTION_TERMS: tuple[tuple[str, str], ...] = (
    ("income tax", "1"),
    ("bracket", "1"),
    ("tax rate", "1"),
    ("tax table", "1"),
    ("mfj", "1"),
    ("mfs", "1"),
    ("surviving spouse", "2"),
    ("head of household", "2"),
    ("hoh", "2"),
    ("taxable income", "63"),
    ("standard deduction", "63"),
    ("std deduction", "63"),
    ("itemizes", "63"),
    ("itemized", "68"),
    ("applicable amount", "68"),
    ("exemption", "151"),
    ("exemptions", "151"),
    ("dependent", "152"),
    ("dependents", "152"),
    ("qualifying child", "152"),
    ("qualifying relative", "152"),
    ("descendant", "152"),
    ("futa", "3301"),
    ("unemployment", "3301"),
    ("employer", "3306"),
    ("employment", "3306"),
    ("employed", "3306"),
    ("employee", "3306"),
    ("wages", "3306"),
    ("remuneration", "3306"),
    ("agricultural", "3306"),
    ("domestic service", "3306"),
    ("married", "7703"),
    ("unmarried", "7703"),
    ("marital", "7703"),
    ("legal separation", "7703"),
    ("living apart", "7703"),
)
_SARA_FALLBACK_TERMS: tuple[tuple[str, str], ...] = (("tax", "1"),)

SARA_NUMERIC = Domain(
    name="sara_numeric",
    display_name="SARA Num.",
    hub_config="sara_numeric",
    mirror_dir="sara_numeric",
    label_kind="numeric",
    statute_source="shared",
    statute_dir="sara",
    answer_patterns=(r"^\s*Tax result:\s*" + _VALUE + r"\s*$",),
    answer_markers=("tax result", "result"),
    answer_line="Tax result: <amount>",
    default_k=4,
    few_shot_count=2,
    required_fields=("id", "text", "question", "label", "reference_prolog"),
    section_terms=_SARA_SECTION_TERMS,
    section_fallback_terms=_SARA_FALLBACK_TERMS,
)

SARA_BINARY = Domain(
    name="sara_binary",
    display_name="SARA Bin.",
    hub_config="sara_binary",
    mirror_dir="sara_binary",
    label_kind="binary",
    classes=("Entailment", "Contradiction"),
    label_aliases={
        "1": "Entailment",
        "entailment": "Entailment",
        "entailed": "Entailment",
        "entails": "Entailment",
        "0": "Contradiction",
        "contradiction": "Contradiction",
        "contradicted": "Contradiction",
        "contradicts": "Contradiction",
    },
    statute_source="shared",
    statute_dir="sara",
    answer_patterns=(r"^\s*Result:\s*(Entailment|Contradiction)\s*\.?\s*$",),
    answer_line="Result: Entailment | Result: Contradiction",
    direct_words=("entailment", "contradiction"),
    answer_markers=("result",),
    default_k=4,
    few_shot_count=2,
    required_fields=("id", "text", "question", "label", "reference_prolog"),
    section_terms=_SARA_SECTION_TERMS,
    section_fallback_terms=_SARA_FALLBACK_TERMS,
    case_section=r"^s(\d+)_",
)

AIRLINE = Domain(
    name="airline",
    display_name="Airline",
    hub_config="airline",
    mirror_dir="airline",
    label_kind="numeric",
    statute_source="shared",
    statute_dir="airline",
    answer_patterns=(r"^\s*Total cost:\s*" + _VALUE + r"\s*$",),
    answer_markers=("total cost",),
    answer_line="Total cost: <amount>",
    default_k=3,
    few_shot_count=2,
    required_fields=("id", "text", "question", "label", "reference_prolog"),
)

HOUSING = Domain(
    name="housing",
    display_name="Housing",
    hub_config="housing",
    mirror_dir="housing",
    label_kind="binary",
    classes=("yes", "no"),
    label_aliases={"yes": "yes", "no": "no"},
    statute_source="case",
    answer_patterns=(r"^\s*housing_answer\(\s*(yes|no)\s*\)\s*\.?\s*$",),
    answer_line="housing_answer(yes) | housing_answer(no)",
    answer_markers=("result", "decision"),
    entrypoint=Entrypoint(answer_predicate="housing_answer", print_format="housing_answer(~w).~n"),
    hub_only_splits=("whole",),  # 5,314 cases: upstream moved them to the hub only
    default_k=3,
    few_shot_count=1,
    required_fields=("id", "state", "question", "statutes", "label", "reference_prolog"),
)

USCIS = Domain(
    name="uscis",
    display_name="USCIS-AAO",
    hub_config="uscis-aao",
    mirror_dir="uscis-aao",
    label_kind="binary",
    classes=("Accepted", "Dismissed"),
    # The AAO's own words: an appeal it accepts is "sustained".
    label_aliases={"accepted": "Accepted", "sustained": "Accepted", "dismissed": "Dismissed"},
    statute_source="case",
    answer_patterns=(r"^\s*(Accepted|Dismissed)\s*\.?\s*$",),
    answer_line="Accepted | Dismissed",
    direct_words=("accepted", "dismissed"),
    answer_markers=("decision", "result"),
    entrypoint=Entrypoint(answer_predicate="decision", print_format="~w~n"),
    default_k=4,
    few_shot_count=1,
    required_fields=("id", "text", "statutes", "question", "label", "reference_prolog"),
)

DOMAINS: dict[str, Domain] = {
    d.name: d for d in (SARA_NUMERIC, SARA_BINARY, AIRLINE, HOUSING, USCIS)
}
"""All domains, in a fixed order (the report module orders columns as the paper's Table 2)."""

DAR_DOMAINS: Mapping[str, str] = {
    SARA_NUMERIC.name: "sara_numeric",
    SARA_BINARY.name: "sara_binary",
    AIRLINE.name: "airline",
    USCIS.name: "uscis-aao",
}
"""The domains DAR ran (our domain name -> DAR's subdomain name); housing is not one.
The dar protocol's task set: the spec, ``eval``, the Harbor export and DAR's task
rendering (``prompting.dar_task``) all read it here."""


def default_domains(protocol: str) -> tuple[str, ...]:
    """The domains a run of ``protocol`` takes when none are named (or ``all``): every
    domain, or under ``dar`` DAR's task set, in ``DOMAINS`` order (``RunSpec`` and
    ``eval --domains all`` alike; the modes' counterpart is ``default_modes``)."""
    if protocol == DAR_PROTOCOL:
        return tuple(name for name in DOMAINS if name in DAR_DOMAINS)
    return tuple(DOMAINS)


_PAPER_COLUMNS = ("sara_numeric", "airline", "sara_binary", "uscis", "housing")
DISPLAY_ORDER: tuple[str, ...] = tuple(d for d in _PAPER_COLUMNS if d in DOMAINS) + tuple(
    d for d in DOMAINS if d not in _PAPER_COLUMNS
)
"""The one order in which every table, long table, figure and listing shows domains: the
paper's Table 2 columns (accuracy domains, then macro-F1 ones); a domain the paper does not
have follows in ``DOMAINS`` order."""

# Names users may type for a domain: ours, the hub config and the mirror folder.
_ALIASES = {alias: d for d in DOMAINS.values() for alias in (d.name, d.hub_config, d.mirror_dir)}


class UnknownDomainError(ConfigError, ValueError):
    pass


def get_domain(name: str) -> Domain:
    """Return the domain called ``name`` (ours, the hub config or the folder name)."""
    try:
        return _ALIASES[name.strip().lower()]
    except KeyError:
        known = ", ".join(DOMAINS)
        raise UnknownDomainError(f"unknown domain {name!r}; choose from {known}.") from None


def names_every_domain(spec: str | None) -> bool:
    """Whether a ``--domains`` value means every domain (None, empty, or 'all')."""
    return spec is None or spec.strip().lower() in ("", "all")


def parse_domains(spec: str | None) -> list[Domain]:
    """Parse a comma-separated list of domain names; None or 'all' means every domain."""
    if spec is None or names_every_domain(spec):
        return list(DOMAINS.values())
    chosen = [get_domain(part) for part in spec.split(",") if part.strip()]
    # A domain named twice (or by two of its aliases) is one domain: never run it twice.
    return list({d.name: d for d in chosen}.values())


def read_from_marker(domain: Domain, marker: str) -> Domain:
    """``domain`` read from lines ``<marker> <value>`` (the harness's number grammar and
    class names, any letter case) instead of its own answer line, its programs run as
    written (no entrypoint added): the harness's reading of a task that asks every mode
    for one marked line, as DAR's tasks ask for ``Answer: <value>``."""
    # A class may end with a period, as the domains' own class lines may.
    tail = r"\s*$" if domain.label_kind == "numeric" else r"\s*\.?\s*$"
    pattern = rf"^\s*{re.escape(marker)}\s*{_VALUE}{tail}"
    return replace(
        domain, answer_patterns=(pattern,), answer_line=f"{marker} <value>", entrypoint=None
    )
