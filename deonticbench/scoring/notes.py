"""The caveats of a run's numbers: the one source of the notes the terminal prints
under a run's summary, results.json's ``notes`` and the report's first page.

A note says why a number that looks like a broken harness is right: reference programs
that disagree with their gold label (a defect of the data), a binary domain whose gold
labels are all one class (macro-F1 capped at 50), a cell whose bootstrap mean lies far
from its point value (``bootstrap_gap_note``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ..data.domains import DOMAINS
from ..store.record import Record
from ..store.run import Run
from ..vocabulary.modes import writes_program
from ..vocabulary.protocols import (
    departure_note,
    reference_leak_note,
    sampling_departures,
    shows_reference_programs,
)
from .encoding import Encoded

DATA_AUDIT_DOC = "docs/data-audit.md"


def closing_notes(
    records: Iterable[Record],
    *,
    reference: bool,
    setting_notes: Iterable[str],
    replay_misses: int,
    replay_file: str,
) -> list[str]:
    """The sentences under a run's last table (each printed after ``note:``): the
    ``run_notes`` of its records, what the settings left out and why (also in
    config.json's "settings"), and a replay's samples that found no saved response."""
    notes = run_notes(records, reference=reference) + list(setting_notes)
    if replay_misses:
        # A partial replay is honest, but its errors must not pass unremarked.
        notes.append(
            f"{replay_misses} sample(s) found no saved response in {replay_file} "
            "(or a saved trajectory that ended early); they are recorded as errors."
        )
    return notes


def run_notes(records: Iterable[Record], *, reference: bool) -> list[str]:
    """Sentences that explain numbers which would otherwise look like a broken harness
    (without the ``note:`` the terminal puts before each).

    * ``reference``: the run answered with each case's reference program (or its gold
      label in direct mode), so every case that is not correct is a disagreement between
      the published program and its gold label: say how many, and where they are
      explained.
    * A binary domain whose gold labels in the run are all one class: the other class's
      F1 is 0 whatever the answers, so macro-F1 cannot exceed 50.
    """
    records = list(records)
    notes: list[str] = []
    if reference:
        notes += _dar_reference_notes(records)
        disagree: dict[str, set[str]] = {}
        cases: dict[str, set[str]] = {}
        for r in records:
            if _dar_program_trial(r):
                continue  # not the data's fault: _dar_reference_notes says why
            cases.setdefault(r.domain, set()).add(r.case_id)
            if r.final.outcome != "correct":
                disagree.setdefault(r.domain, set()).add(r.case_id)
        if disagree:
            total = sum(len(c) for c in disagree.values())
            parts = ", ".join(
                f"{d} {len(disagree[d])} of {len(cases[d])}"
                for d in [
                    *[n for n in DOMAINS if n in disagree],
                    *sorted(set(disagree) - {*DOMAINS}),
                ]
            )
            notes.append(
                f"in {total} case(s) the published reference answer disagrees with "
                f"the gold label or gives none ({parts}); these are defects of the data, "
                f"not of the harness, explained case by case in {DATA_AUDIT_DOC}."
            )
    golds: dict[str, set[str]] = {}
    for r in records:
        domain = DOMAINS.get(r.domain)
        if domain is not None and domain.label_kind == "binary":
            golds.setdefault(r.domain, set()).add(domain.canonical_label(r.gold) or str(r.gold))
    for name in [n for n in DOMAINS if n in golds]:
        if len(golds[name]) == 1:
            (only,) = golds[name]
            absent = DOMAINS[name].other_class(only)
            notes.append(
                f"every {name} gold label in this run is {only!r}, so the F1 of "
                f"{absent!r} is 0 whatever the answers and macro-F1 is capped at 50 here "
                "(paper B.3 averages both classes)."
            )
    return notes + choice_fault_notes(records)


def _dar_program_trial(record: Record) -> bool:
    """A Prolog-mode trial judged by DAR's verifier (``--protocol dar``), whose answer
    the verifier reads from what ``/app/solution.pl`` prints."""
    return record.agent is not None and record.agent.dar is not None and writes_program(record.mode)


def _dar_reference_notes(records: Sequence[Record]) -> list[str]:
    """Why the reference model's Prolog-mode trials under the dar protocol answer little:
    the published programs print each domain's own answer line, and DAR's verifier (and
    the harness reader, reading DAR's task) wants ``Answer: <value>``."""
    trials = [r for r in records if _dar_program_trial(r)]
    unread = [r for r in trials if r.final.outcome != "correct"]
    if not unread:
        return []
    return [
        f"{len(unread)} of {len(trials)} dar Prolog-mode trial(s) of the reference model read "
        "no correct answer: the published reference programs print their domain's own "
        "answer line, not the `Answer: <value>` line DAR's task asks for, so DAR's verifier "
        "and the harness reader find none there (a framing the programs predate, not a "
        "defect of the data)."
    ]


_CHOICE_FAULT_SENTENCES = {
    "drawn_alone": (
        "were drawn one call each: the server answered fewer choices than n, and the "
        "harness protocol fetches the rest instead of counting them as abstentions"
    ),
    "missing": (
        "are empty replies read as abstentions: the server answered fewer choices than n, "
        "and the paper protocol records the missing samples as upstream's script does"
    ),
    "not_sent": (
        "are empty replies read as abstentions, their calls never sent: upstream's script "
        "draws this model's samples one call each and stops a case at a body it cannot "
        "read to the end (choices a number, a usage count null or not a number), and the "
        "paper protocol stops there too"
    ),
}
"""What a run's figures say of the samples a server's short reply shaped, by
``Attempt.choice_fault`` (docs/prompts.md, "Server faults", decides the rule)."""

_REPLY_FAULT_SENTENCES = {
    "no_choices": (
        "came in a reply whose choices were absent, null or empty",
        "response_parse_error, with an empty answer",
    ),
    "choices_not_list": (
        "came in a reply whose choices were not a list (a string, say)",
        "an empty answer (empty_output for a string's characters or an object's keys, "
        "taken as choices without a message; response_parse_error past their count, or "
        "for a number, which also ends the case)",
    ),
    "no_message": (
        "came in a choice without a message object",
        "empty_output, with an empty answer",
    ),
    "content_not_text": (
        "came with a message content that is not text (a number, an object)",
        "ok, with str() of the content as the answer",
    ),
    "empty_output": (
        "came without text (content null, empty or blank) and without a tool call",
        "empty_output, with that text as the answer",
    ),
}
"""The replies that held no usable text, by ``Attempt.choice_fault``
(``models.base.REPLY_FAULTS``): what the body held, and what upstream's script records
for such a sample (its ``generation_statuses``; docs/prompts.md, "Server faults")."""


def choice_fault_notes(records: Iterable[Record]) -> list[str]:
    """A sentence per kind of server fault the run met: how many samples, in which
    domain and mode (of how many), and what the protocol made of them."""
    samples: dict[tuple[str, str], int] = {}
    faulty: dict[str, dict[tuple[str, str], int]] = {}
    failed: dict[str, int] = {}
    for r in records:
        cell = (r.domain, r.mode)
        samples[cell] = samples.get(cell, 0) + 1
        for fault in {a.choice_fault for a in r.attempts if a.choice_fault}:
            faulty.setdefault(fault, {}).setdefault(cell, 0)
            faulty[fault][cell] += 1
            if any(a.choice_fault == fault and a.error for a in r.attempts):
                failed[fault] = failed.get(fault, 0) + 1
    notes = []
    for fault in (*_CHOICE_FAULT_SENTENCES, *_REPLY_FAULT_SENTENCES):
        cells = faulty.get(fault, {})
        if not cells:
            continue
        where = ", ".join(f"{d} {m} {n} of {samples[(d, m)]}" for (d, m), n in cells.items())
        count = sum(cells.values())
        if fault in _CHOICE_FAULT_SENTENCES:
            said = _CHOICE_FAULT_SENTENCES[fault]
        else:
            body, upstream = _REPLY_FAULT_SENTENCES[fault]
            decided = _decided(fault, count, failed.get(fault, 0))
            said = f"{body}: {decided}; upstream's script records such a sample as {upstream}"
        notes.append(f'{count} sample(s) ({where}) {said} (docs/prompts.md, "Server faults").')
    return notes


def _decided(fault: str, count: int, failed: int) -> str:
    """What the harness made of ``count`` samples of one reply ``fault``, ``failed`` of
    which ended as the request's error (the reply stayed so on every try)."""
    read = (
        "read as str() of the content, as upstream's script reads it"
        if fault == "content_not_text"
        else "read as replies without text, so abstentions"
    )
    error = "the reply stayed so on every try, so the request failed (abstentions)"
    if not failed:
        return read
    if failed == count:
        return error
    return f"{count - failed} {read}, {failed} where {error}"


def protocol_notes(protocols: Sequence[tuple[str, str]]) -> list[str]:
    """For a table beside the paper: a sentence for each run, of those given as (name,
    protocol), whose prompted figures do not compare with the published cells, which
    came from upstream's scripts (``--protocol paper``)."""
    return [
        f"{name}: the paper's cells are not comparable with this run's prompted modes: it "
        f"followed the {protocol} protocol, the paper's figures upstream's (eval --protocol "
        'paper; docs/prompts.md "Protocols").'
        for name, protocol in protocols
        if protocol != "paper"
    ]


def cross_protocol_note(compared: Sequence[tuple[str, str, str]]) -> str | None:
    """One sentence when differences set figures of two protocols against each other,
    from each difference's (label, protocol of A, protocol of B); None when none does."""
    mixed = [(label, a, b) for label, a, b in compared if a != b]
    if not mixed:
        return None
    label, a, b = mixed[0]
    return (
        f"{len(mixed)} of {len(compared)} differences set figures of different protocols "
        f"against each other (first: {label}, {a} against {b}), so each also measures "
        "their prompts, sampling and reader."
    )


BOOTSTRAP_GAP_NOTE = 0.02
"""A cell whose bootstrap mean lies this far (2 points) or more from its point value gets
a note: the tables print the mean (paper B.3), and a gap this size changes how it reads."""


ONE_CLASS_SHARE = 0.05
"""Replicates with one gold class only are named as the cause when at least this share of
them is (below it they cannot move the mean by the 2 points of ``BOOTSTRAP_GAP_NOTE``)."""


def bootstrap_gap_note(
    domain: str, mode: str, stage: str, *, point: float, mean: float, gold: Sequence[int] | None
) -> str | None:
    """Why a cell's bootstrap mean lies far from its point value, or None when it does
    not; the same rule for every domain.  ``gold``: a binary domain's gold class index of
    each case (None for a numeric domain)."""
    if not (math.isfinite(point) and math.isfinite(mean)) or abs(mean - point) < BOOTSTRAP_GAP_NOTE:
        return None
    n = len(gold) if gold is not None else 0
    where = "below" if mean < point else "above"
    head = (
        f"{domain} {mode} ({stage}): the bootstrap mean {100 * mean:.1f} lies "
        f"{100 * abs(mean - point):.1f} points {where} the point value {100 * point:.1f}"
    )
    # A replicate draws n cases with replacement; it holds one class only with
    # probability sum over classes of (share of the class) ** n.
    one_class = (
        sum((list(gold).count(c) / n) ** n for c in set(gold))
        if gold is not None and n and len(set(gold)) > 1
        else 0.0
    )
    if one_class >= ONE_CLASS_SHARE:
        return (
            f"{head}: with {n} cases, about {100 * one_class:.0f}% of the replicates draw "
            "cases of one gold class only, whose macro-F1 is at most 50 (paper B.3 "
            "averages both classes); the point value is the metric on the cases as they are."
        )
    return (
        f"{head}: the split is too small for the metric to be stable under resampling "
        "(each replicate draws the cases again); the point value is the metric on the cases "
        "as they are."
    )


IMPORTED_PROVIDERS = frozenset({"inspect", "harbor", "upstream"})
"""``config.json``'s ``model.provider`` of a run brought in from another tool's outputs."""


def group_notes(
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
        redo = (
            "they failed in the tool that made the replies, so redo them there and import again"
            if run.provider in IMPORTED_PROVIDERS
            else "re-run the eval command with --retry-errors to redo them"
        )
        notes.append(
            f"{domain} {mode} ({stage}): {failed} sample(s) are abstentions "
            f"because the request failed, not the model; {redo}"
        )
    return notes


def leak_notes(run: Run, cells: Iterable[tuple[str, str]]) -> list[str]:
    """Beside the marked figures (``tables``): prompts that showed other cases' answers,
    one sentence per domain."""
    return list(
        dict.fromkeys(
            reference_leak_note(DOMAINS[domain].display_name)
            for domain, mode in cells
            if shows_reference_programs(run.protocol, domain, mode)
        )
    )


def departure_notes(run: Run, modes: Iterable[str]) -> list[str]:
    """Beside the figures marked ``DEPARTURE_MARK`` (``tables``): upstream's flags set
    otherwise than in the published runs, said once."""
    found = (sampling_departures(run.protocol, mode, run.config) for mode in modes)
    return list(dict.fromkeys(departure_note(d) for d in found if d))


def against_paper_notes(runs: Sequence[Run]) -> tuple[list[str], list[str]]:
    """``score --against paper``: which runs' figures the published cells do not compare
    with: (another protocol's notes, another split's notes)."""
    protocols = [f"note: {n}" for n in protocol_notes([(str(r.path), r.protocol) for r in runs])]
    splits = [
        f"{r.path}: note: the paper's rows are on the hard split; this run is on "
        f"{r.split!r}, so the two are not comparable."
        for r in runs
        if r.split not in (None, "hard")
    ]
    return protocols, splits
