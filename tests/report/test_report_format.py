"""The report shows, for agentic runs, the cost and the format of each setting: turns by
kind, first-turn stops, programs run and answers left, each run's rows one after the
other; an imported trial's unknown shares as unknown.  Real run folders written by
``deonticbench report``, real Chromium."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, chromium_path, console_errors
from click.testing import CliRunner
from synthetic_runs import write_synthetic_run

from deonticbench.cli import cli
from deonticbench.store.record import AgentInfo, Attempt, Record

MODEL = "local:gemma3-270m"
CASES = ("yes", "no", "yes", "no")


def _trial(
    case: int, gold: str, answer: str | None, kinds: dict[str, int] | None, protocol: str | None
) -> Record:
    outcome = "abstain" if answer is None else ("correct" if answer == gold else "wrong")
    attempt = Attempt(0, "h", "r", answer=answer, tokens_in=90, tokens_out=10)
    attempt.outcome = outcome  # type: ignore[assignment]
    first_stop = kinds == {"no_call": 1}
    info = AgentInfo(
        tool_set="prolog" if protocol else "harbor:terminus-2",
        turns=sum(kinds.values()) if kinds else 3,
        tool_calls={} if first_stop else {"submit": 1},
        stop_reason="no_tool_call" if first_stop else "submit",
        wall_s=2.0,
        tool_mode=protocol,
        turn_kinds=kinds,
        ran_program=None if protocol is None else not first_stop,
    )
    return Record("housing", f"h{case}", "agent-zero-shot", 0, gold, MODEL, [attempt], agent=info)


def _run(folder: Path, records: list[Record]) -> Path:
    folder.mkdir(parents=True)
    config = {"model": MODEL, "split": "smoke", "domains": ["housing"]}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "records.jsonl").write_text("".join(json.dumps(r.to_json()) + "\n" for r in records))
    return folder


def _runs(root: Path) -> list[Path]:
    """A text-protocol run whose trials all stop at turn 1 with prose, a constrained run
    of the same cases that calls tools and answers, and an imported run."""
    text = [_trial(i, g, None, {"no_call": 1}, "text") for i, g in enumerate(CASES)]
    constrained = [
        _trial(i, g, g if i else None, {"well_formed": 3, "malformed": 1}, "constrained")
        for i, g in enumerate(CASES)
    ]
    imported = [_trial(i, g, g, None, None) for i, g in enumerate(CASES)]
    return [
        _run(root / "text", text),
        _run(root / "constrained", constrained),
        _run(root / "imported", imported),
    ]


def _report(tmp_path: Path, runs: list[Path]) -> Path:
    out = tmp_path / "report.html"
    args = ["report", *map(str, runs), "--out", str(out), "--bootstrap", "50"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return out


def _table_rows(page: str, table_id: str) -> list[list[str]]:
    match = re.search(rf'<table id="{table_id}".*?<tbody>(.*?)</tbody>', page, re.S)
    assert match, f"no #{table_id} in the page"
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<td>(.*?)</td>", row)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", match.group(1))
    ]


@pytest.mark.slow
def test_the_page_has_the_format_table_of_each_run_in_turn(tmp_path: Path) -> None:
    page = _report(tmp_path, _runs(tmp_path)).read_text()
    assert '<section id="agents">' in page and 'id="usage-table"' in page
    rows = _table_rows(page, "format-table")
    assert [r[0] for r in rows] == ["text", "constrained", "imported"]
    text, constrained, imported = rows
    # protocol, n, turns, well-formed %, malformed, no call, ..., 1st-turn stops, ran, answered
    assert text[3:9] == ["text", "4", "4", "0.0", "0", "4"]
    assert (text[11], text[12], text[13]) == ("4/4", "0.0", "0.0")
    assert constrained[3:8] == ["constrained", "4", "16", "75.0", "4"]
    assert (constrained[11], constrained[12], constrained[13]) == ("0/4", "100.0", "75.0")
    assert (imported[3], imported[5], imported[6], imported[12]) == ("-", "?", "?", "?")
    assert imported[13] == "100.0" and imported[15] == "100"  # tokens per trial
    # A prompted run has no such section.
    prompted = write_synthetic_run(tmp_path / "prompted", "fake")
    page = _report(tmp_path / "alone", [prompted]).read_text()
    assert 'id="agents"' not in page and 'id="format-table"' not in page


@pytest.mark.slow
@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed")
def test_the_browser_shows_the_format_table(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    report = _report(tmp_path, _runs(tmp_path))
    with chromium() as web:
        web.get(report.as_uri())
        WebDriverWait(web, 20).until(
            lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "1"
        )
        section = web.find_element(By.ID, "agents")
        assert section.is_displayed()
        assert "Agentic trials: cost and format" in section.text
        table = web.find_element(By.ID, "format-table")
        caption = table.find_element(By.TAG_NAME, "caption").text
        assert caption.startswith("Format of the agentic trials")
        shown: list[Any] = table.find_elements(By.CSS_SELECTOR, "tbody tr")
        cells = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")] for tr in shown]
        assert [c[0] for c in cells] == ["text", "constrained", "imported"]
        assert cells[0][11] == "4/4" and cells[1][6] == "75.0" and cells[2][6] == "?"
        web.save_screenshot(str(tmp_path / "report-format.png"))
        assert console_errors(web) == []
