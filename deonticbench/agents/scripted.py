"""Agents that need no model: the reference agent and the replay of saved trajectories.

* ``reference`` as an agent reads the statute, writes the case's reference program to
  ``solution.pl`` (direct: the gold answer to ``output/answer.txt``), runs it and
  submits, with either tool set: the agentic self-check, which must agree with
  ``validate`` case by case, since the judge runs the very program validate runs.
* ``replay:<run folder>`` sends each saved agent step of a sample's trajectory again, in
  order; the tools run again on the fresh workspace, so the replayed trial is judged
  anew (a trajectory that ran out of turns replays as far as it went).

``as_agent(model)`` wraps the backend the runner was given; prompted requests still go
to the backend itself.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from ..models.base import Completion, Model, Request, cacheable
from ..models.reference import ReferenceModel
from ..models.replay import ReplayModel
from ..reading.judging import reference_code
from ..store.trajectory import read_trajectory, trajectory_path
from ..vocabulary.chat import ToolCall
from ..vocabulary.modes import is_agentic, prompted_counterpart
from .workspace import ANSWER_FILE, SOLUTION_FILE, STATUTE_FILE


def turn_of(request: Request) -> int:
    """Which turn a request is: the assistant messages already in its conversation."""
    return sum(1 for m in request.messages if m.role == "assistant")


def _tool_set(request: Request) -> str:
    return "shell" if any(t.name == "bash" for t in request.tools) else "prolog"


class _Wrapper(Model):
    """A scripted agent in front of a backend: prompted requests go to the backend."""

    tool_mode = "native"
    native_tools = True

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.spec = inner.spec
        self.provider = inner.provider
        self.model_name = inner.model_name
        self.params = inner.params
        self._cacheable = cacheable(inner)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    async def check(self) -> None:
        await self.inner.check()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def generate(self, request: Request) -> list[Completion]:
        if not is_agentic(request.mode):
            return await self.inner.generate(request)
        return [self.turn(request) for _ in range(request.n)]

    def turn(self, request: Request) -> Completion:
        raise NotImplementedError


def _call(turn: int, name: str, **arguments: Any) -> Completion:
    return Completion(
        text=f"calling {name}",
        finish_reason="tool_calls",
        tool_calls=(ToolCall(f"ref_{turn}", name, arguments),),
    )


class ReferenceAgent(_Wrapper):
    """The reference backend as an agent (see the module's docstring)."""

    inner: ReferenceModel

    def turn(self, request: Request) -> Completion:
        material = self.inner.table.get((request.domain, request.case_id))
        if material is None:
            return Completion.failed(
                f"the reference backend was not given case {request.domain} {request.case_id}"
            )
        direct = prompted_counterpart(request.mode) == "direct"
        target = ANSWER_FILE if direct else SOLUTION_FILE
        content = (
            f"Answer: {material.gold}\n"
            if direct
            else reference_code(material.reference_prolog).rstrip("\n") + "\n"
        )
        turn = turn_of(request)
        if _tool_set(request) == "shell":
            encoded = base64.b64encode(content.encode("utf-8", errors="surrogatepass")).decode()
            script = [
                f"head -c 2000 {STATUTE_FILE}",
                f"printf '%s' '{encoded}' | base64 -d > {target}",
                *([] if direct else [f"swipl {SOLUTION_FILE}"]),
            ]
            if turn < len(script):
                return _call(turn, "bash", command=script[turn])
            return Completion(text="done", finish_reason="stop")
        steps: list[tuple[str, dict[str, Any]]] = [
            ("read_file", {"path": STATUTE_FILE, "limit": 40}),
            ("write_file", {"path": target, "content": content}),
            *([] if direct else [("run_prolog", {"path": SOLUTION_FILE})]),
            ("submit", {}),
        ]
        if turn < len(steps):
            name, arguments = steps[turn]
            return _call(turn, name, **arguments)
        return Completion(text="done", finish_reason="stop")


class TrajectoryReplay(_Wrapper):
    """A run folder's trajectories, replayed turn by turn (see the module's docstring)."""

    inner: ReplayModel

    def __init__(self, inner: ReplayModel) -> None:
        super().__init__(inner)
        self._loaded: dict[str, list[dict[str, Any]]] = {}

    def _steps(self, request: Request, directory: Path) -> list[dict[str, Any]]:
        relative = trajectory_path(
            request.domain, request.case_id, request.mode, request.sample_start
        )
        if relative not in self._loaded:
            atif = read_trajectory(directory, relative)
            self._loaded[relative] = [s for s in atif["steps"] if s.get("source") == "agent"]
        return self._loaded[relative]

    def turn(self, request: Request) -> Completion:
        directory = self.inner.directory
        where = f"{request.domain} {request.case_id} {request.mode} sample {request.sample_start}"
        if directory is None:
            return Completion.failed(
                f"replaying {request.mode} needs the run folder (its trajectories): "
                "write replay:<run folder>"
            )
        try:
            steps = self._steps(request, directory)
        except Exception as exc:  # a missing or unreadable file is this sample's error
            return self.inner.missed(f"no saved trajectory for {where}: {exc}")
        turn = turn_of(request)
        if turn >= len(steps):
            return self.inner.missed(f"the saved trajectory of {where} has no turn {turn + 1}")
        step = steps[turn]
        metrics = step.get("metrics") or {}
        message = step.get("message")
        extra = step.get("extra") or {}
        malformed = extra.get("malformed_calls") or {}
        # A turn the trial saw cut off is replayed as cut off, so it is answered the same.
        cut = any(g.get("rule") == "truncated" for g in extra.get("guard") or ())
        return Completion(
            text=message if isinstance(message, str) else "",
            tokens_in=int(metrics.get("prompt_tokens") or 0),
            tokens_out=int(metrics.get("completion_tokens") or 0),
            finish_reason="length" if cut else "replay",
            tool_calls=tuple(
                _saved_call(c, malformed.get(str(i)))
                for i, c in enumerate(step.get("tool_calls") or [])
            ),
        )


def _saved_call(call: dict[str, Any], malformed: Any) -> ToolCall:
    """A saved call as the trial made it: one whose arguments could not be read is
    answered with the same error again, not run with empty arguments."""
    arguments = call.get("arguments")
    error = raw = None
    if isinstance(malformed, dict):
        error = str(malformed.get("error") or "the arguments could not be read")
        raw = malformed.get("arguments") if isinstance(malformed.get("arguments"), str) else None
    return ToolCall(
        str(call.get("tool_call_id")),
        str(call.get("function_name")),
        arguments if isinstance(arguments, dict) else {},
        error,
        raw,
    )


def as_agent(model: Model) -> Model:
    """The backend an agentic trial talks to: a scripted agent for ``reference`` and
    ``replay:``, the backend itself otherwise."""
    if isinstance(model, ReferenceModel):
        return ReferenceAgent(model)
    if isinstance(model, ReplayModel):
        return TrajectoryReplay(model)
    return model
