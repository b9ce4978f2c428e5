"""The sample browser's data: one index row per sample, and the details of each (prompts
as sent, interned by paragraph; responses, programs, executions, verdicts, analysis rows
and, for an agentic trial, its trajectory)."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..data.domains import DISPLAY_ORDER
from ..errors import DeonticBenchError
from ..prompting.render import Prompt, prompt_hash
from ..scoring.scores import RunScores
from ..store.record import STOP_EXPLANATIONS, Attempt, Record
from ..store.trajectory import read_trajectory
from ..vocabulary.chat import Message
from ..vocabulary.modes import ALL_MODES
from ._analysis_section import ANALYSIS_FILE, load_analysis
from ._json import json_value
from ._prompt_book import prompt_book

INDEX_COLUMNS = (
    "run",
    "domain",
    "case_id",
    "mode",
    "sample",
    "outcome",
    "first_outcome",
    "reason",
    "attempts",
    "category",
    "gold",
    "answer",
)
"""One row per sample in the page's index, in this column order."""


class _Interner:
    """Paragraphs of prompt text, each stored once; a text is a list of indices."""

    def __init__(self) -> None:
        self.paras: list[str] = []
        self._index: dict[str, int] = {}

    def text(self, text: str) -> list[int]:
        out = []
        for para in text.split("\n\n"):
            index = self._index.get(para)
            if index is None:
                index = len(self.paras)
                self._index[para] = index
                self.paras.append(para)
            out.append(index)
        return out


def _attempt_json(attempt: Attempt, prompt: Any, interner: _Interner) -> dict[str, Any]:
    execution = attempt.execution or None
    item: dict[str, Any] = {
        "index": attempt.index,
        "prompt_hash": attempt.prompt_hash,
        "response": attempt.response,
        "error": attempt.error,
        "program": attempt.program,
        "repaired": attempt.repaired,
        "answer": json_value(attempt.answer),
        "reason": attempt.abstain_reason,
        "outcome": attempt.outcome,
        "tokens_in": attempt.tokens_in,
        "tokens_out": attempt.tokens_out,
        "latency_s": attempt.latency_s,
        "cached": attempt.cached,
    }
    if execution is not None:
        item["execution"] = {k: json_value(v) for k, v in execution.items()}
    if prompt is not None:
        item["prompt"] = [[m.role, interner.text(m.content)] for m in prompt.messages]
        item["prompt_template"] = prompt.template
        item["prompt_verified"] = prompt.prompt_hash == attempt.prompt_hash
        item["prompt_rebuilt_hash"] = prompt.prompt_hash
    return item


def _answer_text(answer: object) -> str:
    """How the list shows an answer: 949.0 as 949, a class as itself, none as blank."""
    if answer is None:
        return ""
    if isinstance(answer, float) and math.isfinite(answer) and answer.is_integer():
        return str(int(answer))
    return str(json_value(answer))


def _category(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    final = [r for r in rows if r.get("stage") == "final"]
    chosen = (final or rows)[0]
    return str(chosen.get("category") or "")


def samples(
    scores: Sequence[RunScores], data_dir: Path | None
) -> tuple[list[list[Any]], dict[str, Any], list[str]]:
    index: list[list[Any]] = []
    details: list[dict[str, Any]] = []
    interner = _Interner()
    notes: list[str] = []
    domain_order = {d: i for i, d in enumerate(DISPLAY_ORDER)}
    mode_order = {m: i for i, m in enumerate(ALL_MODES)}
    for run_index, s in enumerate(scores):
        run = s.run
        book = prompt_book(run.config, run.records, data_dir)
        if book.problem:
            notes.append(f"{run.name}: {book.problem}")
        analysis = load_analysis(run.path / ANALYSIS_FILE)
        if analysis.problem:
            notes.append(f"{run.name}: {analysis.problem}")
        records: list[Record] = sorted(
            run.records,
            key=lambda r: (
                domain_order.get(r.domain, 99),
                mode_order.get(r.mode, 9),
                r.case_id,
                r.sample,
            ),
        )
        for record in records:
            rows = analysis.rows.get(record.key, [])
            trajectory: dict[str, Any] | None = None
            if record.agent is not None:
                trajectory, first_prompt = _trajectory_json(run.path, record, interner)
                prompts: list[Prompt | None] = [first_prompt] * len(record.attempts)
            else:
                prompts = book.chain(record)
            index.append(_index_row(run_index, record, rows))
            details.append(_detail(record, prompts, rows, trajectory, interner))
    return index, {"paras": interner.paras, "samples": details}, notes


def _index_row(run_index: int, record: Record, rows: list[dict[str, Any]]) -> list[Any]:
    """The sample's row in the page's index, in ``INDEX_COLUMNS`` order."""
    final = record.final
    return [
        run_index,
        record.domain,
        record.case_id,
        record.mode,
        record.sample,
        final.outcome,
        # An agentic trial is judged once, on the program it left: no first
        # attempt apart from the final one, no retries to count.
        "" if record.agent is not None else record.first.outcome,
        final.abstain_reason or "",
        "" if record.agent is not None else len(record.attempts),
        _category(rows),
        str(record.gold),
        _answer_text(final.answer),
    ]


def _detail(
    record: Record,
    prompts: list[Prompt | None],
    rows: list[dict[str, Any]],
    trajectory: dict[str, Any] | None,
    interner: _Interner,
) -> dict[str, Any]:
    """What the browser shows when the sample is opened."""
    return {
        "gold": record.gold,
        "model": record.model,
        "attempts": [
            _attempt_json(a, p, interner) for a, p in zip(record.attempts, prompts, strict=True)
        ],
        "analysis": rows,
        **({"trajectory": trajectory} if trajectory is not None else {}),
    }


def _trajectory_json(
    run_dir: Path, record: Record, interner: _Interner
) -> tuple[dict[str, Any], Prompt | None]:
    """An agentic sample's trajectory for the sample browser (step by step: the message,
    each tool call and its observation, token counts), and its first prompt (the system
    message and the instruction, checked against the record's hash)."""
    info = record.agent
    assert info is not None
    facts: dict[str, Any] = {
        "tool_set": info.tool_set,
        "turns": info.turns,
        "tool_calls": info.tool_calls,
        "stop_reason": info.stop_reason,
        "stop_text": STOP_EXPLANATIONS.get(info.stop_reason, info.stop_reason),
        "wall_s": info.wall_s,
        "cost_usd": info.cost_usd,
    }
    if info.trajectory is None:
        return {**facts, "problem": "no trajectory was saved"}, None
    try:
        atif = read_trajectory(run_dir, info.trajectory, info.trajectory_sha256)
    except DeonticBenchError as exc:
        return {**facts, "problem": str(exc)}, None
    steps = [s for s in atif["steps"] if isinstance(s, dict)]
    shown = [_step_json(step, interner) for step in steps if step.get("source") == "agent"]
    return {**facts, "steps": shown}, _first_prompt(steps, record)


def _step_json(step: dict[str, Any], interner: _Interner) -> dict[str, Any]:
    """One agent step: its message, each tool call with its observation, token counts."""
    results = {
        r.get("source_call_id"): str(r.get("content") or "")
        for r in (step.get("observation") or {}).get("results", [])
    }
    metrics = step.get("metrics") or {}
    return {
        "message": interner.text(str(step.get("message") or "")),
        "calls": [
            [
                str(c.get("function_name")),
                json.dumps(c.get("arguments"), ensure_ascii=False),
                interner.text(results.get(c.get("tool_call_id"), "")),
            ]
            for c in step.get("tool_calls") or []
        ],
        "tokens": [metrics.get("prompt_tokens"), metrics.get("completion_tokens")],
        "cached": bool((step.get("extra") or {}).get("cached")),
    }


def _first_prompt(steps: list[dict[str, Any]], record: Record) -> Prompt | None:
    """The trial's system message and instruction as a prompt (its hash checked later
    against the record's); None when the trajectory does not open with both."""
    first = [s for s in steps[:2] if s.get("source") in ("system", "user")]
    if len(first) != 2:
        return None
    messages = tuple(
        Message(role=str(s["source"]), content=str(s.get("message") or ""))  # type: ignore[arg-type]
        for s in first
    )
    return Prompt(messages, f"{record.domain}/{record.mode}", "", prompt_hash(messages))
