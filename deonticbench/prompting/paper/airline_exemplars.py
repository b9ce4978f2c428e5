"""Airline few-shot under the paper protocol: upstream's cabin-class retrieval.

generate_e2e.py gives each airline few-shot case one exemplar: the first case of the
cases file whose text names the same cabin class (else the fallback class), excluding
cases with the very same text, shown with its reference program.  The pool is the file
being evaluated (its ``--airline-exemplar-pool`` defaults to ``--cases-path``), so on the
hard split each prompt shows another hard case's reference program: a leak the harness
protocol avoids, reproduced here on purpose and flagged by
``vocabulary.protocols.shows_reference_programs``.  The indexing and the choice are upstream's own
functions (``extract_cabin_class``, ``retrieve_airline_exemplar``,
``format_airline_exemplar``); only the pool is built here, from the split's cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...data.cases import Case
from .texts import PaperTexts


class AirlinePool:
    """The evaluated split's airline cases, indexed by cabin class as upstream indexes them."""

    def __init__(self, texts: PaperTexts, cases: Sequence[Case]) -> None:
        self._texts = texts
        extract = texts.function("extract_cabin_class")
        self._by_class: dict[Any, list[dict[str, Any]]] = {}
        for case in cases:
            # load_airline_exemplar_pool's entry for a DeonticBench row: the reference
            # program stands in for 'correct_prolog_generation'.
            entry = {
                "id": case.id,
                "text": case.text,
                "question": case.question,
                "correct_prolog_generation": case.reference_prolog,
            }
            self._by_class.setdefault(extract(case.text), []).append(entry)
        self._cases = {case.id: case for case in cases}

    def exemplar(self, case: Case) -> tuple[str, Case | None]:
        """The exemplar text upstream puts in ``case``'s prompt, and the pool case it shows."""
        text = str(self._texts.function("retrieve_airline_exemplar")(self._by_class, case.text))
        fmt = self._texts.function("format_airline_exemplar")
        for entries in self._by_class.values():
            for entry in entries:
                if entry["text"] != case.text and fmt(entry) == text:
                    return text, self._cases.get(entry["id"])
        return text, None
