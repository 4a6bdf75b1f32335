"""The replication throttle (KIP-73): byte-rate limits on the traffic of replicas that are catching up.

Which replicas are throttled are topic configs, lists of ``partition:broker`` pairs (or ``*`` for every replica):

- ``leader.replication.throttled.replicas`` names the replicas a leader sends from: a leader throttles a partition
  when the pair of that partition and its own id is listed;
- ``follower.replication.throttled.replicas`` names the replicas that copy: a follower throttles a partition when
  the pair of that partition and its own id is listed.

How fast are broker configs in bytes per second (unset: no limit), set at run time through IncrementalAlterConfigs
on the broker resource: ``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate``.
``samsa reassign-partitions --execute --throttle`` sets all four as Kafka's tool does (the leader lists name the
current replicas, the follower lists the new ones), and ``--verify`` removes them once the moves are done.

The rate is measured as Kafka's quotas measure it: bytes summed over a window of 11 one-second samples, divided by
the window's elapsed time (at least one second). While a quota is over its limit:

- the leader (``broker.replica_manager``) returns no data of a throttled partition to a follower outside the ISR
  (the follower's fetch then waits, as an empty fetch does); followers in the ISR are never throttled, so a move
  never slows the replicas that acks=all waits for; it counts the bytes it sends to followers outside the ISR;
- the follower's replica fetcher (:mod:`.replica_fetcher`) leaves its throttled partitions that have not caught up
  with the leader's high watermark out of its Fetch requests, so the partitions that are not throttled keep being
  fetched at full speed; it counts every byte fetched for its throttled partitions.

A limit on either side bounds a move's traffic; the two together bound both ends of it.

Not thread-safe: the owner (the replica manager, or the replica fetchers) calls it on the event-loop thread. Time
comes from the caller.
"""

from __future__ import annotations

from collections import deque

__all__ = [
    "DEFAULT_BROKER",
    "DYNAMIC_BROKER_CONFIGS",
    "FOLLOWER_THROTTLED_RATE",
    "FOLLOWER_THROTTLED_REPLICAS",
    "LEADER_THROTTLED_RATE",
    "LEADER_THROTTLED_REPLICAS",
    "ReplicationQuota",
    "throttled",
]

DEFAULT_BROKER = "<default>"  # the broker entity whose dynamic configs every broker takes
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
DYNAMIC_BROKER_CONFIGS = frozenset({LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE})
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

    def delay_ms(self, now_ms: int) -> int:
        """How long, with no more bytes recorded, until the rate may be back within the limit: when the window's
        bytes over its elapsed time reach the rate, or its oldest sample leaves it, whichever comes first (0: not
        over now)."""
        if not self.over(now_ms):
            return 0
        assert self.rate is not None
        start = self._samples[0][0]
        total = sum(size for _, size in self._samples)
        within = start + -(-total * 1000 // max(self.rate, 1))
        return max(min(within, start + SAMPLES * SAMPLE_MS) - now_ms, 1)

    def _expire(self, now_ms: int) -> None:
        while self._samples and now_ms - self._samples[0][0] >= SAMPLES * SAMPLE_MS:
            self._samples.popleft()
