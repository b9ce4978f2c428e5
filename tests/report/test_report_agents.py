"""The report's sample browser shows an agentic trial step by step: the message, each
tool call and its observation, token counts; its first prompt is checked against the
record's hash.  Real run folder, real chromium."""

from __future__ import annotations

import base64
import gzip
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_runs import DATA, run_agents, smoke
from browser import chromium, chromium_path, console_errors

from deonticbench.data.domains import get_domain
from deonticbench.models.reference import ReferenceModel, reference_table
from deonticbench.report import write_report
from deonticbench.scoring.scores import score_runs
from deonticbench.solver import Solver

pytestmark = pytest.mark.skipif(not Path(DATA, "data").is_dir(), reason="no data mirror")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("agentreport")
    airline = get_domain("airline")
    with Solver(workers=2) as solver:
        run_agents(
            ReferenceModel(reference_table(smoke(airline, 2))), solver, root / "run",
            domains=[airline], modes=("agent-zero-shot",), limit=2,
        )  # fmt: skip
    out = root / "report.html"
    write_report(score_runs([root / "run"], bootstrap=100), out)
    yield out


def _details(html: str) -> dict[str, Any]:
    match = re.search(r'<script type="text/plain" id="details">(.*?)</script>', html, re.S)
    assert match
    data: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(match.group(1))))
    return data


def test_the_details_hold_each_turn_and_a_verified_first_prompt(report: Path) -> None:
    data = _details(report.read_text())
    sample = data["samples"][0]
    trajectory = sample["trajectory"]
    assert trajectory["stop_reason"] == "submit" and trajectory["turns"] == 4
    names = [call[0] for step in trajectory["steps"] for call in step["calls"]]
    assert names == ["read_file", "write_file", "run_prolog", "submit"]
    run_output = "\n\n".join(data["paras"][k] for k in trajectory["steps"][2]["calls"][0][2])
    assert run_output.startswith("status: ok")
    assert sample["attempts"][0]["prompt_verified"] is True


@pytest.mark.slow
@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed")
def test_the_browser_shows_the_trajectory_step_by_step(report: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with chromium() as web:
        web.get(report.as_uri())
        WebDriverWait(web, 20).until(
            lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "1"
        )
        web.find_element(By.CSS_SELECTOR, "#sample-list tbody tr").click()
        detail = web.find_element(By.ID, "detail")
        WebDriverWait(web, 20).until(lambda d: "Trial: 4 turns" in detail.text)
        turns = detail.find_elements(By.CSS_SELECTOR, "details.turn > summary")
        assert [t.text.split(" · ")[2] for t in turns] == [
            "read_file", "write_file", "run_prolog", "submit",
        ]  # fmt: skip
        turns[2].click()
        WebDriverWait(web, 10).until(lambda d: "status: ok" in detail.text)
        assert 'call run_prolog {"path": "solution.pl"}' in detail.text
        assert "rebuilt prompt matches the recorded sha256" in detail.text
        assert console_errors(web) == []
