"""The format of agentic trials, counted and shown: turns by kind, first-turn stops,
programs run and answers left per domain x mode, beside the score and the tokens; in
``score``'s table, JSON and files, and side by side under ``--compare``.

Real run folders of records as the agent loop writes them; real scoring, real CLI."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from deonticbench.cli import cli
from deonticbench.scoring import FormatRow, format_rows, usage_rows
from deonticbench.scoring.agent_format import first_turn_stop
from deonticbench.scoring.scores import score_runs
from deonticbench.store.record import TURN_KINDS, AgentInfo, Attempt, Record

MODEL = "local:gemma3-270m"


def _trial(
    domain: str,
    case: str,
    mode: str,
    gold: Any,
    answer: Any,
    *,
    kinds: dict[str, int] | None,
    stop: str = "submit",
    ran: bool | None = True,
    protocol: str | None = "constrained",
) -> Record:
    """One agentic trial: its turns are the sum of ``kinds`` (2 when not counted)."""
    outcome = "abstain" if answer is None else ("correct" if answer == gold else "wrong")
    attempt = Attempt(0, "h", "r", answer=answer, tokens_in=100, tokens_out=20)
    attempt.outcome = outcome  # type: ignore[assignment]
    info = AgentInfo(
        tool_set="prolog" if protocol else "harbor:terminus-2",
        turns=sum(kinds.values()) if kinds else 2,
        tool_calls={"submit": 1},
        stop_reason=stop,
        wall_s=1.0,
        tool_mode=protocol,
        turn_kinds=kinds,
        ran_program=ran,
    )
    return Record(domain, case, mode, 0, gold, MODEL, [attempt], agent=info)  # type: ignore[arg-type]


def _housing(protocol: str = "constrained") -> list[Record]:
    """Four housing trials: 12 turns, 8 well-formed, one of each other kind; one stops at
    its first turn with no call; two ran a program; two left an answer (one right)."""
    wf = "well_formed"
    plan: list[tuple[str, str, str | None, dict[str, int], str, bool]] = [
        # case, gold, answer, turn kinds, stop reason, ran a program
        ("h0", "yes", "yes", {wf: 3}, "submit", True),
        ("h1", "yes", "no", {wf: 2, "malformed": 1, "refused": 1}, "submit", True),
        ("h2", "no", None, {wf: 3, "truncated": 1}, "max_turns", False),
        ("h3", "no", None, {"no_call": 1}, "no_tool_call", False),
    ]
    return [
        _trial(
            "housing",
            case,
            "agent-zero-shot",
            gold,
            answer,
            kinds=kinds,
            stop=stop,
            ran=ran,
            protocol=protocol,
        )
        for case, gold, answer, kinds, stop, ran in plan
    ]


def _airline() -> list[Record]:
    """Three airline agent-direct trials, two tool modes; a no-call stop at turn 2 is not
    a first-turn stop."""
    plan: list[tuple[str, int, float | None, dict[str, int], str, str]] = [
        # case, gold, answer, turn kinds, stop reason, protocol
        ("a0", 10, 10.0, {"well_formed": 2}, "submit", "constrained"),
        ("a1", 20, None, {"no_call": 1}, "no_tool_call", "text"),
        ("a2", 30, None, {"well_formed": 1, "no_call": 1}, "no_tool_call", "text"),
    ]
    return [
        _trial(
            "airline",
            case,
            "agent-direct",
            gold,
            answer,
            kinds=kinds,
            stop=stop,
            ran=False,
            protocol=protocol,
        )
        for case, gold, answer, kinds, stop, protocol in plan
    ]


def _prompted() -> list[Record]:
    attempt = Attempt(0, "h", "r", answer="yes", outcome="correct", tokens_in=50, tokens_out=5)
    return [Record("housing", "h0", "zero-shot", 0, "yes", MODEL, [attempt])]


def _imported() -> list[Record]:
    """Trials imported from another harness: no protocol, no turn kinds, no ran flag."""
    mode = "agent-zero-shot"
    return [
        _trial("housing", "h0", mode, "yes", "yes", kinds=None, ran=None, protocol=None),
        _trial("housing", "h1", mode, "yes", None, kinds=None, ran=None, protocol=None),
    ]


def _write_run(folder: Path, records: list[Record]) -> Path:
    folder.mkdir(parents=True)
    config = {"model": MODEL, "split": "smoke", "domains": ["housing", "airline"]}
    (folder / "config.json").write_text(json.dumps(config))
    lines = [json.dumps(r.to_json()) for r in records]
    (folder / "records.jsonl").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture
def constrained(tmp_path: Path) -> Path:
    return _write_run(tmp_path / "constrained", _housing() + _airline() + _prompted())


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    return _write_run(tmp_path / "imported", _imported())


def _rows(*runs: Path) -> dict[tuple[str, str, str], FormatRow]:
    return {(r.run, r.domain, r.mode): r for r in format_rows(score_runs(list(runs), bootstrap=50))}


def test_each_agentic_domain_and_mode_counts_its_turns_by_kind(constrained: Path) -> None:
    rows = _rows(constrained)
    assert set(rows) == {
        ("constrained", "housing", "agent-zero-shot"),
        ("constrained", "airline", "agent-direct"),
    }  # the prompted zero-shot group has no format row
    housing = rows["constrained", "housing", "agent-zero-shot"]
    assert housing.turn_kinds == {
        "well_formed": 8, "malformed": 1, "no_call": 1, "truncated": 1, "refused": 1,
    }  # fmt: skip
    assert (housing.n_trials, housing.n_counted, housing.counted_turns) == (4, 4, 12)
    assert housing.well_formed_share == pytest.approx(8 / 12)
    assert (housing.first_turn_stops, housing.first_turn_stop_share) == (1, 0.25)
    assert housing.ran_program_share == 0.5
    assert housing.left_answer_share == 0.5
    assert housing.tool_mode == "constrained"
    airline = rows["constrained", "airline", "agent-direct"]
    assert airline.turn_kinds == dict.fromkeys(TURN_KINDS, 0) | {"well_formed": 3, "no_call": 2}
    assert airline.well_formed_share == pytest.approx(3 / 5)
    assert (airline.first_turn_stops, airline.n_trials) == (1, 3)  # a2 stopped at turn 2
    assert airline.ran_program_share == 0.0
    assert airline.left_answer_share == pytest.approx(1 / 3)
    assert airline.tool_mode == "constrained+text"


def test_the_score_and_tokens_beside_are_the_usage_tables(constrained: Path) -> None:
    scores = score_runs([constrained], bootstrap=50)
    usage = {(u.domain, u.mode): u for u in usage_rows(scores)}
    for row in format_rows(scores):
        u = usage[row.domain, row.mode]
        assert (row.metric, row.point) == (u.metric, u.point)
        assert row.tokens == u.tokens_in + u.tokens_out == 120.0
    airline = next(r for r in format_rows(scores) if r.domain == "airline")
    assert airline.metric == "accuracy" and airline.point == pytest.approx(1 / 3)


def test_first_turn_stop_is_a_first_turn_that_called_no_tool() -> None:
    (one_turn,) = [r.agent for r in _housing() if r.case_id == "h3"]
    (submitted,) = [r.agent for r in _housing() if r.case_id == "h0"]
    (later,) = [r.agent for r in _airline() if r.case_id == "a2"]
    assert one_turn is not None and submitted is not None and later is not None
    assert first_turn_stop(one_turn)
    assert not first_turn_stop(submitted) and not first_turn_stop(later)


def test_trials_without_turn_kinds_leave_the_shares_unknown_not_zero(
    imported: Path, tmp_path: Path
) -> None:
    (row,) = _rows(imported).values()
    assert row.turn_kinds is None and row.counted_turns is None and row.n_counted == 0
    assert row.well_formed_share is None and row.ran_program_share is None
    assert row.tool_mode is None
    assert row.left_answer_share == 0.5  # the scorer's verdicts are known all the same
    result = CliRunner().invoke(cli, ["score", str(imported), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    cells = _markdown_row(result.output, "imported", "housing")
    assert cells[3:7] == ["-", "2", "?", "?"]  # protocol, n, turns, well-formed %
    assert cells[11:13] == ["0/2", "?"]  # first-turn stops are known; ran program is not
    # A group with one counted trial and one import: the share is over the counted turns.
    mixed = _write_run(tmp_path / "mixed", _housing()[:1] + _imported()[1:])
    (row,) = _rows(mixed).values()
    assert (row.n_trials, row.n_counted, row.well_formed_share) == (2, 1, 1.0)


def _markdown_row(output: str, run: str, domain: str) -> list[str]:
    """The cells of the format table's row for ``run`` and ``domain``."""
    prefix = f"| {run} | {domain} |"
    (line,) = [line for line in output.splitlines() if line.startswith(prefix)]
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_score_prints_the_format_table_after_the_usage_table(constrained: Path) -> None:
    result = CliRunner().invoke(cli, ["score", str(constrained), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.index("Cost of each setting") < out.index("Format of the agentic trials")
    cells = _markdown_row(out, "constrained", "housing")
    assert cells[2:] == [
        "Agent Zero-Shot", "constrained", "4", "12", "66.7", "1", "1", "1", "1", "1/4",
        "50.0", "50.0", cells[14], "120",
    ]  # fmt: skip
    # The plain-text table too (split into parts that fit the terminal).
    text = CliRunner().invoke(cli, ["score", str(constrained)]).output
    assert "Format of the agentic trials" in text and "well-formed %" in text


@pytest.mark.slow
def test_score_json_and_the_written_files_hold_the_format_rows(
    constrained: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(cli, ["score", str(constrained), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    housing = next(r for r in doc["format"] if r["domain"] == "housing")
    assert housing["well_formed"] == 8 and housing["turns"] == 12
    assert housing["first_turn_stops"] == 1 and housing["left_answer_share"] == 0.5
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["score", str(constrained), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO((out / "format.csv").read_text())))
    assert tuple(rows[0]) == FormatRow.columns()
    assert [(r["domain"], r["mode"], r["tool_mode"]) for r in rows] == [
        ("airline", "agent-direct", "constrained+text"),
        ("housing", "agent-zero-shot", "constrained"),
    ]
    assert rows[1]["no_call"] == "1" and rows[1]["ran_program_share"] == "0.5"
    assert "Format of the agentic trials" in (out / "format.md").read_text()


def test_a_prompted_run_has_no_format_table(tmp_path: Path) -> None:
    prompted = _write_run(tmp_path / "prompted", _prompted())
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["score", str(prompted), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert not (out / "format.csv").exists()
    doc = json.loads(CliRunner().invoke(cli, ["score", str(prompted), "--json"]).stdout)
    assert doc["format"] == []


def test_compare_reads_a_constrained_and_a_text_run_side_by_side(tmp_path: Path) -> None:
    text = _write_run(tmp_path / "text", _housing("text"))
    # The constrained run of the same cases called well-formed tools on every turn.
    better = [
        _trial("housing", r.case_id, r.mode, r.gold, r.gold, kinds={"well_formed": 3})
        for r in _housing()
    ]
    constrained = _write_run(tmp_path / "constrained", better)
    args = ["score", str(text), str(constrained), "--compare", "--format", "markdown"]
    result = CliRunner().invoke(cli, [*args, "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    out = result.output
    first = _markdown_row(out, "text", "housing")
    second = _markdown_row(out, "constrained", "housing")
    assert out.index("| text | housing |") < out.index("| constrained | housing |")
    assert (first[3], first[6], first[11]) == ("text", "66.7", "1/4")
    assert (second[3], second[6], second[11]) == ("constrained", "100.0", "0/4")
    assert second[13] == "100.0"  # every trial left an answer
    # The paired difference of the same cases is the existing --compare table's.
    assert "Agent Zero-Shot" in out[out.index("B - A") :]
