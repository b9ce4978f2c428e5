"""The HTML report in a real headless Chromium (Debian's, through its chromedriver).

The runs are real: ``deonticbench eval`` against the loopback OpenAI-format server, with
responses that give right, wrong and missing answers, programs that fail and are retried
with SWI-Prolog's feedback, so the page shows every kind of sample.  Screenshots go to
the test's temp folder (``report-*.png``).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, console_errors
from fakeproviders import FakeProvider, FakeRequest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from deonticbench.data.cases import Case, load_cases
from deonticbench.data.sources import resolve_source
from deonticbench.prompting import prompt_hash
from deonticbench.scoring.results import RESULTS_FILE

DATA = os.environ.get("DEONTICBENCH_DATA") or str(
    Path(__file__).resolve().parents[3] / "shared" / "deonticbench-data"
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path(DATA, "data").is_dir(), reason="the shared data mirror is not available"
    ),
]

SYNTAX_ERROR = '```prolog\nmain :- format("Total cost: ~w~n", [1]\n:- initialization(main).\n```'


def _program(value: int) -> str:
    return (
        "Here is the program.\n```prolog\n% cost of the trip\nfee(base, "
        f'{value}).\nmain :-\n    fee(base, X),\n    format("Total cost: ~w~n", [X]).\n'
        ":- initialization(main).\n```"
    )


def _responder(pool: list[Case]) -> Any:
    """Per case index: 0 right, 1 syntax error then right, 2 no program twice, 3 wrong,
    4 right; direct mode right on even cases.  The model name 'fake-b' is right more
    often, so two runs differ."""

    def respond(request: FakeRequest) -> str:
        first_user = next(m["content"] for m in request.messages if m["role"] == "user")
        (index,) = [i for i, c in enumerate(pool) if c.text.strip()[:200] in first_user]
        gold = int(pool[index].gold)
        better = request.body.get("model") == "fake-b"
        retry = any(m["role"] == "assistant" for m in request.messages)
        if "Prolog" not in first_user or "```prolog" not in first_user:
            right = index % 2 == 0 or better
            return f"Reasoning...\nAnswer: {gold if right else gold + 100}"
        if index == 1:
            return _program(gold) if retry else SYNTAX_ERROR
        if index == 2 and not better:
            return "I would rather not write a program for this."
        if index == 3 and not better:
            return _program(gold + 7)
        return _program(gold)

    return respond


def _eval(tmp: Path, url: str, model: str, out: Path) -> None:
    env = {k: v for k, v in os.environ.items() if "API_KEY" not in k}
    env["DEONTICBENCH_DATA"] = DATA
    env["DEONTICBENCH_CACHE"] = str(tmp / "cache.sqlite")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "deonticbench",
            "eval",
            "--model",
            f"openai-compatible:{model}@{url}",
            "--domains",
            "airline",
            "--split",
            "smoke",
            "--modes",
            "direct,zero-shot",
            "-k",
            "2",
            "--out",
            str(out),
            "--score",
        ],
        env=env,
        cwd=tmp,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    tmp = tmp_path_factory.mktemp("runs")
    pool = load_cases("airline", "smoke", resolve_source(DATA))
    with FakeProvider(_responder(pool)) as fake:
        a, b = tmp / "run-a", tmp / "run-b"
        _eval(tmp, fake.openai_url, "fake-a", a)
        _eval(tmp, fake.openai_url, "fake-b", b)
    yield a, b


@pytest.fixture(scope="module")
def web() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def _cli(*args: str) -> str:
    env = {**os.environ, "DEONTICBENCH_DATA": DATA}
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", *args], env=env, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def _open(web: Any, path: Path) -> None:
    web.get(path.as_uri())
    WebDriverWait(web, 20).until(
        lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "1"
    )


def _details(html: str) -> dict[str, Any]:
    match = re.search(r'<script type="text/plain" id="details">(.*?)</script>', html, re.S)
    assert match
    data: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(match.group(1))))
    return data


def _score_cells(text: str) -> list[list[str]]:
    """Rows of ``deonticbench score``'s text table, split on its column gaps."""
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Model"))
    return [re.split(r"\s{2,}", line.strip()) for line in lines[header + 2 :] if line.strip()]


def _visible_rows(web: Any) -> list[list[str]]:
    return [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in web.find_elements(By.CSS_SELECTOR, "#sample-list tbody tr")
    ]


def test_eval_writes_report_and_results(runs: tuple[Path, Path]) -> None:
    a, _ = runs
    html = (a / "report.html").read_text(encoding="utf-8")
    # Self-contained: nothing is fetched, everything is inline.
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<script src" not in html and "stylesheet" not in html
    assert "data:image/png;base64," in html
    results = json.loads((a / RESULTS_FILE).read_text())
    assert results["schema"] == 1 and results["model"].startswith("openai-compatible:fake-a")
    assert {(r["mode"], r["stage"]) for r in results["results"]} == {
        (mode, stage) for mode in ("direct", "zero-shot") for stage in ("first", "final")
    }
    totals = results["totals"]
    assert totals["samples"] == 20 and totals["requests"] > 0 and totals["tokens_in"] > 0
    assert totals["wall_time_s"] > 0
    assert "eval" in results["command"] and results["run_commands"]
    assert results["data"]["kind"] == "local" and results["versions"]["swipl"]


def test_every_prompt_is_rebuilt_and_matches_its_hash(runs: tuple[Path, Path]) -> None:
    details = _details((runs[0] / "report.html").read_text(encoding="utf-8"))
    attempts = [a for s in details["samples"] for a in s["attempts"]]
    assert len(attempts) > 20  # retries are there
    for attempt in attempts:
        assert attempt["prompt_verified"], attempt["prompt_hash"]
        messages = [
            type("M", (), {"role": role, "content": "\n\n".join(details["paras"][i] for i in refs)})
            for role, refs in attempt["prompt"]
        ]
        assert prompt_hash(messages) == attempt["prompt_hash"]  # type: ignore[arg-type]
    retried = [a for s in details["samples"] for a in s["attempts"] if a["index"] == 1]
    assert retried and all(len(a["prompt"]) == 4 for a in retried)  # +response, +feedback


def test_page_in_chromium(runs: tuple[Path, Path], web: Any, tmp_path: Path) -> None:
    a, _ = runs
    _open(web, a / "report.html")
    assert console_errors(web) == []
    web.save_screenshot(str(tmp_path / "report-top.png"))

    # The table shows what `deonticbench score` prints, cell for cell.
    expected = _score_cells(_cli("score", str(a)))
    shown = [
        [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
        for tr in web.find_elements(By.CSS_SELECTOR, "#table2 tbody tr")
    ]
    assert shown == expected
    assert any("+" in cell for row in shown for cell in row)
    assert len(web.find_elements(By.CSS_SELECTOR, "#figures img")) == 2  # first and final

    # Filtering: wrong answers only, then zero-shot abstentions.
    total = len(_visible_rows(web))
    assert total == 20
    Select(web.find_element(By.ID, "f-outcome")).select_by_value("wrong")
    wrong = _visible_rows(web)
    assert wrong and len(wrong) < total and all(r[7] == "wrong" for r in wrong)
    assert web.find_element(By.ID, "count").text == f"{len(wrong)} of 20 samples"
    Select(web.find_element(By.ID, "f-outcome")).select_by_value("")
    Select(web.find_element(By.ID, "f-first_outcome")).select_by_value("abstain")
    Select(web.find_element(By.ID, "f-mode")).select_by_value("zero-shot")
    rows = _visible_rows(web)
    assert rows and all(r[3] == "zero-shot" and r[8] == "abstain" for r in rows)
    web.save_screenshot(str(tmp_path / "report-filtered.png"))

    # The syntax-error case: retried, its second program answered.
    target = next(
        tr
        for tr in web.find_elements(By.CSS_SELECTOR, "#sample-list tbody tr")
        if tr.find_elements(By.TAG_NAME, "td")[7].text == "correct"
    )
    target.click()
    detail = web.find_element(By.ID, "detail")
    WebDriverWait(web, 20).until(lambda d: "Attempt 2 of 2" in detail.text)
    text = detail.text
    assert "Retry chain" in text and "Program as run" in text
    assert "Total cost:" in text  # stdout of the second program
    assert "Syntax error" in text or "syntax error" in text.lower()  # stderr of the first
    numbers = detail.find_elements(By.CSS_SELECTOR, "pre.program span.line")
    assert numbers and numbers[0].get_attribute("data-n") == "1"
    WebDriverWait(web, 20).until(
        lambda d: (
            "hashes to it in this browser too" in detail.text or "in this browser" in detail.text
        )
    )
    assert "in this browser too" in detail.text  # the shown prompt is the hashed one
    assert "rebuilt prompt matches the recorded sha256" in detail.text
    prompt = detail.find_element(By.CSS_SELECTOR, "details.prompt")
    prompt.find_element(By.TAG_NAME, "summary").click()
    # The paper protocol's airline prompt (upstream's) asks for the total's last lines.
    assert "paper:airline/zero-shot" in prompt.text
    assert "Final lines should print total result" in prompt.text
    web.save_screenshot(str(tmp_path / "report-sample.png"))
    stderr = detail.find_element(By.CSS_SELECTOR, "pre.stderr")
    web.execute_script("arguments[0].scrollIntoView({block: 'center'})", stderr)
    web.save_screenshot(str(tmp_path / "report-program.png"))
    assert console_errors(web) == []


def test_two_runs_side_by_side_with_analysis(
    runs: tuple[Path, Path], web: Any, tmp_path: Path
) -> None:
    a, b = runs
    lines = [
        {
            "domain": "airline",
            "case_id": case_id,
            "mode": "zero-shot",
            "sample": 0,
            "stage": "final",
            "category": category,
            "derivation": "fee/2 -> main/0",
            "signature_jaccard": float("nan") if category == "correct" else 0.5,
            "undefined": [],
            "fact_coverage": 0.75,
            "value_recall": 1.0,
            "first_divergence": None,
            "hallucinated_constants": [],
            "proof_summary": f"summary of {case_id}",
        }
        for case_id, category in (
            (_case_ids(a)[3], "wrong constant"),
            (_case_ids(a)[0], "correct"),
        )
    ]
    (a / "analysis.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "both.html"
    _cli("report", str(a), str(b), "--out", str(out), "-B", "200")
    _open(web, out)
    assert console_errors(web) == []
    comparison = web.find_element(By.ID, "comparison-table").text
    assert "run-b - run-a" in comparison
    Select(web.find_element(By.ID, "f-run")).select_by_visible_text("run-b (20)")
    assert all(r[0] == "run-b" for r in _visible_rows(web))
    Select(web.find_element(By.ID, "f-run")).select_by_value("")
    Select(web.find_element(By.ID, "f-category")).select_by_value("wrong constant")
    (row,) = _visible_rows(web)
    assert row[11] == "wrong constant" and row[0] == "run-a"
    web.find_element(By.CSS_SELECTOR, "#sample-list tbody tr").click()
    detail = web.find_element(By.ID, "detail")
    WebDriverWait(web, 20).until(lambda d: "Program analysis" in detail.text)
    assert f"summary of {_case_ids(a)[3]}" in detail.text
    assert "run-b: correct" in detail.text  # the same sample in the other run
    web.save_screenshot(str(tmp_path / "report-two-runs.png"))
    assert console_errors(web) == []
    # The address now names the sample: opening it again shows the same sample.
    link = web.current_url
    assert "#sample-" in link
    web.get("about:blank")
    web.get(link)
    WebDriverWait(web, 20).until(
        lambda d: f"summary of {_case_ids(a)[3]}" in d.find_element(By.ID, "detail").text
    )
    assert console_errors(web) == []


def _case_ids(run: Path) -> list[str]:
    """The smoke cases in the order the responder numbers them."""
    return [c.id for c in load_cases("airline", "smoke", resolve_source(DATA))]


@pytest.mark.slow
def test_report_of_a_missing_folder_is_one_sentence(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "report", str(tmp_path / "nope")],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.decode().startswith("error: ") and "not a run folder" in done.stderr.decode()


def test_a_run_whose_data_is_elsewhere_still_reports(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    import shutil

    moved = tmp_path / "moved"
    shutil.copytree(runs[0], moved)
    config = json.loads((moved / "config.json").read_text())
    config["data"]["path"] = str(tmp_path / "not-here")
    (moved / "config.json").write_text(json.dumps(config))
    env = {k: v for k, v in os.environ.items() if k != "DEONTICBENCH_DATA"}
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "report", str(moved), "-B", "50"],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode()
    html = (moved / "report.html").read_text(encoding="utf-8")
    assert "prompts were not rebuilt" in html and "--data-dir" in html
    details = _details(html)
    assert all("prompt" not in a for s in details["samples"] for a in s["attempts"])
    assert any(a["program"] for s in details["samples"] for a in s["attempts"])


def test_a_lone_surrogate_in_a_reply_does_not_break_the_report(
    runs: tuple[Path, Path], tmp_path: Path
) -> None:
    import shutil

    from deonticbench.report._page import build_report
    from deonticbench.scoring.scores import score_runs

    odd = tmp_path / "odd"
    shutil.copytree(runs[0], odd)
    lines = (odd / "records.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first["attempts"][0]["response"] += "\ud800 (a lone surrogate)"
    first["attempts"][0]["abstain_reason"] = "odd \udfff reason"
    lines[0] = json.dumps(first)
    (odd / "records.jsonl").write_text("\n".join(lines) + "\n")
    html = build_report(score_runs([odd], bootstrap=20))
    html.encode("utf-8")  # a file any browser reads
    responses = [s["attempts"][0]["response"] for s in _details(html)["samples"]]
    assert any("\ud800 (a lone surrogate)" in (r or "") for r in responses)
