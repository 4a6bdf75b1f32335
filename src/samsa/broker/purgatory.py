"""Where requests wait: long-poll fetches until data arrives, acks=all produces until the high watermark moves.

A waiter names the partitions it watches and a deadline on the broker's ``Clock`` (monotonic milliseconds);
``notify(tp)`` wakes every waiter watching ``tp``. A wait ends when it is notified (``wait`` returns True) or when
its deadline passes (False), never stranded.

The deadline is the injected clock's: with the system clock a loop timer fires at it. A clock that moves only when
told (``ManualClock``, the pytest plugin's ``samsa_clock``) tells the purgatory when it is advanced, and waiters
whose deadline it passed end then; the same deadline in real time still bounds the wait, so a test that never
advances its clock sees a long poll end as a client expects rather than hang.

Event-loop thread only (a manual clock's advance may come from another thread: it is handed to the loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable

from samsa.clock import SYSTEM_CLOCK, Clock


class _Waiter:
    """One parked request: a future its notification, its deadline on the clock or its real-time timer ends."""

    __slots__ = ("deadline_ms", "future")

    def __init__(self, deadline_ms: int, future: asyncio.Future[bool]) -> None:
        self.deadline_ms = deadline_ms
        self.future = future

    def end(self, woken: bool) -> None:
        if not self.future.done():
            self.future.set_result(woken)


class Purgatory:
    """Waiters keyed by a hashable key (a TopicPartition), with deadlines on ``clock`` (module doc)."""

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._watchers: dict[Hashable, set[_Waiter]] = {}
        self._waiting: set[_Waiter] = set()
        self._subscribed = False

    async def wait(self, keys: Iterable[Hashable], deadline_ms: int) -> bool:
        """Wait until one of ``keys`` is notified (True) or the clock reaches ``deadline_ms`` (False).

        One future and one loop timer per wait (no task: a follower's fetch parks here every round)."""
        remaining_ms = deadline_ms - self._clock.monotonic_ms()
        if remaining_ms <= 0:
            return False
        self._subscribe()
        loop = asyncio.get_running_loop()
        waiter = _Waiter(deadline_ms, loop.create_future())
        watched = tuple(keys)
        for key in watched:
            self._watchers.setdefault(key, set()).add(waiter)
        self._waiting.add(waiter)
        timer = loop.call_later(remaining_ms / 1000, waiter.end, False)
        try:
            return await waiter.future
        finally:
            timer.cancel()
            self._waiting.discard(waiter)
            for key in watched:
                waiters = self._watchers.get(key)
                if waiters is not None:
                    waiters.discard(waiter)
                    if not waiters:
                        del self._watchers[key]

    def notify(self, key: Hashable) -> None:
        for waiter in self._watchers.get(key, ()):
            waiter.end(True)

    def watched(self) -> int:
        return sum(len(w) for w in self._watchers.values())

    def _subscribe(self) -> None:
        """With a clock that is advanced by hand, learn of each advance (on this loop)."""
        if self._subscribed:
            return
        self._subscribed = True
        on_advance = getattr(self._clock, "on_advance", None)
        if on_advance is None:
            return
        loop = asyncio.get_running_loop()

        def advanced() -> None:  # the advancing thread
            if not loop.is_closed():
                loop.call_soon_threadsafe(self._expire_due)

        on_advance(advanced)

    def _expire_due(self) -> None:
        now = self._clock.monotonic_ms()
        for waiter in list(self._waiting):
            if waiter.deadline_ms <= now:
                waiter.end(False)
