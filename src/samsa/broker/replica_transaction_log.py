"""The broker's ``TransactionStateLog`` (defined by ``samsa.transaction.coordinator``): ``__transaction_state``
through the replica manager, and the marker sender the coordinator drives.

A broker alone creates ``__transaction_state`` (compacted, ``transaction.state.log.num.partitions``) at the
coordinator's first use, leads every partition and loads them all. In a cluster the topic's creation and the
coordinator's loading on leadership changes are not wired yet: the coordinator there owns no partition and
answers NOT_COORDINATOR. Markers: written in-process through ``ReplicaManager.write_txn_markers`` (the log side's
method) when the broker has it; until then a marker is logged and skipped (read_committed is the log side's).

Event-loop thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from samsa.protocol.errors import ErrorCode
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition
from samsa.transaction.log_format import TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from samsa.storage.log_manager import LogManager
    from samsa.transaction.state import TopicPartitionKey

    from .replica_manager import ReplicaManager

_log = logging.getLogger(__name__)


class ReplicaTransactionStateLog:
    """``TransactionStateLog`` over this broker's replica manager (a broker alone)."""

    def __init__(self, replica_manager: ReplicaManager, log_manager: LogManager, now_ms: Any) -> None:
        self._replicas = replica_manager
        self._logs = log_manager
        self._now_ms = now_ms

    def ensure_topic(self, partitions: int) -> list[int]:
        """Create ``__transaction_state`` when absent and lead its partitions: their indexes."""
        if not self._logs.partitions_of(TRANSACTION_STATE_TOPIC):
            self._logs.create_topic(TRANSACTION_STATE_TOPIC, partitions, {"cleanup.policy": "compact"})
        indexes = []
        for tp in self._logs.partitions_of(TRANSACTION_STATE_TOPIC):
            partition_log = self._logs.get_log(tp)
            if partition_log is not None and self._replicas.partition(tp) is None:
                self._replicas.become_leader(tp, partition_log)
            indexes.append(tp.partition)
        return sorted(indexes)

    def records(self, partition: int) -> Iterator[tuple[bytes, bytes | None]]:
        """The partition's (key, value) records from its log start, oldest first."""
        from samsa.broker.replica_offsets_log import ReplicaOffsetsLog
        from samsa.coordinator.offsets_topic import iter_log_records

        reader = ReplicaOffsetsLog(self._replicas, self._logs)
        _, chunks = reader.read_from_start(TopicPartition(TRANSACTION_STATE_TOPIC, partition))
        for chunk in chunks:
            for record in iter_log_records(chunk):
                if record.key is not None:
                    yield record.key, record.value

    async def write(self, partition: int, key: bytes, value: bytes | None) -> ErrorCode:
        from samsa.coordinator.offsets_topic import build_records

        tp = TopicPartition(TRANSACTION_STATE_TOPIC, partition)
        result = self._replicas.append(tp, memoryview(build_records([(key, value)], self._now_ms())), -1)
        return result.error


class LocalMarkerSender:
    """Writes markers through the replica manager's ``write_txn_markers`` when it has one (module doc); a marker
    for a ``__consumer_offsets`` partition also tells the group coordinator (``offsets_marker``) to apply or drop
    the producer's pending TxnOffsetCommit offsets."""

    def __init__(self, replica_manager: ReplicaManager, offsets_marker: Callable[[int, bool], None]) -> None:
        self._replicas = replica_manager
        self._offsets_marker = offsets_marker

    async def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: list[TopicPartitionKey],
    ) -> None:
        if any(topic == CONSUMER_OFFSETS_TOPIC for topic, _ in partitions):
            self._offsets_marker(producer_id, commit)
        write = getattr(self._replicas, "write_txn_markers", None)
        if write is None:
            _log.warning(
                "transaction markers (%s) for producer %d epoch %d on %d partitions not written: this broker "
                "has no marker writer yet",
                "commit" if commit else "abort",
                producer_id,
                producer_epoch,
                len(partitions),
            )
            return
        await write(producer_id, producer_epoch, commit, coordinator_epoch, partitions)
