"""HTML report benchmark: size and load time of report.html on a 10,000-record run.

Builds a whole-split run folder (sara_numeric, sara_binary, airline, uscis; every mode;
default K, so about 10,100 records) from the real cases: the prompts are rendered by the
harness (so each record holds the real prompt hash and the report rebuilds and verifies
every prompt), the responses are the cases' reference programs in a fence with some
prose, and about one sample in six fails with a syntax error first and is retried.  No
model and no SWI-Prolog run: this measures the report, not the runner.

Then it writes report.html with ``deonticbench report`` and opens it in Debian's headless
Chromium, measuring (in the page, ``performance.now()``) when the table and the first
page of samples are interactive, when the sample details are inflated, and how long it
takes to filter and to open one sample.

Goal: under 20 MB and under 3 s to interactive.
Usage: python benchmarks/report.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

DOMAINS = ("sara_numeric", "sara_binary", "airline", "uscis")
RETRY_EVERY = 6

SYNTAX = (
    "Warning: program.pl:3:\nWarning:    Singleton variables: [X]\n"
    "ERROR: program.pl:7:12: Syntax error: Operator expected\n"
)


def build_run(folder: Path) -> int:
    from deonticbench.data.cases import describe_source
    from deonticbench.data.domains import get_domain
    from deonticbench.data.sources import resolve_source
    from deonticbench.prompting import render, render_feedback, solver_report
    from deonticbench.prompting.plan import plan_run
    from deonticbench.reading.programs import prepare_program
    from deonticbench.store.environment import environment_facts
    from deonticbench.store.record import Attempt, Record
    from deonticbench.vocabulary.modes import MODES

    source = resolve_source()
    plan = plan_run(
        [get_domain(d) for d in DOMAINS], split="whole", modes=list(MODES), source=source
    )
    folder.mkdir(parents=True)
    config = {
        "harness": "deonticbench",
        "model": {"spec": "openai:gpt-4.1"},
        "split": "whole",
        "domains": list(DOMAINS),
        "modes": list(MODES),
        "k": plan.k,
        "attempts": 2,
        "seed": 0,
        "data": describe_source(source),
        "environment": environment_facts(),
        "sessions": [],
    }
    (folder / "config.json").write_text(json.dumps(config))
    count = 0
    with (folder / "records.jsonl").open("w") as out:
        for n, unit in enumerate(plan.units):
            domain = unit.domain
            prompt = render(unit.case, unit.mode, unit.exemplars)
            gold = unit.case.gold
            line = domain.answer_line.split(" | ")[0]
            printed = line.replace("<amount>", str(gold)).replace("<value>", str(gold))
            for s in range(unit.k):
                wrong = (n + s) % 5 == 0
                answer: float | str = gold if isinstance(gold, str) else float(gold)
                if wrong:
                    answer = (
                        float(gold) + 100
                        if isinstance(gold, int)
                        else next(c for c in domain.classes if c != gold)
                    )
                outcome = "wrong" if wrong else "correct"
                attempts = []
                if unit.mode == "direct":
                    text = f"Reading the statutes step by step...\n\nAnswer: {answer}"
                    attempts.append(
                        Attempt(0, prompt.prompt_hash, text, answer=answer, outcome=outcome)
                    )
                else:
                    program = prepare_program(domain, unit.case.reference_prolog).text
                    text = f"Here is the encoding.\n\n```prolog\n{program}\n```\n"
                    execution = {
                        "status": "ok", "stdout": printed + "\n", "stderr": "",
                        "exit_code": 0, "wall_s": 0.08, "warnings": 0,
                        "sandbox": "bwrap", "limit": None, "signal": None,
                    }  # fmt: skip
                    current = prompt
                    if (n + s) % RETRY_EVERY == 0:
                        broken = {**execution, "status": "syntax_error", "stdout": ""}
                        broken["stderr"], broken["exit_code"] = SYNTAX, 1
                        attempts.append(
                            Attempt(
                                0, prompt.prompt_hash, text, program=program,
                                execution=broken, abstain_reason="program syntax_error",
                            )
                        )  # fmt: skip
                        feedback = solver_report(
                            domain,
                            status="syntax_error",
                            limit=None,
                            stdout="",
                            stderr=SYNTAX,
                            no_answer=None,
                        )
                        current = render_feedback(prompt, text, program, feedback)
                    attempts.append(
                        Attempt(
                            len(attempts), current.prompt_hash, text, program=program,
                            execution=execution, answer=answer, outcome=outcome,
                            tokens_in=sum(len(m.content) for m in current.messages) // 4,
                            tokens_out=300,
                        )
                    )  # fmt: skip
                record = Record(
                    domain.name, unit.case.id, unit.mode, s, gold, "openai:gpt-4.1", attempts
                )
                out.write(json.dumps(record.to_json()) + "\n")
                count += 1
    return count


def measure(report: Path) -> dict[str, float]:
    from browser import chromium, console_errors
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    with chromium() as web:
        start = time.monotonic()
        web.get(report.as_uri())
        WebDriverWait(web, 60).until(
            lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "1"
        )
        wall_ready = time.monotonic() - start
        ready = web.execute_script("return window.__reportReady")
        WebDriverWait(web, 60).until(lambda d: d.execute_script("return window.__detailsReady"))
        details = web.execute_script("return window.__detailsReady")
        t0 = time.monotonic()
        Select(web.find_element(By.ID, "f-outcome")).select_by_value("wrong")
        filtered = time.monotonic() - t0
        t0 = time.monotonic()
        web.find_element(By.CSS_SELECTOR, "#sample-list tbody tr").click()
        WebDriverWait(web, 30).until(lambda d: "Attempt 1" in d.find_element(By.ID, "detail").text)
        opened = time.monotonic() - t0
        errors = console_errors(web)
    return {
        "ready_ms": float(ready),
        "ready_wall_s": wall_ready,
        "details_ms": float(details),
        "filter_s": filtered,
        "open_s": opened,
        "console_errors": float(len(errors)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, default=None, help="Build the run here and keep it.")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="deonticbench-report-bench-"))
    run = base / "run"
    t0 = time.monotonic()
    n = build_run(run)
    print(f"built a run of {n:,} records in {time.monotonic() - t0:.1f} s: {run}")
    records_mb = (run / "records.jsonl").stat().st_size / 1e6
    t0 = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "deonticbench", "report", str(run), "-B", "1000"], check=True
    )
    build_s = time.monotonic() - t0
    report = run / "report.html"
    size_mb = report.stat().st_size / 1e6
    m = measure(report)
    print(f"records.jsonl {records_mb:.1f} MB -> report.html {size_mb:.1f} MB")
    print(f"deonticbench report took {build_s:.1f} s (scoring, prompts rebuilt, figures)")
    print(
        f"chromium: interactive at {m['ready_ms'] / 1000:.2f} s after navigation start "
        f"({m['ready_wall_s']:.2f} s wall clock from get()), sample details inflated at "
        f"{m['details_ms'] / 1000:.2f} s; filter {m['filter_s']:.2f} s, open a sample "
        f"{m['open_s']:.2f} s; console errors: {int(m['console_errors'])}"
    )
    ok = size_mb < 20 and m["ready_wall_s"] < 3
    print(f"goal (< 20 MB, < 3 s to interactive): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
