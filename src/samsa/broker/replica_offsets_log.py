"""The broker's ``OffsetsLog`` (defined by the coordinator): ``__consumer_offsets`` through the replica manager.

Recovery cuts a partition at its first damaged batch and sets aside what follows (``storage.log_loader``): for a
data topic the records are kept for the operator, but for ``__consumer_offsets`` they are the groups' latest
commits, and without them every group in the partition would go back to an older commit (or none). So a broker
alone appends the valid batches set aside at this start again, in their order, before the groups are loaded:
the groups then stand as if the damaged batch alone were lost. The ``*.salvage`` files stay for the operator,
and a later start does not append them again. In a cluster the leader's copy is the partition's (a damaged
replica fetches from it), and nothing is appended.

Event-loop thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from samsa.protocol.errors import ErrorCode
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition

if TYPE_CHECKING:
    from samsa.storage.log_manager import LogManager

    from .replica_manager import ReplicaManager

READ_CHUNK = 16 * 1024 * 1024
_MAX_OFFSET = (1 << 63) - 1

_log = logging.getLogger(__name__)


class ReplicaOffsetsLog:
    """``OffsetsLog`` over this broker's replica manager (topic creation through the log manager)."""

    def __init__(
        self, replica_manager: ReplicaManager, log_manager: LogManager, *, clustered: bool = False
    ) -> None:
        self._replicas = replica_manager
        self._logs = log_manager
        self._clustered = clustered
        self._restored: set[TopicPartition] = set()

    def offsets_partitions(self) -> list[TopicPartition]:
        if not self._clustered:
            return self._logs.partitions_of(CONSUMER_OFFSETS_TOPIC)
        return [tp for tp in self._replicas.partitions_of(CONSUMER_OFFSETS_TOPIC) if self._leads(tp)]

    def create_offsets_topic(self, partitions: int, config: Mapping[str, str | int]) -> None:
        """Create the topic, or the partitions a creation cut short (a full disk) left missing, and lead every
        partition not hosted yet, even when creating fails half-way. In a cluster the topic is created through
        ZooKeeper by FindCoordinator and led as the controller says: nothing to do here."""
        if self._clustered:
            return
        try:
            existing = len(self._logs.partitions_of(CONSUMER_OFFSETS_TOPIC))
            if existing == 0:
                self._logs.create_topic(CONSUMER_OFFSETS_TOPIC, partitions, dict(config))
            elif existing < partitions:
                self._logs.add_partitions(CONSUMER_OFFSETS_TOPIC, partitions)
        finally:
            for index in range(partitions):
                tp = TopicPartition(CONSUMER_OFFSETS_TOPIC, index)
                partition_log = self._logs.get_log(tp)
                if partition_log is not None and self._replicas.partition(tp) is None:
                    self._replicas.become_leader(tp, partition_log)

    def restore_set_aside(self, tp: TopicPartition) -> None:
        """Append again the valid batches this start's recovery set aside from ``tp`` (module doc)."""
        from samsa.storage.file_records import FileRecords  # start-up time: loaded with the first log

        partition = self._replicas.partition(tp)
        if self._clustered or partition is None or tp in self._restored:
            return
        self._restored.add(tp)
        batches = appended = 0
        for path in partition.log.load_report.set_aside:
            try:
                records = FileRecords.open(path, writable=False)
            except OSError as exc:
                _log.error("%s: cannot read %s to append its commits again: %s", tp, path, exc)
                continue
            try:
                for position, size, _ in records.valid_batches(0, 0, _MAX_OFFSET):
                    result = self._replicas.append(tp, memoryview(bytearray(records.read(position, size))), 1)
                    if result.error != ErrorCode.NONE:
                        _log.error(
                            "%s: appending the commits set aside in %s again failed (%s): %d batches of it "
                            "appended; the file is kept",
                            tp,
                            path,
                            result.error.name,
                            batches,
                        )
                        return
                    batches += 1
                    appended += size
            finally:
                records.close()
        if batches:
            _log.warning(
                "%s: %d batches (%d bytes) that recovery set aside at this start appended again, so the commits "
                "after the damaged bytes stand (the *.salvage files are kept)",
                tp,
                batches,
                appended,
            )

    def read_from_start(self, tp: TopicPartition) -> tuple[int, Iterator[bytes]]:
        partition = self._replicas.partition(tp)
        if partition is None:
            return 0, iter(())
        plog = partition.log
        return plog.log_start_offset, self._chunks(tp, plog.log_start_offset)

    def _chunks(self, tp: TopicPartition, position: int) -> Iterator[bytes]:
        from samsa.records import CorruptRecordError  # start-up time: loaded with the first log
        from samsa.records.batch_view import iter_batches
        from samsa.storage.errors import KafkaStorageError
        from samsa.storage.log import FetchIsolation

        partition = self._replicas.partition(tp)
        while partition is not None and position < partition.log.log_end_offset:
            plog = partition.log
            try:
                data = plog.read(position, READ_CHUNK, FetchIsolation.LOG_END, True).records.read_bytes()
                next_offset = max((b.next_offset for b in iter_batches(data)), default=position)
            except (CorruptRecordError, KafkaStorageError):
                data, next_offset = b"", position
            if next_offset <= position:  # a damaged header: what follows it in its segment cannot be found
                later = [base for base in plog.segments.base_offsets() if base > position]
                if not later:
                    if data:
                        yield data  # the batches before the damage
                    _log.error(
                        "loading %s: offsets from %d on cannot be read (a damaged batch header)", tp, position
                    )
                    return
                _log.error(
                    "loading %s: offsets %d to %d cannot be read (a damaged batch header): skipped to the next "
                    "segment",
                    tp,
                    position,
                    later[0] - 1,
                )
                position = later[0]
                continue
            yield data
            position = next_offset

    def append(self, tp: TopicPartition, records: memoryview) -> tuple[ErrorCode, int]:
        result = self._replicas.append(tp, records, acks=-1)
        return result.error, result.last_offset

    async def wait_replicated(self, tp: TopicPartition, last_offset: int, timeout_ms: int) -> ErrorCode:
        return (await self._replicas.wait_for_acks([(tp, last_offset)], timeout_ms))[tp]

    def is_hosted(self, tp: TopicPartition) -> bool:
        """Whether ``tp`` exists: hosted here, or (in a cluster) known to the metadata cache."""
        return self._replicas.partition(tp) is not None or self._replicas.knows_partition(tp)

    def coordinates(self, tp: TopicPartition) -> bool:
        return not self._clustered or self._leads(tp)

    def _leads(self, tp: TopicPartition) -> bool:
        partition = self._replicas.partition(tp)
        return partition is not None and partition.leader_id == self._replicas.node_id
