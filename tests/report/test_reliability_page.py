"""The report's Reliability page in a real headless Chromium: ``score --reliability --out``
on a run folder with two modes, then the page's tables, n/a reasons and figures
(reliability diagrams and risk-coverage curves with bands) as the browser shows them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from browser import chromium, chromium_path, console_errors
from reliability_runs import write_run
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed"),
]


def _run(tmp: Path) -> Path:
    rng = np.random.default_rng(5)
    gold: dict[str, int | str] = {f"c{i:02d}": 100 + 10 * i for i in range(20)}

    def answers(p_right: float) -> dict[str, list[float | str | None]]:
        out: dict[str, list[float | str | None]] = {}
        for c, g in gold.items():
            samples: list[float | str | None] = []
            for _ in range(3):
                r = rng.random()
                right = float(g) if r < p_right else float(g) + 40.0  # type: ignore[arg-type]
                samples.append(None if r > 0.95 else right)
            out[c] = samples
        return out

    run = write_run(tmp / "run", "test:m", "airline", "direct", gold, answers(0.6))
    other = write_run(tmp / "other", "test:m", "airline", "zero-shot", gold, answers(0.7))
    with (run / "records.jsonl").open("a") as fh:
        fh.write((other / "records.jsonl").read_text())
    return run


def test_the_reliability_page_shows_tables_reasons_and_figures(tmp_path: Path) -> None:
    run = _run(tmp_path)
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "deonticbench", "score", str(run), "--reliability", "-B", "100",
         "--out", str(out)],
        capture_output=True, text=True, env=os.environ.copy(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with chromium() as web:
        web.get((out / "report.html").as_uri())
        WebDriverWait(web, 20).until(
            lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "1"
        )
        section = web.find_element(By.ID, "reliability")
        assert section.find_element(By.TAG_NAME, "h2").text == "Reliability"
        headers = [th.text for th in section.find_elements(By.CSS_SELECTOR, "thead th")]
        assert {"AUROC", "Brier", "ECE (10 bins)", "Kuiper p", "E-AURC"} <= set(headers)
        rows = [
            [td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in section.find_elements(By.CSS_SELECTOR, "#reliability-first tbody tr")
        ]
        signals = {(r[1], r[2]) for r in rows}
        assert ("Direct", "consistency") in signals and ("Zero-Shot", "cross_mode") in signals
        assert ("Direct", "execution") not in signals  # n/a, listed with its reason
        reasons = section.find_element(By.ID, "reliability-na").text
        assert "execution: a direct answer runs no program" in reasons
        # One figure per mode, each drawn (decoded by the browser, not just embedded).
        images = section.find_elements(By.CSS_SELECTOR, "figure.reliability img")
        assert len(images) == 2
        for img in images:
            width = web.execute_script("return arguments[0].naturalWidth", img)
            assert width > 300
        caption = section.find_element(By.CSS_SELECTOR, "figure.reliability figcaption").text
        assert "risk" not in caption.lower() or "coverage" in caption
        web.save_screenshot(str(tmp_path / "report-reliability.png"))
        assert console_errors(web) == []
