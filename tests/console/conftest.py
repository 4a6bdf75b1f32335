"""Fixtures of the console tests: a console on its own loop thread, and headless Chromium driven by Selenium.

The browser tests skip with a reason when Debian's ``chromium`` / ``chromium-driver`` or the ``selenium`` package
are missing (``make system-deps`` installs the first two).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from samsa.console import Console

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def _missing_browser() -> str | None:
    if CHROMIUM is None or CHROMEDRIVER is None:
        return (
            "headless Chromium is not installed (apt-get install chromium chromium-driver; make system-deps)"
        )
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "the selenium package is not installed (pip install selenium)"
    return None


@pytest.fixture
def console_factory() -> Iterator[Callable[..., Console]]:
    started: list[Console] = []

    def start(bootstrap_servers: str, **kwargs: Any) -> Console:
        console = Console(bootstrap_servers, **kwargs).start_in_thread()
        started.append(console)
        return console

    yield start
    for console in reversed(started):
        console.stop_thread()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    reason = _missing_browser()
    if reason is not None:
        pytest.skip(reason)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(20)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot_path() -> Path:
    return Path(__file__).resolve().parents[2] / "docs" / "console.png"
