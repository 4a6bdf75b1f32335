"""Messages in and out per second, derived from offsets polled once a second (no broker metrics needed).

    messages in   the growth of the log end offsets of the topics that are not internal
    messages out  the growth of the groups' committed offsets (what consumers have taken and committed), over
                  the last ``OUT_WINDOW_MS``: consumers commit every few seconds (``auto.commit.interval.ms``,
                  5 s by default), so a one-second difference would be a comb of spikes

Each rate is taken over the partitions (or group partitions) known in both of two successive pictures, so a
partition whose leader is down for a poll makes no false dip or spike; an offset that went backwards (a topic
recreated, offsets reset) counts as zero. ``HISTORY`` points are kept for the chart.

Concurrency contract: not thread-safe; the console's event loop alone calls ``observe``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Mapping
from typing import Any, TypeVar

from samsa.topic_partition import TopicPartition

from .cluster_state import ClusterState

__all__ = ["HISTORY", "OUT_WINDOW_MS", "Rates"]

HISTORY = 300
OUT_WINDOW_MS = 5000
K = TypeVar("K", bound=Hashable)


def _growth(before: Mapping[K, int], after: Mapping[K, int]) -> dict[K, int]:
    return {key: max(0, after[key] - before[key]) for key in after.keys() & before.keys()}


class Rates:
    """The chart's points: ``{"time_ms", "in", "out"}`` per poll, and the latest per-topic in-rates."""

    def __init__(self) -> None:
        self.points: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self.topic_in: dict[str, float] = {}
        self._last: tuple[int, dict[TopicPartition, int]] | None = None
        self._commits: deque[tuple[int, dict[Any, int]]] = deque()

    def observe(self, state: ClusterState) -> None:
        if state.error is not None:
            return
        ends, committed = state.end_offsets(), state.committed()
        last, self._last = self._last, (state.time_ms, ends)
        self._commits.append((state.time_ms, committed))
        while len(self._commits) > 2 and state.time_ms - self._commits[1][0] >= OUT_WINDOW_MS:
            self._commits.popleft()
        if last is None:
            return
        seconds = (state.time_ms - last[0]) / 1000
        if seconds <= 0:
            return
        since_ms, earlier = self._commits[0]
        grown_in = _growth(last[1], ends)
        by_topic: dict[str, int] = {}
        for tp, n in grown_in.items():
            by_topic[tp.topic] = by_topic.get(tp.topic, 0) + n
        self.topic_in = {t: n / seconds for t, n in by_topic.items()}
        self.points.append(
            {
                "time_ms": state.time_ms,
                "in": sum(grown_in.values()) / seconds,
                "out": sum(_growth(earlier, committed).values()) * 1000 / max(1, state.time_ms - since_ms),
            }
        )
