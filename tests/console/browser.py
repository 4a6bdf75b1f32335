"""Waiting on what a page shows (the console re-renders every second, so elements are looked up afresh)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def wait_until(what: str, probe: Callable[[], T | None], timeout: float = 15.0) -> T:
    """Poll ``probe`` until it gives a truthy value; stale elements and missing ones count as not yet."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = probe()
            if last:
                return last
        except (NoSuchElementException, StaleElementReferenceException) as exc:
            last = exc
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last seen: {last!r})")


def cells(driver: Any, selector: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, selector)]


def text(driver: Any, selector: str) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.CSS_SELECTOR, selector).text)


def row_cells(driver: Any, row_selector: str) -> list[str]:
    """The texts of the cells of the first row matching ``row_selector``."""
    from selenium.webdriver.common.by import By

    row = driver.find_element(By.CSS_SELECTOR, row_selector)
    return [c.text for c in row.find_elements(By.CSS_SELECTOR, "td")]
