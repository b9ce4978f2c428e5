"""The record of one sample: everything needed to re-score or audit it without re-running.

One line of a run's ``records.jsonl`` is one ``Record``: a domain × case × mode × sample,
with every attempt (the first is the first attempt; later ones are retries with
feedback).  ``SCHEMA`` is bumped whenever a field changes meaning.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..reading.outcomes import OUTCOMES, Outcome
from ..vocabulary.modes import ALL_MODES, Mode
from .config import tool_mode_named

SCHEMA = 1
RecordKey = tuple[str, str, str, int]
"""(domain, case id, mode, sample): one record per key in a run."""


@dataclass
class Attempt:
    index: int
    prompt_hash: str
    response: str | None
    """The model's text; None when the request failed (see ``error``)."""
    error: str | None = None
    """A request that finally failed after its retries, e.g. 'HTTP 500 after 6 tries'."""
    program: str | None = None
    """The program that was run (after extraction and entrypoint repair); direct: None."""
    repaired: bool = False
    execution: dict[str, Any] | None = None
    """``Execution.to_dict()`` of the run, or None in direct mode / without a program."""
    answer: float | str | None = None
    abstain_reason: str | None = None
    outcome: Outcome = "abstain"
    tokens_in: int = 0
    tokens_out: int = 0
    latency_s: float = 0.0
    cached: bool = False
    """The response came from the response cache (no request was paid for)."""
    cache_read_tokens: int = 0
    """Of ``tokens_in``, those the provider read from its prompt cache."""
    cache_write_tokens: int = 0
    """Of ``tokens_in``, those the provider wrote to its prompt cache."""
    cache_write_1h_tokens: int = 0
    """Of ``cache_write_tokens``, those written with the 1-hour TTL."""
    batch: bool = False
    """The response came from a provider batch (billed at the batch price)."""
    logprobs: list[list[Any]] | None = None
    """``[token, logprob]`` of each output token (``eval --confidence logprob``); left
    out of the JSON when absent, so runs without it are written as before."""
    choice_fault: str | None = None
    """How the server's reply shaped this sample (``models.base.ChoiceFault``): fewer
    choices than ``n`` (``missing``, ``drawn_alone``), or a body that held no usable text
    for it, by its shape (``models.base.REPLY_FAULTS``); left out of the JSON when None,
    so runs of well-behaved servers are written as before."""


@dataclass
class AgentInfo:
    """How an agentic trial went (docs/agents.md); None on a prompted record.

    The trial's final program and its execution are the record's one ``Attempt`` (its
    tokens are the sums over the trial's turns); this holds what only a trial has."""

    tool_set: str
    """``prolog`` or ``shell``, or ``harbor:<agent>`` for a trial imported from Harbor."""
    turns: int
    """Model turns taken (each is one model call)."""
    tool_calls: dict[str, int]
    """Tool calls per tool name, malformed ones included (under the name as called)."""
    stop_reason: str
    """Why the trial ended: ``STOP_REASONS``, or ``harbor:<exception>`` for an import."""
    wall_s: float
    """Wall time of the whole trial: model turns and tools."""
    trajectory: str | None = None
    """The ATIF sidecar, relative to the run folder (``store.trajectory``)."""
    trajectory_sha256: str | None = None
    cost_usd: float | None = None
    """The cost the source reported (Harbor's ``cost_usd``); None: estimate from tokens."""
    tool_mode: str | None = None
    """How the trial called its tools: ``native``, ``text`` or ``constrained``
    (docs/agents.md, the tool mode); None for a trial imported from another harness.
    Records written before the rename hold it as ``protocol`` and are read as before."""
    turn_kinds: dict[str, int] | None = None
    """The trial's model turns by kind (``TURN_KINDS``), each turn counted once; None
    for an import, whose turns were not ours to read."""
    ran_program: bool | None = None
    """Whether the agent ran a program it had written (``run_prolog`` on a file it wrote,
    or any ``bash`` command in the shell tool set); None for an import."""
    dar: dict[str, Any] | None = None
    """Under ``--protocol dar``, DAR's verifier on the trial's final /app
    (``agents.dar_judge``): ``reward`` (1, 0, or None when test.sh writes none),
    ``stdout`` (what DAR's scorer reads) and Harbor's ``exception``; None otherwise."""

    @classmethod
    def from_json(cls, obj: Any) -> AgentInfo:
        if not isinstance(obj, dict):
            raise TypeError("'agent' is not an object")
        info = cls(**tool_mode_named(obj))  # a record written before the tool mode's name
        if not isinstance(info.tool_calls, dict):
            raise TypeError("'agent.tool_calls' is not an object")
        return info


TURN_KINDS: tuple[str, ...] = ("well_formed", "malformed", "no_call", "truncated", "refused")
"""What a model turn of a trial was (docs/agents.md, "Format counted"): a call of an
offered tool with valid arguments; a call that could not be run as sent (unknown tool,
bad JSON, missing or mistyped arguments); a reply with no call; a reply cut off by the
output-token limit; a well-formed call a guard rail refused (an early ``submit``)."""


STOP_REASONS: tuple[str, ...] = (
    "submit",
    "no_tool_call",
    "max_turns",
    "max_tokens",
    "timeout",
    "error",
    "repeat",
    "context",
)
"""Why a trial of the harness's own agent loop ended (docs/agents.md, "Budgets")."""
STOP_EXPLANATIONS: dict[str, str] = {
    "submit": "the agent called submit",
    "no_tool_call": "the model replied without a tool call",
    "max_turns": "the trial used up its turns (--agent-max-turns)",
    "max_tokens": "the trial used up its tokens (--agent-max-tokens)",
    "timeout": "the trial ran out of wall-clock time (--agent-timeout)",
    "error": "a model request failed or the trial was cut short",
    "repeat": "the repeat rail: the agent repeated the same turn again after being warned",
    "context": "the conversation no longer fit the model's context window",
}
"""Each of ``STOP_REASONS`` in words, for a reader of one trial (the report)."""


@dataclass
class Record:
    domain: str
    case_id: str
    mode: Mode
    sample: int
    gold: int | str
    model: str
    attempts: list[Attempt] = field(default_factory=list)
    template_hash: str | None = None
    """The hash of the templates of a setting's prompt (written for the settings only)."""
    exemplars: tuple[str, ...] | None = None
    """The ids of retrieved few-shot exemplars (written for ``--exemplars retrieved``)."""
    agent: AgentInfo | None = None
    """Set on an agentic trial; prompted records serialise without the key."""

    @property
    def key(self) -> RecordKey:
        return (self.domain, self.case_id, self.mode, self.sample)

    @property
    def first(self) -> Attempt:
        return self.attempts[0]

    @property
    def final(self) -> Attempt:
        return self.attempts[-1]

    def to_json(self) -> dict[str, Any]:
        final = self.final
        out: dict[str, Any] = {
            "schema": SCHEMA,
            "domain": self.domain,
            "case_id": self.case_id,
            "mode": self.mode,
            "sample": self.sample,
            "model": self.model,
            "gold": self.gold,
            "answer": final.answer,
            "outcome": final.outcome,
            "abstain_reason": final.abstain_reason,
            "first_answer": self.first.answer,
            "first_outcome": self.first.outcome,
            "first_abstain_reason": self.first.abstain_reason,
            "n_attempts": len(self.attempts),
            "tokens_in": sum(a.tokens_in for a in self.attempts),
            "tokens_out": sum(a.tokens_out for a in self.attempts),
            "latency_s": round(sum(a.latency_s for a in self.attempts), 6),
            "attempts": [_attempt_json(a) for a in self.attempts],
            # Only when set, so that a paper-protocol record is as it always was.
            **({"template_hash": self.template_hash} if self.template_hash else {}),
            **({"exemplars": list(self.exemplars)} if self.exemplars is not None else {}),
        }
        if self.agent is not None:
            # Only when set: a prompted record's line is the same as before agents.
            agent = asdict(self.agent)
            # The format fields only when known, so an imported trial's line is unchanged.
            for name in ("tool_mode", "turn_kinds", "ran_program", "dar"):
                if agent[name] is None:
                    del agent[name]
            out["agent"] = agent
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Record:
        """Rebuild a record; raises ValueError (with the reason) for a malformed line."""
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
        if obj.get("schema") != SCHEMA:
            raise ValueError(f"unsupported schema {obj.get('schema')!r}")
        try:
            attempts = [Attempt(**a) for a in obj["attempts"]]
            record = cls(
                domain=str(obj["domain"]),
                case_id=str(obj["case_id"]),
                mode=obj["mode"],
                sample=int(obj["sample"]),
                gold=obj["gold"],
                model=str(obj["model"]),
                attempts=attempts,
                template_hash=obj.get("template_hash"),
                exemplars=tuple(obj["exemplars"]) if obj.get("exemplars") is not None else None,
                agent=AgentInfo.from_json(obj["agent"]) if obj.get("agent") is not None else None,
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"missing or malformed field: {exc}") from None
        if not attempts:
            raise ValueError("no attempts")
        if record.mode not in ALL_MODES:
            raise ValueError(f"unknown mode {record.mode!r}")
        for a in attempts:
            if a.outcome not in OUTCOMES:
                raise ValueError(f"unknown outcome {a.outcome!r}")
        return record


_ABSENT_WHEN_ZERO = ("cache_read_tokens", "cache_write_tokens", "cache_write_1h_tokens", "batch")
"""Prompt-cache counts and the batch flag are left out of the JSON when 0 / false, so
that runs without caching (reference, replay, local) are written as before."""


def _attempt_json(attempt: Attempt) -> dict[str, Any]:
    out = asdict(attempt)
    for name in ("logprobs", "choice_fault"):
        if out[name] is None:
            del out[name]
    for name in _ABSENT_WHEN_ZERO:
        if not out[name]:
            del out[name]
    return out


def parse_record_line(raw: bytes | str) -> Record | None:
    """One line of a records.jsonl: the record, or None for a blank line.

    A line that is not a record raises ValueError with the reason; what to do about it
    (stop, cut a crash's tail, skip and count) is the reader's policy, not this parser's.
    """
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError("not UTF-8") from None
    if not raw.strip():
        return None
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError:
        raise ValueError("not valid JSON (corrupt or truncated)") from None
    try:
        return Record.from_json(obj)
    except ValueError as exc:
        raise ValueError(f"malformed record: {exc}") from None
