"""What a replica fetcher needs of the follower's logs, defined here and implemented by the broker's replica manager.

Kept apart from ``replica_fetcher`` (which imports the client) so the single broker, which never fetches, does not
import the client to name these types.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple, Protocol

from samsa.topic_partition import TopicPartition

__all__ = ["FetchPosition", "FollowerLogs"]


class FetchPosition(NamedTuple):
    """Where a follower fetches a partition next: its log end, the epoch of its last batch, the leader's epoch.
    A tuple: one is made for every followed partition on every fetch round, and compared with the last one sent."""

    fetch_offset: int
    last_fetched_epoch: int
    current_leader_epoch: int
    log_start_offset: int


new_fetch_position: Callable[[tuple[int, int, int, int]], FetchPosition] = functools.partial(
    tuple.__new__, FetchPosition
)
"""A FetchPosition from its four fields at once, without a named tuple's Python-level ``__new__``."""


class FollowerLogs(Protocol):
    """The follower's side of its partitions. Event-loop thread only."""

    def fetch_position(self, tp: TopicPartition) -> FetchPosition | None:
        """Where to fetch ``tp`` from next; None when this broker no longer follows it."""
        ...

    def append_fetched(
        self, tp: TopicPartition, records: memoryview, high_watermark: int, log_start_offset: int
    ) -> int:
        """Append the leader's records with their offsets; take its high watermark and log start offset. The log
        end offset after it (-1 when this broker no longer follows ``tp``)."""
        ...

    def truncate_diverging(self, tp: TopicPartition, leader_epoch: int, end_offset: int) -> None:
        """The leader's log ends ``leader_epoch`` at ``end_offset``: drop what diverged (KIP-101/279)."""
        ...

    def reset_out_of_range(self, tp: TopicPartition, leader_log_start: int, leader_log_end: int) -> None:
        """The fetch offset is outside the leader's log: start over at its start, or truncate to its end."""
        ...

    def follower_throttled(self, tp: TopicPartition) -> bool:
        """Whether the topic's ``follower.replication.throttled.replicas`` names ``tp`` on this broker."""
        ...
