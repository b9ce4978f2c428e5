"""The paper protocol's first prompt of a case: the messages upstream's generate_e2e.py sends.

Which composer a (domain, mode) gets, and the case dict it is given, follow the script's
``main`` and ``load_cases_from_json``; the composers themselves are upstream's own
(``texts``).  The harness's modes map onto upstream's ``--task`` values: direct ->
``direct``, zero-shot -> ``standalone``, few-shot -> ``prolog``.

Shared statutes (SARA, airline) are the case's statutes as ``data.statutes`` joins them:
upstream's separator, files in natural file-name order rather than upstream's
``os.listdir`` order, which differs between filesystems (so upstream's own prompts differ
between machines; sorted, ours do not).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from ...data.cases import Case
from ...data.domains import AIRLINE, HOUSING, SARA_BINARY, SARA_NUMERIC, USCIS, get_domain
from ...data.upstream import UPSTREAM_FILES
from ...vocabulary.chat import Message
from ...vocabulary.modes import Mode
from ...vocabulary.protocols import mode_protocol
from ..render import Prompt, prompt_hash
from .texts import PaperTexts

UPSTREAM_TASKS: dict[str, str] = {
    "direct": "direct",
    "zero-shot": "standalone",
    "few-shot": "prolog",
}
"""Our prompted mode -> upstream's ``--task``."""
UPSTREAM_DATASETS: dict[str, str] = {
    SARA_NUMERIC.name: "sara_numeric",
    SARA_BINARY.name: "sara_binary",
    AIRLINE.name: "airline",
    HOUSING.name: "housing",
    USCIS.name: "uscis",
}
"""Our domain name -> upstream's ``--dataset``."""
_COMPOSERS: dict[tuple[str, str], str] = {
    ("direct", "sara_numeric"): "compose_prompt_source",
    ("direct", "airline"): "compose_prompt_source",
    ("direct", "sara_binary"): "compose_prompt_source_binary",
    ("direct", "housing"): "compose_prompt_source_legal_ir",
    ("direct", "uscis"): "compose_prompt_source_uscis",
    ("standalone", "sara_numeric"): "compose_prompt_standalone_prolog_sara",
    ("standalone", "sara_binary"): "compose_prompt_standalone_prolog_binary",
    ("standalone", "airline"): "compose_prompt_standalone_prolog_airline",
    ("standalone", "housing"): "compose_prompt_standalone_prolog_legal_ir",
    ("standalone", "uscis"): "compose_prompt_standalone_prolog_uscis",
    ("prolog", "sara_numeric"): "compose_prompt_prolog_sara",
    ("prolog", "sara_binary"): "compose_prompt_prolog_binary",
    ("prolog", "airline"): "compose_prompt_prolog_airline",
    ("prolog", "housing"): "compose_prompt_prolog_legal_ir",
    ("prolog", "uscis"): "compose_prompt_prolog_uscis",
}
"""generate_e2e.py's ``main``: which composer each task and dataset get."""
_FIXED_EXEMPLARS: dict[str, str] = {
    "housing": "EXAMPLE_LEGAL_IR_ONE_SHOT",  # --num-exemplars defaults to 1 for housing
    "uscis": "EXAMPLE_USCIS_ONE_SHOT",  # upstream always passes the one-shot text
}
"""Few-shot exemplars ``main`` passes explicitly; SARA's are the composers' defaults."""


def upstream_case(case: Case) -> dict[str, Any]:
    """The case dict ``load_cases_from_json`` builds, minus the label (never in a prompt)."""
    dataset = UPSTREAM_DATASETS[case.domain]
    if dataset == "housing":
        return {
            "id": case.id,
            "state": case.extra.get("state", ""),
            "question": case.question,
            "statutes_text": case.statutes,
        }
    if dataset == "uscis":
        instruction = (
            f"You are given the following facts:\n{case.text}\n\n"
            f"You are given the following rules:\n{case.statutes}"
        )
        return {
            "id": case.id,
            "text": case.text,
            "statutes_text": case.statutes,
            "instruction": instruction,
            "question": case.question,
        }
    return {"id": case.id, "text": case.text, "question": case.question}


def render_paper(
    texts: PaperTexts, case: Case, mode: Mode, *, exemplar: str = "", statutes: str = ""
) -> Prompt:
    """The system and user messages upstream sends for ``case`` in ``mode``; airline
    few-shot needs its retrieved ``exemplar`` (``exemplars.airline_exemplar``).
    ``statutes``: the domain's shared statutes joined as the paper protocol joins them
    (sorted file names); empty: the case's own."""
    if mode_protocol("paper", mode) != "paper":
        raise ValueError(f"the paper protocol has no prompt for {mode}")
    task, dataset = UPSTREAM_TASKS[mode], UPSTREAM_DATASETS[case.domain]
    composer = texts.function(_COMPOSERS[(task, dataset)])
    # The domains whose statutes are shared files take them as a composer argument; the
    # others' statutes are part of the case (the domain spec says which, once).
    shared = get_domain(case.domain).statute_source == "shared"
    statutes = (statutes or case.statutes) if shared else ""
    values = upstream_case(case)
    kwargs: dict[str, Any] = {}
    if task == "prolog" and dataset in _FIXED_EXEMPLARS:
        kwargs["exemplars"] = texts.constant(_FIXED_EXEMPLARS[dataset])
    if task == "prolog" and dataset == "airline":
        if not exemplar:
            raise ValueError(f"airline few-shot case {case.id} needs its retrieved exemplar")
        values["exemplar"] = exemplar

    def compose(case_values: dict[str, Any]) -> str:
        return str(composer(statutes, case_values, **kwargs))

    user = compose(values)
    messages = (
        Message(role="system", content=texts.system_message),
        Message(role="user", content=user),
    )
    return Prompt(
        messages=messages,
        template=f"paper:{case.domain}/{mode}",
        template_hash=_template_hash(texts, case.domain, mode),
        prompt_hash=prompt_hash(messages),
        shared_prefix=_shared_prefix(compose, values),
    )


def _template_hash(texts: PaperTexts, domain: str, mode: str) -> str:
    # Upstream's files as verified, and which composer: a new upstream commit is a new hash.
    composer = _COMPOSERS[(UPSTREAM_TASKS[mode], UPSTREAM_DATASETS[domain])]
    return hashlib.sha256(
        f"paper\0{texts.files.digest(UPSTREAM_FILES)}\0{composer}".encode()
    ).hexdigest()


def _shared_prefix(compose: Callable[[dict[str, Any]], str], values: dict[str, Any]) -> int:
    """How much of the user message every prompt of its template shares: what the
    composer writes before the first case-specific value (the case, its question, its own
    statutes, a retrieved exemplar).  Measured by composing once more with a marker in
    place of each such value: a SARA few-shot prompt shares the statutes and upstream's
    fixed exemplars, an airline one the statutes only (its exemplar is the case's).  The
    dry run prices the prompt cache by it; it never changes the text sent."""
    marker = "\x00"
    probe = compose(
        {k: marker if isinstance(v, str) and k != "id" else v for k, v in values.items()}
    )
    at = probe.find(marker)
    return at if at >= 0 else len(probe)
