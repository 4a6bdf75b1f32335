"""The replication throttle (KIP-73): a byte-rate limit on what a leader sends to followers that are catching up.

Which partitions are throttled is a topic config, ``leader.replication.throttled.replicas``: a list of
``partition:broker`` pairs (or ``*`` for every replica); a leader throttles a partition when the pair of that
partition and its own id is listed. How fast is a broker config, ``leader.replication.throttled.rate`` in bytes per
second (unset: no limit), set at run time through IncrementalAlterConfigs on the broker resource.

The rate is measured as Kafka's quotas measure it: bytes summed over a window of 11 one-second samples, divided by
the window's elapsed time. While it is over the limit, a throttled partition returns no data to a follower outside
the ISR (the follower's fetch then waits, as an empty fetch does); followers in the ISR are never throttled, so a
move never slows the replicas that acks=all waits for.

``follower.replication.throttled.rate`` and ``follower.replication.throttled.replicas`` are stored and accepted
(``samsa reassign-partitions --throttle`` sets them as Kafka's tool does), but only the leader's side limits here:
one limit on the sending side is enough to bound a move's traffic.

Not thread-safe: the owning ReplicaManager calls it on the event-loop thread. Time comes from the caller.
"""

from __future__ import annotations

from collections import deque

__all__ = [
    "DEFAULT_BROKER",
    "DYNAMIC_BROKER_CONFIGS",
    "LEADER_THROTTLED_RATE",
    "LEADER_THROTTLED_REPLICAS",
    "ReplicationQuota",
    "throttled",
]

DEFAULT_BROKER = "<default>"  # the broker entity whose dynamic configs every broker takes
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
DYNAMIC_BROKER_CONFIGS = frozenset({LEADER_THROTTLED_RATE, "follower.replication.throttled.rate"})
SAMPLES = 11
SAMPLE_MS = 1000


def throttled(replicas: str | None, partition: int, broker_id: int) -> bool:
    """Whether a ``partition:broker,...`` list (or ``*``) names ``partition`` on ``broker_id``."""
    if not replicas:
        return False
    if replicas.strip() == "*":
        return True
    return f"{partition}:{broker_id}" in {item.strip() for item in replicas.split(",")}


class ReplicationQuota:
    """Bytes per second over the last ``SAMPLES`` seconds against a limit (None: unlimited). Module doc."""

    def __init__(self) -> None:
        self.rate: int | None = None
        self._samples: deque[tuple[int, int]] = deque()  # (sample start ms, bytes)

    def record(self, size: int, now_ms: int) -> None:
        if self._samples and now_ms - self._samples[-1][0] < SAMPLE_MS:
            start, total = self._samples[-1]
            self._samples[-1] = (start, total + size)
        else:
            self._samples.append((now_ms, size))
        self._expire(now_ms)

    def over(self, now_ms: int) -> bool:
        if self.rate is None:
            return False
        self._expire(now_ms)
        if not self._samples:
            return False
        elapsed_ms = max(now_ms - self._samples[0][0], SAMPLE_MS)
        return sum(size for _, size in self._samples) * 1000 / elapsed_ms > self.rate

    def _expire(self, now_ms: int) -> None:
        while self._samples and now_ms - self._samples[0][0] >= SAMPLES * SAMPLE_MS:
            self._samples.popleft()
