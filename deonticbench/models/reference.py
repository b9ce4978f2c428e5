"""``reference``: answers every case with its own gold material.

Program modes get the case's reference program in a ```prolog fence (as stored, when it
already has one); direct mode gets the gold label as "Answer: ...".  It is the
pipeline's self-check, exercising extraction, sandboxed execution, answer reading and
judging without paying for a model: run end to end it must agree with
``deonticbench validate`` (which is not 100% on every domain: see docs/data-audit.md).
Nothing is paid, so nothing is cached.

A request carries no gold (see ``Request``): the backend is built with its own lookup
table of the cases it may be asked about (``load_model("reference", cases=...)``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..data.cases import Case
from ..vocabulary.modes import SETTINGS, VERBAL_MODE
from .base import Completion, GenerationParams, Model, Request


@dataclass(frozen=True)
class GoldMaterial:
    """What the reference backend answers a case with."""

    gold: int | str
    reference_prolog: str


def reference_table(cases: Iterable[Case]) -> dict[tuple[str, str], GoldMaterial]:
    """(domain, case id) -> the case's gold label and reference program."""
    return {(c.domain, c.id): GoldMaterial(c.gold, c.reference_prolog) for c in cases}


def reference_text(material: GoldMaterial, mode: str) -> str:
    if mode == VERBAL_MODE:
        return f"Answer: {material.gold}\nConfidence: 100%"
    if mode == "direct":
        return f"Answer: {material.gold}"
    program = material.reference_prolog.strip()
    if program.startswith("```"):
        # Some published reference programs (the whole splits) are stored as raw
        # responses that already carry their fence: send them as they are.
        return program
    return f"```prolog\n{program}\n```"


class ReferenceModel(Model):
    _cacheable = False
    tool_mode = "native"
    native_tools = True  # as a scripted agent (agents.scripted) it calls tools natively

    def __init__(
        self,
        table: Mapping[tuple[str, str], GoldMaterial] | None = None,
        parts: Mapping[tuple[str, str, str], str] | None = None,
    ) -> None:
        self.spec = "reference"
        self.provider = "reference"
        self.model_name = "reference"
        self.params = GenerationParams()
        self.table = dict(table or {})
        self._parts = dict(parts or {})
        """(domain, case id, setting) -> the part of the reference program a setting asks
        for (docs/settings.md); the harness adds the part the prompt showed."""

    async def generate(self, request: Request) -> list[Completion]:
        if request.mode in SETTINGS:
            part = self._parts.get((request.domain, request.case_id, request.mode))
            if part is None:
                error = f"the reference backend has no {request.mode} part of {request.case_id}"
                return [Completion.failed(error) for _ in range(request.n)]
            text = f"```prolog\n{part.strip()}\n```"
            return [Completion(text=text, finish_reason="stop") for _ in range(request.n)]
        material = self.table.get((request.domain, request.case_id))
        if material is None:
            error = f"the reference backend was not given case {request.domain} {request.case_id}"
            return [Completion.failed(error) for _ in range(request.n)]
        text = reference_text(material, request.mode)
        return [Completion(text=text, finish_reason="stop") for _ in range(request.n)]
