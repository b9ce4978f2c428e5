"""A bounded pool of warm sandboxed workers (implementation in progress)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Literal

from .execution import Execution, Limits

SandboxChoice = Literal["auto", "bwrap", "rlimits"]


class Solver:
    def __init__(
        self,
        workers: int | None = None,
        limits: Limits | None = None,
        sandbox: SandboxChoice = "auto",
    ) -> None:
        self.limits = limits or Limits()
        raise NotImplementedError

    def run(self, program: str, limits: Limits | None = None) -> Execution:
        raise NotImplementedError

    async def arun(self, program: str, limits: Limits | None = None) -> Execution:
        return await asyncio.to_thread(self.run, program, limits)

    def map(self, programs: Iterable[str], limits: Limits | None = None) -> list[Execution]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Solver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_program(program: str, limits: Limits | None = None) -> Execution:
    with Solver(workers=1, limits=limits) as solver:
        return solver.run(program)
