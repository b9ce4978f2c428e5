"""Headless Debian Chromium driven by Selenium through the system chromedriver.

Never downloads a browser or a driver: the paths are the Debian packages' (installed by
scripts/system-deps.sh).  Shared by the report's browser tests and benchmarks/report.py.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)


def chromium_path() -> str | None:
    return shutil.which("chromium") or (CHROMIUM if Path(CHROMIUM).exists() else None)


def chromedriver_path() -> str | None:
    return shutil.which("chromedriver") or (CHROMEDRIVER if Path(CHROMEDRIVER).exists() else None)


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """A Selenium WebDriver on a fresh profile, with the browser console log enabled."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = chromium_path(), chromedriver_path()
    if browser is None or driver is None:
        raise RuntimeError("chromium and chromium-driver are needed: run make system-deps")
    profile = tempfile.mkdtemp(prefix="deonticbench-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    web = webdriver.Chrome(service=Service(executable_path=driver), options=options)
    try:
        yield web
    finally:
        web.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(web: Any) -> list[dict[str, Any]]:
    """Console messages of level SEVERE (errors, failed loads, CSP violations)."""
    return [e for e in web.get_log("browser") if e.get("level") == "SEVERE"]
