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
    """The texts of the elements matching ``selector``, read in one script run: the page re-renders every
    second, and elements looked up one call and read the next may be gone by then."""
    texts = driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), e => e.innerText.trim())", selector
    )
    return [str(t) for t in texts]


def text(driver: Any, selector: str) -> str:
    """The text of the first element matching ``selector`` (NoSuchElementException when there is none)."""
    from selenium.common.exceptions import NoSuchElementException

    found = cells(driver, selector)
    if not found:
        raise NoSuchElementException(selector)
    return found[0]


def row_cells(driver: Any, row_selector: str) -> list[str]:
    """The texts of the cells of the first row matching ``row_selector``."""
    from selenium.common.exceptions import NoSuchElementException

    texts = driver.execute_script(
        "const row = document.querySelector(arguments[0]);"
        "return row === null ? null : Array.from(row.querySelectorAll('td'), e => e.innerText.trim())",
        row_selector,
    )
    if texts is None:
        raise NoSuchElementException(row_selector)
    return [str(t) for t in texts]
