"""Time and randomness, injected.

Every component that rolls, expires or times out takes a ``Clock`` so tests move time by hand instead of
sleeping. ``SystemClock`` is the real one; ``ManualClock`` is the test double (Kafka's ``MockTime``).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import random
    from collections.abc import Callable


class Clock(Protocol):
    """Wall-clock milliseconds, a monotonic clock and a seeded random source."""

    def milliseconds(self) -> int: ...

    def monotonic_ms(self) -> int: ...

    def random(self) -> random.Random: ...


class SystemClock:
    """The real clock. Thread-safe. Its random source is made at the first ``random()`` (``random`` costs about
    1 ms to import, and a broker's start draws nothing)."""

    def __init__(self, seed: int | None = None) -> None:
        self._seed = seed
        self._random: random.Random | None = None
        self._lock = threading.Lock()

    def milliseconds(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000

    def random(self) -> random.Random:
        rng = self._random
        if rng is None:
            with self._lock:
                if self._random is None:
                    from random import Random

                    self._random = Random(self._seed)
                rng = self._random
        return rng


class ManualClock:
    """A clock that moves only when told to. Thread-safe."""

    def __init__(self, start_ms: int = 1_700_000_000_000, seed: int = 0) -> None:
        self._now = start_ms
        self._mono = 0
        self._lock = threading.Lock()
        self._listeners: list[Callable[[], None]] = []
        from random import Random  # not at module level, which SystemClock keeps cheap to import

        self._random = Random(seed)

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
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def on_advance(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (in the advancing thread) after each ``advance``: waiters with deadlines on this clock
        (the broker's purgatories) end when it passes them."""
        with self._lock:
            self._listeners.append(listener)


SYSTEM_CLOCK = SystemClock()
