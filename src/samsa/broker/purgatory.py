"""Where requests wait: long-poll fetches until data arrives, acks=all produces until the high watermark moves.

A waiter names the partitions it watches; ``notify(tp)`` wakes every waiter watching ``tp``. Waiting is bounded
by the request's own timeout, so a request leaves the purgatory either woken or timed out, never stranded.

Event-loop thread only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable


class Purgatory:
    """Watchers keyed by a hashable key (a TopicPartition)."""

    def __init__(self) -> None:
        self._watchers: dict[Hashable, set[asyncio.Event]] = {}

    async def wait(self, keys: Iterable[Hashable], timeout_s: float) -> bool:
        """Wait until one of ``keys`` is notified or ``timeout_s`` passes; True when woken."""
        event = asyncio.Event()
        watched = list(keys)
        for key in watched:
            self._watchers.setdefault(key, set()).add(event)
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
            return True
        except asyncio.TimeoutError:
            return False
        finally:
            for key in watched:
                waiters = self._watchers.get(key)
                if waiters is not None:
                    waiters.discard(event)
                    if not waiters:
                        del self._watchers[key]

    def notify(self, key: Hashable) -> None:
        for event in self._watchers.get(key, ()):
            event.set()

    def watched(self) -> int:
        return sum(len(w) for w in self._watchers.values())
