"""A run holding prompted and agentic modes, as a user makes one (``deonticbench eval
--model reference --modes zero-shot,agent-zero-shot``), then ``deonticbench report``, read
in headless Chromium: every mode the run holds has its place in the figure, in the
table's order (read from the figure's own data, not its pixels), and an agentic trial's
detail speaks of turns, its final program and where and why it stopped, never of
retries or of a model reply."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_runs import SANDBOXED
from browser import chromium, chromium_path, console_errors
from reliability_runs import cli

pytestmark = [
    pytest.mark.slow,
    *SANDBOXED,
    pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed"),
]

DATA = os.environ.get("DEONTICBENCH_DATA", "/work/shared/deonticbench-data")


def _cli(*args: str) -> str:
    done = cli(*args, data=DATA)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _eval(out: Path, modes: str) -> Path:
    _cli(
        "eval", "--model", "reference", "--split", "smoke", "--domains", "airline,sara_binary",
        "--modes", modes, "--limit", "2", "--no-cache", "--out", str(out),
    )  # fmt: skip
    _cli("report", str(out))
    return out / "report.html"


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("agentmodes")
    return {
        "mixed": _eval(root / "mixed", "zero-shot,agent-zero-shot"),
        "agent-only": _eval(root / "agents", "agent-zero-shot"),
    }


@pytest.fixture(scope="module")
def web() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def _open(web: Any, page: Path, fragment: str = "") -> None:
    from selenium.webdriver.support.ui import WebDriverWait

    web.get(page.as_uri() + fragment)
    WebDriverWait(web, 20).until(
        lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "1"
    )


def _figure_modes(web: Any) -> dict[str, list[str]]:
    text = web.execute_script(
        "var f = document.querySelector('#figures figure'); return f && f.dataset.modes;"
    )
    assert text, "the figure carries no data of the modes it shows"
    modes: dict[str, list[str]] = json.loads(text)
    return modes


def _table_settings(web: Any) -> list[str]:
    return list(
        web.execute_script(
            "var heads = Array.from(document.querySelectorAll('#table2 thead th'))"
            ".map(function (th) { return th.textContent; });"
            "var at = heads.indexOf('Setting');"
            "return Array.from(document.querySelectorAll('#table2 tbody tr'))"
            ".map(function (tr) { return tr.cells[at].textContent; });"
        )
    )


def test_the_figure_shows_every_mode_of_the_run_in_the_tables_order(
    pages: dict[str, Path], web: Any
) -> None:
    _open(web, pages["mixed"])
    settings = _table_settings(web)
    assert settings == ["Zero-Shot", "Agent Zero-Shot"]
    assert _figure_modes(web) == {"Airline": settings, "SARA Bin.": settings}
    alt = web.execute_script("return document.querySelector('#figures img').alt")
    assert "Agent Zero-Shot" in alt
    assert console_errors(web) == []


def test_an_agent_only_run_draws_its_mode_not_empty_axes(pages: dict[str, Path], web: Any) -> None:
    _open(web, pages["agent-only"])
    assert _figure_modes(web) == {
        "Airline": ["Agent Zero-Shot"],
        "SARA Bin.": ["Agent Zero-Shot"],
    }


def _sample_index(web: Any, mode: str) -> int:
    index = web.execute_script(
        "var rows = JSON.parse(document.getElementById('index').textContent);"
        "var meta = JSON.parse(document.getElementById('meta').textContent);"
        "var m = meta.columns.indexOf('mode'); var want = arguments[0];"
        "return rows.findIndex(function (r) { return r[m] === want; });",
        mode,
    )
    assert isinstance(index, int) and index >= 0
    return index


def _detail(web: Any, page: Path, mode: str) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    _open(web, page)
    index = _sample_index(web, mode)
    web.get("about:blank")  # a new load, so the page opens the sample its link names
    _open(web, page, f"#sample-{index}")
    detail = web.find_element(By.ID, "detail")
    WebDriverWait(web, 20).until(
        lambda d: "Verdict" in detail.text and "loading" not in detail.text
    )
    return detail


def test_a_trial_speaks_of_turns_its_final_program_and_its_stop(
    pages: dict[str, Path], web: Any
) -> None:
    from selenium.webdriver.common.by import By

    detail = _detail(web, pages["mixed"], "agent-zero-shot")
    text = detail.text
    assert "Retry chain" not in text
    assert "Attempt 1 of 1" not in text
    assert "Trial: 4 turns" in text
    assert "Stopped after turn 4 (submit): the agent called submit." in text
    turns = detail.find_elements(By.CSS_SELECTOR, "details.turn > summary")
    assert [t.text.endswith("stopped here: submit") for t in turns] == [False, False, False, True]
    turns[-1].click()
    assert "The trial stopped after this turn: the agent called submit." in detail.text
    # The judged solution.pl is the agent's final program, never titled a model reply.
    roles = [r.text for r in detail.find_elements(By.CSS_SELECTOR, ".trial-result .role")]
    assert not any(r.startswith("Response") for r in roles)
    assert "Final program: solution.pl as the agent left it" in roles
    assert "Tokens over the 4 turns" in detail.text
    assert console_errors(web) == []


def test_a_prompted_sample_keeps_its_retry_chain(pages: dict[str, Path], web: Any) -> None:
    detail = _detail(web, pages["mixed"], "zero-shot")
    assert "Retry chain" in detail.text
    assert "Attempt 1 of 1" in detail.text
    assert "Trial:" not in detail.text


def test_the_sample_list_shows_no_first_attempt_or_retries_for_a_trial(
    pages: dict[str, Path], web: Any
) -> None:
    # A trial is judged once, on the program it left: its row in the sample list has a
    # dash where a prompted sample shows its first outcome and its number of attempts.
    _open(web, pages["mixed"])
    rows = web.execute_script(
        "var heads = Array.from(document.querySelectorAll('#sample-list thead th'))"
        ".map(function (th) { return th.textContent; });"
        "return Array.from(document.querySelectorAll('#sample-list tbody tr')).map("
        "function (tr) { var c = tr.cells; return [c[heads.indexOf('Mode')].textContent,"
        " c[heads.indexOf('First')].textContent, c[heads.indexOf('Attempts')].textContent]; });"
    )
    agentic = [r for r in rows if r[0].startswith("agent-")]
    prompted = [r for r in rows if not r[0].startswith("agent-")]
    assert agentic and prompted
    assert all(r[1:] == ["—", "—"] for r in agentic), agentic
    assert all(r[1] in ("correct", "incorrect", "abstain") and r[2] == "1" for r in prompted)
    assert console_errors(web) == []
