"""``reference``: answers every case with its own gold material.

Program modes get the case's reference program in a ```prolog fence (as stored, when it
already has one); direct mode gets the gold label as "Answer: ...".  It is the
pipeline's self-check, exercising extraction, sandboxed execution, answer reading and
judging without paying for a model: run end to end it must agree with
``deonticbench validate`` (which is not 100% on every domain: see docs/data-audit.md).
Nothing is paid, so nothing is cached.
"""

from __future__ import annotations

from .base import Completion, GenerationParams, Model, Request


def reference_text(request: Request) -> str:
    case = request.case
    if request.mode == "direct":
        return f"Answer: {case.gold}"
    program = case.reference_prolog.strip()
    if program.startswith("```"):
        # Some published reference programs (the whole splits) are stored as raw
        # responses that already carry their fence: send them as they are.
        return program
    return f"```prolog\n{program}\n```"


class ReferenceModel(Model):
    cacheable = False

    def __init__(self) -> None:
        self.spec = "reference"
        self.provider = "reference"
        self.model_name = "reference"
        self.params = GenerationParams()

    async def generate(self, request: Request) -> list[Completion]:
        text = reference_text(request)
        return [Completion(text=text, finish_reason="stop") for _ in range(request.n)]
