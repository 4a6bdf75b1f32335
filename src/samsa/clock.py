"""Time and randomness, injected.

Every component that rolls, expires or times out takes a ``Clock`` so tests move time by hand instead of
sleeping. ``SystemClock`` is the real one; ``ManualClock`` is the test double (Kafka's ``MockTime``).
"""

from __future__ import annotations

import random
import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock milliseconds, a monotonic clock and a seeded random source."""

    def milliseconds(self) -> int: ...

    def monotonic_ms(self) -> int: ...

    def random(self) -> random.Random: ...


class SystemClock:
    """The real clock. Thread-safe."""

    def __init__(self, seed: int | None = None) -> None:
        self._random = random.Random(seed)

    def milliseconds(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def random(self) -> random.Random:
        return self._random


class ManualClock:
    """A clock that moves only when told to. Thread-safe."""

    def __init__(self, start_ms: int = 1_700_000_000_000, seed: int = 0) -> None:
        self._now = start_ms
        self._mono = 0
        self._lock = threading.Lock()
        self._random = random.Random(seed)

    def milliseconds(self) -> int:
        with self._lock:
            return self._now

    def monotonic_ms(self) -> int:
        with self._lock:
            return self._mono

    def random(self) -> random.Random:
        return self._random

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError(f"a clock cannot go back ({ms} ms)")
        with self._lock:
            self._now += ms
            self._mono += ms


SYSTEM_CLOCK = SystemClock()
