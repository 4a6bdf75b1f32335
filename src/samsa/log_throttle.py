"""``LogThrottle``: when a message that a lasting fault repeats (a full disk, refused connections, a failing
periodic task) is due to be logged again, so that a fault gives one line a minute instead of one per request.

Not thread-safe: each user keeps its own, on its own thread.
"""

from __future__ import annotations

from collections.abc import Hashable


class LogThrottle:
    """Once per ``interval`` per key (in whatever unit the caller's ``now`` is), with the count held back."""

    __slots__ = ("_last", "interval")

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._last: dict[Hashable, tuple[float, int]] = {}  # key: (when last due, held back since)

    def due(self, now: float, key: Hashable = None) -> int | None:
        """Whether ``key`` is due at ``now``: the number of times it was held back since it was last due (0 the
        first time), or None, counting one more held back."""
        last = self._last.get(key)
        if last is not None and now - last[0] < self.interval:
            self._last[key] = (last[0], last[1] + 1)
            return None
        self._last[key] = (now, 0)
        return 0 if last is None else last[1]

    @staticmethod
    def held_back(count: int) -> str:
        """What a line that is due says of the ``count`` it stands for (``due``'s answer): nothing for none."""
        return f" ({count} more since the last line)" if count else ""

    def forget(self, key: Hashable = None) -> bool:
        """The fault of ``key`` is over: its next occurrence is due at once. True when it had occurred."""
        return self._last.pop(key, None) is not None
