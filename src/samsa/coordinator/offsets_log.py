"""``OffsetsLog``: what the group coordinator needs of the log, defined here and implemented by the broker.

The coordinator keeps groups and committed offsets in ``__consumer_offsets``; it never reaches into the broker's
replica manager or log manager. The broker hands it an ``OffsetsLog`` (``samsa.broker.replica_offsets_log``), the seam the
cluster work uses to load and unload groups when this broker gains or loses leadership of a partition.

Event-loop thread only, like the coordinator.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Protocol

from samsa.protocol.errors import ErrorCode
from samsa.storage.topic import TopicPartition


class OffsetsLog(Protocol):
    """The ``__consumer_offsets`` partitions this broker leads, and whether a partition is hosted."""

    def offsets_partitions(self) -> list[TopicPartition]:
        """The ``__consumer_offsets`` partitions this broker leads (none before the topic exists)."""
        ...

    def create_offsets_topic(self, partitions: int, config: Mapping[str, str | int]) -> None:
        """Create ``__consumer_offsets`` and lead its partitions; StorageError when it cannot be created."""
        ...

    def restore_set_aside(self, tp: TopicPartition) -> None:
        """Before the partition's groups are loaded: append again what this start's recovery set aside from it
        (the commits after damaged bytes), where that keeps the log the same on every replica (alone)."""
        ...

    def read_from_start(self, tp: TopicPartition) -> tuple[int, Iterator[bytes]]:
        """The partition's log start offset, and its batches from there to the log end as raw chunks."""
        ...

    def append(self, tp: TopicPartition, records: memoryview) -> tuple[ErrorCode, int]:
        """Append as leader, refused (NOT_ENOUGH_REPLICAS) when the ISR is below ``min.insync.replicas`` as for
        acks=all: (the error Kafka would report for the partition, the offset of the last record appended)."""
        ...

    async def wait_replicated(self, tp: TopicPartition, last_offset: int, timeout_ms: int) -> ErrorCode:
        """Wait until the ISR has every record up to ``last_offset`` (the high watermark passed it): NONE, or
        acks=all's answer (REQUEST_TIMED_OUT, NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS_AFTER_APPEND). Returns
        without waiting when it already has them (a broker alone)."""
        ...

    def coordinates(self, tp: TopicPartition) -> bool:
        """Whether the groups of ``tp`` are this broker's: alone always; in a cluster when it leads ``tp``."""
        ...

    def is_hosted(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` is a partition of this broker (offsets are only committed for those)."""
        ...
