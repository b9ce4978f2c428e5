"""What a finished trial becomes: its judged attempt, its ``AgentInfo``, its trajectory.

One statement of each, used by the harness's loop, inspect's agent and Harbor's import:

* ``trial_attempt``: the record's one attempt, the judged final state with the tokens
  summed over the turns; an abstention's reason says how the trial ended
  (``... (trial ended: max_turns)``), or, for an import, what the source reported.
* ``agent_info``: the trial's facts, tool calls counted from its trajectory
  (``count_tool_calls``: every call the agent made, malformed ones under the name as
  called), and its turns by kind (``turn_kind`` names each turn in its step's
  ``extra.kind``; ``count_turn_kinds`` counts them).
* ``new_trial_trajectory``/``finish_trial_trajectory``: the ATIF root of a trial (its
  session id, agent, model, the tool set's definitions, the opening messages) and its
  closing facts (stop reason, tool set, tool mode, the judged answer).
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from ..data.cases import Gold
from ..data.domains import Domain
from ..store.record import TURN_KINDS, AgentInfo, Attempt
from ..store.trajectory import add_step, finish_trajectory, new_trajectory
from ..vocabulary.chat import Message, ToolCall
from .judge import Judgement
from .tool_table import tool_specs

AGENT_NAME = "deonticbench-agent"
AGENT_VERSION = "1"


def trial_attempt(
    judgement: Judgement,
    domain: Domain,
    gold: Gold,
    *,
    prompt_hash: str,
    tokens: tuple[int, int],
    ended: str | None,
    latency_s: float = 0.0,
    cached: bool = False,
    error: str | None = None,
) -> Attempt:
    """The record's one attempt.  ``ended`` (``trial_ended(stop)`` for a trial of ours)
    is appended to an abstention's reason in brackets; None appends nothing."""
    attempt = judgement.attempt(domain, gold, prompt_hash=prompt_hash)
    attempt.tokens_in, attempt.tokens_out = tokens
    attempt.latency_s = round(latency_s, 6)
    attempt.cached = cached
    attempt.error = error
    if attempt.abstain_reason is not None and ended is not None:
        attempt.abstain_reason = f"{attempt.abstain_reason} ({ended})"
    return attempt


def trial_ended(stop_reason: str) -> str:
    """How an abstention of a trial of ours says why the trial ended."""
    return f"trial ended: {stop_reason}"


def count_tool_calls(atif: dict[str, Any] | None) -> dict[str, int]:
    """Tool calls per tool name over a trajectory's steps, sorted by name."""
    counts: Counter[str] = Counter()
    for step in (atif or {}).get("steps") or []:
        for call in step.get("tool_calls") or []:
            counts[str(call.get("function_name") or call.get("name") or "unknown")] += 1
    return dict(sorted(counts.items()))


def count_turn_kinds(atif: dict[str, Any] | None) -> dict[str, int]:
    """The trial's model turns by kind (``TURN_KINDS``), read from each agent step's
    ``extra.kind`` (``turn_kind`` wrote it); every kind is listed, zeros included."""
    counts = dict.fromkeys(TURN_KINDS, 0)
    for step in (atif or {}).get("steps") or []:
        kind = (step.get("extra") or {}).get("kind")
        if step.get("source") == "agent" and kind in counts:
            counts[kind] += 1
    return counts


def ran_written_program(calls: Iterable[tuple[ToolCall, bool]]) -> bool:
    """Whether the agent ran a program it had written, from its calls in order, each with
    whether it was answered without an error: ``run_prolog`` on a path it wrote with
    ``write_file`` earlier in the trial, or any ``bash`` command (the shell tool set writes
    and runs in one)."""
    written: set[str] = set()
    for call, ok in calls:
        if not ok:
            continue
        path = posixpath.normpath(str(call.arguments.get("path", "")))
        if call.name == "write_file":
            written.add(path)
        elif (call.name == "run_prolog" and path in written) or call.name == "bash":
            return True
    return False


def turn_kind(
    *, truncated: bool, calls: int, malformed: int, refused: int
) -> str:  # fmt: skip
    """What one model turn was (``TURN_KINDS``), the first that holds: cut off by the
    output-token limit; no call; a call that could not be run as sent (unknown tool, bad
    JSON, arguments against the tool's schema); a call a guard rail refused; otherwise
    well-formed."""
    if truncated:
        return "truncated"
    if calls == 0:
        return "no_call"
    if malformed:
        return "malformed"
    return "refused" if refused else "well_formed"


def agent_info(
    tool_set: str,
    *,
    turns: int,
    atif: dict[str, Any] | None,
    stop_reason: str,
    wall_s: float,
    cost_usd: float | None = None,
    tool_mode: str | None = None,
    ran_program: bool | None = None,
) -> AgentInfo:
    """The record's ``agent``: the trial's facts, its tool calls read from ``atif``, and
    for a trial of ours (``tool_mode`` given) its turns by kind, also read from ``atif``."""
    return AgentInfo(
        tool_set=tool_set,
        turns=turns,
        tool_calls=count_tool_calls(atif),
        stop_reason=stop_reason,
        wall_s=round(wall_s, 6),
        cost_usd=cost_usd,
        tool_mode=tool_mode,
        turn_kinds=count_turn_kinds(atif) if tool_mode is not None else None,
        ran_program=ran_program,
    )


def session_id(domain: str, case_id: str, mode: str, sample: int) -> str:
    return f"{domain}/{case_id}/{mode}/{sample}"


def new_trial_trajectory(
    session: str, *, model_name: str, tool_set: str, opening: Sequence[Message]
) -> dict[str, Any]:
    """The ATIF root of a trial, with its opening messages as the first steps."""
    atif = new_trajectory(
        session,
        agent_name=AGENT_NAME,
        agent_version=AGENT_VERSION,
        model_name=model_name,
        tool_definitions=[s.to_openai() for s in tool_specs(tool_set)],
    )
    for message in opening:
        add_step(atif, message.role, message.content)
    return atif


def finish_trial_trajectory(
    atif: dict[str, Any], *, stop_reason: str, tool_set: str, tool_mode: str, judgement: Judgement
) -> None:
    """Close a trial's trajectory with its totals and facts (``extra``)."""
    finish_trajectory(
        atif,
        extra={
            "stop_reason": stop_reason,
            "tool_set": tool_set,
            "tool_mode": tool_mode,
            "judged": {
                "answer": judgement.answer.value,
                "abstain_reason": judgement.answer.reason,
                "status": judgement.execution.status if judgement.execution else None,
            },
        },
    )
