"""One way for the cluster tests to wait: poll a condition until it holds or a deadline passes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(what: str, check: Callable[[], Any], timeout: float = 30.0) -> Any:
    """``check()``'s first truthy value, polled every 100 ms; AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
