"""A jobs folder shaped like DAR's (their task names, folder names truncated by Harbor,
an errored trial, a verifier that wrote nothing, a ``$1,166`` answer, a direct trial
with no answer file) imports as records judged by the paper's rules, and ``score
--dar-rules`` reproduces the numbers DAR's scorer gives on it, worked out here by hand
from their rules (docs/harbor.md)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from harbor_support import dar_trial
from sklearn.metrics import f1_score

from deonticbench.cli import cli
from deonticbench.integrations.harbor import dar_rules
from deonticbench.store import read_records

DATA = os.environ.get("DEONTICBENCH_DATA", "")
pytestmark = pytest.mark.skipif(
    not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
)

AIRLINE = "deonticbench-zeroshot-airline-airline-cases-complexity-0-airline-cases-"
SARA_BIN = "deonticbench-zeroshot-sara-binary-"
USCIS = "deonticbench-direct-uscis-aao-uscis-"


@pytest.fixture
def dar_jobs(tmp_path: Path) -> Path:
    job = tmp_path / "jobs" / "deontic-zeroshot" / "2026-11-01__10-00-00"
    job.mkdir(parents=True)
    (job / "result.json").write_text(json.dumps({"id": "job", "n_total_trials": 12}))
    # airline, accuracy: golds 1166, 949, 1131, 1203, and case 13's.
    dar_trial(job, AIRLINE + "2", expected="1166", got="$1,166", suffix="a1")
    dar_trial(job, AIRLINE + "3", expected="949", got="949", suffix="a2")
    dar_trial(job, AIRLINE + "7", expected="1131", got="1131.9", suffix="a3")
    dar_trial(job, AIRLINE + "12", expected="1203", got="1204", suffix="a4")
    dar_trial(
        job, AIRLINE + "13", expected=None, got=None, exception="AgentTimeoutError", suffix="a5"
    )
    # sara_binary, macro-F1: golds Entailment, Contradiction, Entailment, Contradiction.
    dar_trial(job, SARA_BIN + "s1-a-1-i-pos", expected="Entailment", got="Entailment", suffix="b1")
    dar_trial(
        job, SARA_BIN + "s1-a-2-ii-neg", expected=None, got=None,
        exception="RewardFileNotFoundError", raw_stdout="", suffix="b2",
    )  # fmt: skip
    dar_trial(
        job, SARA_BIN + "s1-a-2-iv-pos", expected="Entailment", got="Contradiction", suffix="b3"
    )
    dar_trial(
        job, SARA_BIN + "s1-c-iii-neg", expected="Contradiction", got="contradiction", suffix="b4"
    )
    # uscis, direct framing: golds Accepted, Accepted.
    dar_trial(job, USCIS + "e2f62d25", expected="Accepted", got="Accepted", suffix="u1")
    dar_trial(
        job, USCIS + "d036757e", expected=None, got=None,
        raw_stdout="No answer file found at /app/output/answer.txt\n", suffix="u2",
    )  # fmt: skip
    dar_trial(job, "hello-world", expected="1", got="1", suffix="x1")
    return tmp_path / "jobs"


def _import(jobs: Path, out: Path) -> str:
    result = CliRunner().invoke(cli, ["import-harbor", str(jobs), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return result.output


def test_dar_jobs_import_by_the_papers_rules(dar_jobs: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    printed = _import(dar_jobs, out)
    assert "wrote 11 records" in printed
    assert "hello-world" in printed  # the foreign trial is named, not imported
    records = {
        (r.domain, r.case_id): r for r in read_records(out / "records.jsonl").records.values()
    }
    assert len(records) == 11
    paid = records[("airline", "airline_cases_complexity_0_airline_cases_2")]
    assert (paid.mode, paid.final.answer, paid.final.outcome) == (
        "agent-zero-shot",
        1166,
        "correct",
    )
    assert paid.final.tokens_in == 1000 and paid.agent is not None
    assert paid.agent.tool_set == "harbor:terminus-2" and paid.agent.cost_usd == 0.01
    timed_out = records[("airline", "airline_cases_complexity_0_airline_cases_13")]
    assert timed_out.final.outcome == "abstain"
    assert "AgentTimeoutError" in (timed_out.final.abstain_reason or "")
    assert timed_out.agent is not None and timed_out.agent.stop_reason == "harbor:AgentTimeoutError"
    assert records[("airline", "airline_cases_complexity_0_airline_cases_12")].final.outcome == (
        "correct"  # 1204 against 1203: within the paper's $1
    )
    no_file = records[("uscis", "uscis_d036757e")]
    assert (no_file.mode, no_file.final.outcome) == ("agent-direct", "abstain")
    assert records[("sara_binary", "s1_c_iii_neg")].final.answer == "Contradiction"
    aborted = records[("sara_binary", "s1_a_2_ii_neg")]
    assert aborted.final.outcome == "abstain"
    assert "RewardFileNotFoundError" in (aborted.final.abstain_reason or "")


def _table(output: str) -> dict[tuple[str, str], list[str]]:
    rows = {}
    for line in output.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 7 and cells[1].startswith("agent-"):
            rows[(cells[0], cells[1])] = cells
    return rows


def test_dar_rules_reproduce_their_numbers(dar_jobs: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    _import(dar_jobs, out)
    result = CliRunner().invoke(cli, ["score", str(out), "--dar-rules", "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    rows = _table(result.output)
    # columns: domain, mode, metric, n, paper (point), DAR, DAR strict[, classes]
    airline = rows[("airline", "agent-zero-shot")]
    # paper: 4 of 5 within $1, the timeout abstains.  DAR: exact strings after truncation,
    # 949 and 1131(.9) match, the timeout's ("", "") counts; strict: it does not.
    assert airline[3:7] == ["5", "80.0", "60.0", "40.0"]
    binary = rows[("sara_binary", "agent-zero-shot")]
    gold = ["Entailment", "Contradiction", "Entailment", "Contradiction"]
    paper_pred = [
        "Entailment",
        "Entailment",
        "Contradiction",
        "Contradiction",
    ]  # abstain: other class
    paper = 100 * f1_score(gold, paper_pred, average="macro")
    # DAR default: classes '', contradiction, entailment (the aborted trial is ("", "")).
    lenient = 100 * f1_score(
        ["entailment", "", "entailment", "contradiction"],
        ["entailment", "", "contradiction", "contradiction"],
        average="macro",
    )
    strict = 100 * f1_score(
        ["entailment", "entailment", "contradiction"],
        ["entailment", "contradiction", "contradiction"],
        average="macro",
    )
    assert binary[3:7] == ["4", f"{paper:.1f}", f"{lenient:.1f}", f"{strict:.1f}"]
    assert binary[7] == "'', 'contradiction', 'entailment'"
    uscis = rows[("uscis", "agent-direct")]
    paper_uscis = 100 * f1_score(["Accepted"] * 2, ["Accepted", "Dismissed"], average="macro")
    assert uscis[3:7] == ["2", f"{paper_uscis:.1f}", "100.0", "100.0"]
    assert "DAR overall accuracy (exact matches / trials): 72.7 (strict 45.5)" in result.output


def test_dar_rules_json_is_one_document_with_the_same_figures(
    dar_jobs: Path, tmp_path: Path
) -> None:
    """``score --dar-rules --json`` prints one JSON document and nothing else; each run
    carries the figures the text table prints, under keys naming their reader, with
    Harbor's rewards, and results.json (``score --out``) holds the same."""
    out = tmp_path / "run"
    _import(dar_jobs, out)
    result = CliRunner().invoke(
        cli, ["score", str(out), "--dar-rules", "--json", "--bootstrap", "50"]
    )
    assert result.exit_code == 0, result.output
    readings = json.loads(result.stdout)["runs"][0]["dar_readings"]
    assert readings["verdicts"] == "harbor.jsonl"
    rows = {r["domain"]: r for r in readings["rows"]}
    text = _table(
        CliRunner().invoke(cli, ["score", str(out), "--dar-rules", "--bootstrap", "50"]).output
    )
    for domain, row in rows.items():
        cells = text[(domain, row["mode"])]
        figures = [row[k] for k in ("harness_reader", "dar_default", "dar_strict")]
        assert cells[3:7] == [str(row["trials"]), *(f"{100 * f:.1f}" for f in figures)]
    airline = rows["airline"]
    assert (airline["harness_reader"], airline["dar_default"], airline["dar_strict"]) == (
        0.8, 0.6, 0.4,
    )  # fmt: skip
    # The folder's verifier wrote reward 0 wherever it ran; the timeout has no reward.
    assert airline["dar_rewards"] == {
        "reward_1": 0, "reward_0": 4, "no_reward": {"AgentTimeoutError": 1},
    }  # fmt: skip
    binary = rows["sara_binary"]
    # DAR's classes, as the text table's column prints them ('', 'contradiction', ...)
    assert binary["dar_classes"] == ["", "contradiction", "entailment"]
    assert binary["dar_scorer"]["default"]["f1_classes"] == binary["dar_classes"]
    assert text[("sara_binary", "agent-zero-shot")][7] == ", ".join(
        repr(c) for c in binary["dar_classes"]
    )
    assert airline["dar_classes"] is None
    assert binary["dar_rewards"]["no_reward"] == {"RewardFileNotFoundError": 1}
    assert rows["uscis"]["dar_rewards"]["no_reward"] == {"none": 1}
    assert readings["overall_accuracy"] == {"dar_default": 8 / 11, "dar_strict": 5 / 11}
    written = CliRunner().invoke(
        cli, ["score", str(out), "--out", str(tmp_path / "scored"), "--bootstrap", "50"]
    )
    assert written.exit_code == 0, written.output
    results = json.loads((tmp_path / "scored" / "results.json").read_text())
    assert results["dar_readings"] == readings


def test_dar_rules_json_on_a_jobs_folder_says_how_to_get_json(dar_jobs: Path) -> None:
    """DAR's scorers print text; on a jobs folder ``--json`` is one sentence instead."""
    result = CliRunner().invoke(cli, ["score", "--dar-rules", "--json", str(dar_jobs)])
    assert result.exit_code != 0
    assert "import the folder first (deonticbench import-harbor" in str(result.exception)
    assert result.stdout == ""


def test_dar_scorer_rules() -> None:
    assert dar_rules.normalise("1166", "$1,166") == ("1166", "$1,166")
    assert dar_rules.normalise("1166", "1166.9") == ("1166", "1166")
    assert dar_rules.normalise("Accepted", "ACCEPTED") == ("accepted", "accepted")
    assert dar_rules.squeeze(["100", " 200.7 "]) == "100200.7"  # several Answer lines run together
    text = "Expected: 5\nGot:      5.5\nNormalized expected: 5\nNormalized got:      5\n"
    assert dar_rules.read_verifier_output(text) == ("5", "5")
    trials = [
        dar_rules.DarTrial("", ""),
        dar_rules.DarTrial("7", "7"),
        dar_rules.DarTrial("7", "", "RuntimeError"),
    ]
    lenient = dar_rules.dar_score(trials)
    strict = dar_rules.dar_score(trials, errors_as_incorrect=True)
    assert (lenient.correct, lenient.classes, lenient.errors) == (2, ("", "7"), 2)
    assert (strict.correct, strict.classes) == (1, ("7",))


def test_against_dar_refuses_other_protocols(dar_jobs: Path, tmp_path: Path) -> None:
    """DAR's published Appendix Table 1 is set beside runs of the dar protocol only: an
    imported run (the harness protocol) alone gets one sentence and a non-zero exit."""
    out = tmp_path / "run"
    _import(dar_jobs, out)
    result = CliRunner().invoke(cli, ["score", str(out), "--against", "dar", "--bootstrap", "50"])
    assert result.exit_code != 0
    assert str(result.exception) == (
        "--against dar needs a run made with --protocol dar; none of the given runs is."
    )


def test_dar_rules_names_both_kinds_of_folder(tmp_path: Path) -> None:
    """An empty folder given to ``score --dar-rules`` is neither a jobs folder nor a run
    folder: the sentence names both, not only the run folder that score otherwise wants."""
    empty = tmp_path / "jobs"
    empty.mkdir()
    result = CliRunner().invoke(cli, ["score", "--dar-rules", str(empty)])
    assert result.exit_code != 0
    assert str(result.exception) == (
        f"{empty} is neither a Harbor jobs folder (no trial's result.json below it) nor a "
        "run folder of this harness; score --dar-rules takes either."
    )
