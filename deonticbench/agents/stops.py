"""When a trial stops, and why: the one statement of the stop rules.

A trial ends on ``submit``, on a reply with no tool call, on a failed model request, on
a budget of ``store.spec.AgentOptions`` (turns, tokens in+out, wall clock), on the same
turn repeated past the guard's warning (``repeat``, ``guards``) or on a conversation
that cannot fit the model's context window (``context``, ``context``).  The
reasons are ``store.record.STOP_REASONS``.  The harness's loop asks ``budget_stop``
before each turn; inspect's ``react()`` asks it in its ``on_continue`` and names the
reason of a finished conversation with ``stop_reason``, so both say the same thing for
the same trial.  The stop reason never decides the outcome: the judge does.
"""

from __future__ import annotations

import logging

from ..store.record import STOP_REASONS
from ..store.spec import AgentOptions

logger = logging.getLogger(__name__)

__all__ = ["STOP_REASONS", "budget_stop", "stop_reason"]


def budget_stop(budget: AgentOptions, *, turns: int, tokens: int, elapsed_s: float) -> str | None:
    """The budget a trial has used up after ``turns`` turns, ``tokens`` tokens in+out and
    ``elapsed_s`` seconds, or None while it may take another turn.  Tokens are checked
    first, then turns, then the clock (the order the reasons are reported in when more
    than one holds)."""
    if budget.max_tokens is not None and tokens >= budget.max_tokens:
        stop = "max_tokens"
    elif turns >= budget.max_turns:
        stop = "max_turns"
    elif elapsed_s >= budget.timeout_s:
        stop = "timeout"
    else:
        return None
    logger.debug("budget stop %s after %d turns, %d tokens, %.3f s", stop, turns, tokens, elapsed_s)
    return stop


def stop_reason(
    budget: AgentOptions,
    *,
    submitted: bool,
    ended_without_call: bool,
    turns: int,
    tokens: int,
    elapsed_s: float,
) -> str:
    """Why a finished trial ended, from what it did: ``submit``, a last reply without a
    tool call (``ended_without_call``), a budget, else ``error`` (the trial was cut
    short by something else)."""
    if submitted:
        return "submit"
    if ended_without_call:
        return "no_tool_call"
    return budget_stop(budget, turns=turns, tokens=tokens, elapsed_s=elapsed_s) or "error"
