"""DAR's figures of a dar-protocol run where a script reads them: ``score --json``,
``score --dar-rules --json`` (one JSON document on stdout, nothing else), results.json
(written by ``score --out`` and by ``eval``) and report.html carry each domain × mode's
DAR default and strict figures, DAR's verifier's rewards and the harness reader's
figure, the same numbers the text table prints.

A scripted agent (no model) leaves three kinds of final state through the real runner,
bubblewrap shell and swipl, one per domain: a right ``Answer:`` line (reward 1), a wrong
one (reward 0), and a program that prints no ``Answer:`` line (no reward:
``RewardFileNotFoundError``, which DAR's scorer counts as correct by default and as
wrong when strict).
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
from agent_runs import DATA, SANDBOXED, ScriptedAgent
from click.testing import CliRunner

from deonticbench.cli import cli
from deonticbench.data.cases import resolve_source
from deonticbench.data.dar_files import DAR_DIR_ENV
from deonticbench.data.domains import get_domain
from deonticbench.evaluation.runner import Runner
from deonticbench.models.base import Completion, Request
from deonticbench.prompting.plan import plan_run
from deonticbench.solver import Solver
from deonticbench.store.folder import RunFolder
from deonticbench.store.spec import AgentOptions

DAR = Path(__file__).resolve().parents[3] / "shared" / "harbor-deonticbench"
pytestmark = [
    *SANDBOXED,
    pytest.mark.skipif(not (DAR / "adapters").is_dir(), reason="no mirror of DAR's repository"),
]
PROGRAMS = {
    "airline": ':- format("Answer: 1166~n").',  # the first smoke case's gold: reward 1
    "sara_numeric": ':- format("Answer: 5~n").',  # wrong: reward 0
    "uscis": ':- format("Decision: Accepted~n").',  # no Answer: line, no reward
}


@pytest.fixture(autouse=True)
def _dar_mirror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DAR_DIR_ENV, str(DAR))


class _ByDomain(ScriptedAgent):
    """Writes its domain's program to /app/solution.pl, then stops."""

    def __init__(self) -> None:
        super().__init__([])

    async def generate(self, request: Request) -> list[Completion]:
        program = f"{PROGRAMS[request.domain]}\n:- halt.\n"
        write = f"printf '{program}' > /app/solution.pl".replace("\n", "\\n")
        self.script = [[("bash", {"command": write})]]
        return await super().generate(request)


@pytest.fixture
def dar_run(solver: Solver, tmp_path: Path) -> Path:
    out = tmp_path / "run"
    plan = plan_run(
        [get_domain(d) for d in PROGRAMS], split="smoke", modes=["agent-zero-shot"], k=1,
        limit=1, source=resolve_source(DATA), protocol="dar",
    )  # fmt: skip
    agent = _ByDomain()
    config = {"model": {"spec": agent.spec}, "split": "smoke", "protocol": "dar"}

    async def go() -> None:
        with RunFolder.open(out, config) as folder:
            await Runner(agent, solver, folder, agent=AgentOptions(tool_set="shell")).run(plan)

    asyncio.run(go())
    return out


def _score(*args: str) -> Any:
    result = CliRunner().invoke(cli, ["score", *args, "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    return result


def _text_rows(output: str) -> dict[str, list[str]]:
    """The text table's rows by domain: metric, n, harness, DAR, DAR strict."""
    table = output.split("DAR's verifier and scorer beside the harness reader")[1]
    rows = {}
    for line in table.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 7 and cells[1] == "agent-zero-shot":
            rows[cells[0]] = cells[2:7]
    return rows


@pytest.mark.slow
def test_dar_figures_are_in_every_document_a_script_reads(dar_run: Path, tmp_path: Path) -> None:
    plain = json.loads(_score(str(dar_run), "--json").stdout)
    # --dar-rules --json: stdout is one JSON document, and the same one
    rules = _score(str(dar_run), "--dar-rules", "--json").stdout
    assert json.loads(rules) == plain
    readings = plain["runs"][0]["dar_readings"]
    assert readings["verdicts"] == "records"
    rows = {r["domain"]: r for r in readings["rows"]}
    assert set(rows) == set(PROGRAMS)
    figures = {d: (r["harness_reader"], r["dar_default"], r["dar_strict"]) for d, r in rows.items()}
    assert figures == {
        "airline": (1.0, 1.0, 1.0),
        "sara_numeric": (0.0, 0.0, 0.0),
        # the harness reader abstains (read as the class opposite gold: macro-F1 0);
        # DAR's default reads ("", ""), a class of its own, right; strict drops the
        # errored trial, which has no expected label
        "uscis": (0.0, 1.0, 0.0),
    }
    assert rows["airline"]["dar_rewards"] == {"reward_1": 1, "reward_0": 0, "no_reward": {}}
    assert rows["sara_numeric"]["dar_rewards"] == {"reward_1": 0, "reward_0": 1, "no_reward": {}}
    assert rows["uscis"]["dar_rewards"] == {
        "reward_1": 0, "reward_0": 0, "no_reward": {"RewardFileNotFoundError": 1},
    }  # fmt: skip
    assert rows["uscis"]["dar_scorer"]["default"]["f1_classes"] == [""]
    assert rows["uscis"]["dar_scorer"]["strict"]["errors"] == 1
    assert readings["overall_accuracy"] == {"dar_default": 2 / 3, "dar_strict": 1 / 3}
    # the text table prints the same figures
    text = _text_rows(_score(str(dar_run)).output)
    for domain, row in rows.items():
        expected = [row["metric"], str(row["trials"])]
        expected += [
            f"{100 * row[key]:.1f}" for key in ("harness_reader", "dar_default", "dar_strict")
        ]
        assert text[domain] == expected, domain
    # results.json and report.html (score --out) hold the same document
    out = tmp_path / "out"
    _score(str(dar_run), "--out", str(out))
    assert json.loads((out / "results.json").read_text())["dar_readings"] == readings
    page = (out / "report.html").read_text()
    (held,) = re.findall(r'data-dar-readings="([^"]*)"', page)
    assert json.loads(html.unescape(held)) == readings
    assert "DAR strict" in page and "none: 1 RewardFileNotFoundError" in page


def test_against_dar_json_is_one_document_with_dars_table(dar_run: Path) -> None:
    result = _score(str(dar_run), "--against", "dar", "--json")
    doc = json.loads(result.stdout)
    settings = [row["Setting"] for row in doc["against_dar"]]
    assert settings[:3] == [
        "Agent Zero-Shot (DAR)", "Agent Zero-Shot (DAR strict)", "Agent Zero-Shot (harness reader)",
    ]  # fmt: skip
    assert any(row["Source"] == "DAR T1" for row in doc["against_dar"])
    assert doc["runs"][0]["dar_readings"]["rows"]


def test_eval_writes_dars_figures_into_results_json(tmp_path: Path) -> None:
    """``eval --protocol dar`` (the reference agent, the real command): the results.json
    it writes holds the run's DAR readings, as ``score --json`` gives them."""
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, [
        "eval", "--model", "reference", "--protocol", "dar", "--modes", "agent-zero-shot",
        "--domains", "airline", "--split", "smoke", "--limit", "1", "-k", "1",
        "--out", str(out), "--no-cache",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    readings = json.loads((out / "results.json").read_text())["dar_readings"]
    (row,) = readings["rows"]
    assert (row["domain"], row["mode"], row["trials"]) == ("airline", "agent-zero-shot", 1)
    rewards = row["dar_rewards"]
    assert rewards["reward_1"] + rewards["reward_0"] + sum(rewards["no_reward"].values()) == 1
    scored = json.loads(_score(str(out), "--json").stdout)
    assert scored["runs"][0]["dar_readings"] == readings
