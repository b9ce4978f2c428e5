"""How the agentic trials of each domain x mode went as a matter of format: their model
turns by kind, how many stopped at their first turn for want of a call, how many ran a
program and how many left an answer, beside the score and the tokens (docs/scoring.md,
"Format of agentic trials").

A model that cannot emit a well-formed tool call never runs its program, so its score
says nothing about its reasoning; this table says when format decided the score.  The
turn kinds are ``store.record.TURN_KINDS`` as the agent loop counted them; a trial
imported from another harness has none (``None``), and a share over no counted turn is
unknown (``None``), never 0.  The score and the tokens are the usage table's
(``usage.UsageRow``); whether a trial left an answer is the scorer's own verdict on its
final attempt (not an abstention).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..store.record import TURN_KINDS, AgentInfo, Record
from ..vocabulary.modes import MODE_TITLES, is_agentic
from .scores import GroupScore, RunScores
from .tables import Table
from .usage import UsageRow, final_group, usage_rows

FIRST_TURN_STOP = "no_tool_call"
"""The stop reason of a trial that ended for want of a tool call."""


@dataclass(frozen=True)
class FormatRow:
    """One run x domain x agentic mode; shares are fractions in [0, 1]."""

    run: str
    model: str
    domain: str
    mode: str
    tool_mode: str | None
    """The distinct tool modes of the group's trials, joined by ``+``; None: none recorded."""
    n_trials: int
    n_counted: int
    """Trials whose turns were counted by kind (an import's were not)."""
    turn_kinds: dict[str, int] | None
    """Turns of the counted trials per kind (every ``TURN_KINDS`` key); None: none counted."""
    well_formed_share: float | None
    """Well-formed turns over all counted turns; None when no turn was counted."""
    first_turn_stops: int
    first_turn_stop_share: float
    ran_program_share: float | None
    """Of the trials that recorded it; None when none did."""
    left_answer_share: float | None
    """Trials the scorer did not judge an abstention; None when none was scored."""
    metric: str
    point: float
    """The usage table's metric (0..1) on the final stage."""
    tokens: float
    """Mean tokens (in + out) per trial, as the usage table counts them."""

    @property
    def counted_turns(self) -> int | None:
        return None if self.turn_kinds is None else sum(self.turn_kinds.values())

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The CSV's columns: the turn counts flattened, one column per kind."""
        out: list[str] = []
        for f in fields(cls):
            if f.name == "turn_kinds":
                out += ["turns", *TURN_KINDS]
            else:
                out.append(f.name)
        return tuple(out)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "turn_kinds"}
        kinds = self.turn_kinds
        out["turns"] = self.counted_turns
        for kind in TURN_KINDS:
            out[kind] = None if kinds is None else kinds[kind]
        return {name: out[name] for name in self.columns()}


def first_turn_stop(info: AgentInfo) -> bool:
    """Whether a trial ended after its first turn because that turn called no tool."""
    return info.turns <= 1 and info.stop_reason == FIRST_TURN_STOP


def _turn_kinds(infos: Sequence[AgentInfo]) -> dict[str, int] | None:
    counted = [i.turn_kinds for i in infos if i.turn_kinds is not None]
    if not counted:
        return None
    totals = dict.fromkeys(TURN_KINDS, 0)
    for kinds in counted:
        for kind, n in kinds.items():
            # A kind this version does not know still counts among the turns.
            totals[kind] = totals.get(kind, 0) + n
    return totals


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _left_answer_share(group: GroupScore | None) -> float | None:
    if group is None:
        return None
    judged = [d.outcome for samples in group.encoded.samples.values() for d in samples]
    return _share(sum(o != "abstain" for o in judged), len(judged))


def _tool_mode(infos: Sequence[AgentInfo]) -> str | None:
    named = dict.fromkeys(i.tool_mode for i in infos if i.tool_mode is not None)
    return "+".join(named) or None


def _row(usage: UsageRow, records: Sequence[Record], group: GroupScore | None) -> FormatRow:
    infos = [r.agent for r in records if r.agent is not None]
    kinds = _turn_kinds(infos)
    counted = sum(kinds.values()) if kinds is not None else 0
    stops = sum(first_turn_stop(i) for i in infos)
    ran = [i.ran_program for i in infos if i.ran_program is not None]
    return FormatRow(
        run=usage.run,
        model=usage.model,
        domain=usage.domain,
        mode=usage.mode,
        tool_mode=_tool_mode(infos),
        n_trials=len(records),
        n_counted=sum(i.turn_kinds is not None for i in infos),
        turn_kinds=kinds,
        well_formed_share=None if kinds is None else _share(kinds["well_formed"], counted),
        first_turn_stops=stops,
        first_turn_stop_share=stops / len(records),
        ran_program_share=_share(sum(ran), len(ran)),
        left_answer_share=_left_answer_share(group),
        metric=usage.metric,
        point=usage.point,
        tokens=usage.tokens_in + usage.tokens_out,
    )


def format_rows(scores: Sequence[RunScores]) -> list[FormatRow]:
    """One row per run x domain x agentic mode, in the usage table's order."""
    rows: list[FormatRow] = []
    for s in scores:
        for usage in usage_rows([s]):
            if not is_agentic(usage.mode):
                continue
            records = [
                r for r in s.run.records if r.domain == usage.domain and r.mode == usage.mode
            ]
            rows.append(_row(usage, records, final_group(s, usage.domain, usage.mode)))
    return rows


UNKNOWN = "?"
"""How the table shows a share nothing was recorded for (an imported trial's turns)."""


def _pct(x: float | None) -> str:
    if x is None:
        return UNKNOWN
    return f"{100 * x:.1f}" if math.isfinite(x) else "nan"


def _count(kinds: dict[str, int] | None, kind: str) -> str:
    return UNKNOWN if kinds is None else str(kinds[kind])


_SHOWN_KINDS = tuple(k for k in TURN_KINDS if k != "well_formed")
"""The kinds the table counts beside the well-formed share, in ``TURN_KINDS`` order."""


def format_table(rows: Sequence[FormatRow]) -> Table:
    """The format table: each run's rows one after the other (so ``score --compare`` of a
    constrained and a text run reads side by side)."""
    headers = ["Run", "Domain", "Setting", "tool mode", "n", "turns", "well-formed %"]
    headers += [k.replace("_", " ") for k in _SHOWN_KINDS] + ["1st-turn stops"]
    headers += ["ran program %", "answered %", "score %", "tok/trial"]
    out = []
    for r in rows:
        turns = r.counted_turns
        out.append(
            [
                r.run,
                r.domain,
                MODE_TITLES.get(r.mode, r.mode),
                r.tool_mode or "-",
                str(r.n_trials),
                UNKNOWN if turns is None else str(turns),
                _pct(r.well_formed_share),
                *(_count(r.turn_kinds, k) for k in _SHOWN_KINDS),
                f"{r.first_turn_stops}/{r.n_trials}",
                _pct(r.ran_program_share),
                _pct(r.left_answer_share),
                _pct(r.point),
                f"{r.tokens:.0f}",
            ]
        )
    return Table(
        headers,
        out,
        title="Format of the agentic trials (turns by kind, summed over the trials; "
        "1st-turn stops: trials that ended at turn 1 with no tool call; answered %: trials "
        f"not judged an abstention; {UNKNOWN}: not recorded, e.g. an imported trial)",
        key_columns=3,
    )
