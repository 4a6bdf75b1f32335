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


class MemoryOffsetsLog:
    """An ``OffsetsLog`` in memory: the partitions this broker leads (``led``) and each partition's batches, read
    back in chunks of about ``chunk_bytes`` as the broker reads its segments. For the coordinator's unit tests and
    ``bench/bench_group_load.py``; every append is replicated at once, as at a broker alone."""

    def __init__(self, chunk_bytes: int = 1 << 20) -> None:
        self.led: set[TopicPartition] = set()
        self.batches: dict[TopicPartition, list[bytes]] = {}
        self.chunk_bytes = chunk_bytes

    def offsets_partitions(self) -> list[TopicPartition]:
        return sorted(self.led)

    def create_offsets_topic(self, partitions: int, config: Mapping[str, str | int]) -> None:
        raise NotImplementedError("the partitions are set in ``led``")

    def restore_set_aside(self, tp: TopicPartition) -> None:
        pass

    def read_from_start(self, tp: TopicPartition) -> tuple[int, Iterator[bytes]]:
        return 0, self._chunks(list(self.batches.get(tp, [])))

    def _chunks(self, batches: list[bytes]) -> Iterator[bytes]:
        chunk = bytearray()
        for batch in batches:
            chunk += batch
            if len(chunk) >= self.chunk_bytes:
                yield bytes(chunk)
                chunk = bytearray()
        if chunk:
            yield bytes(chunk)

    def append(self, tp: TopicPartition, records: memoryview) -> tuple[ErrorCode, int]:
        self.batches.setdefault(tp, []).append(bytes(records))
        return ErrorCode.NONE, 0

    async def wait_replicated(self, tp: TopicPartition, last_offset: int, timeout_ms: int) -> ErrorCode:
        return ErrorCode.NONE

    def coordinates(self, tp: TopicPartition) -> bool:
        return tp in self.led

    def is_hosted(self, tp: TopicPartition) -> bool:
        return True
