"""The broker's ``TransactionStateLog`` (defined by ``samsa.transaction.coordinator``): ``__transaction_state``
through the replica manager, and the marker sender the coordinator drives.

A broker alone creates ``__transaction_state`` (compacted, ``transaction.state.log.num.partitions``) at the
coordinator's first use, leads every partition and loads them all. In a cluster the topic's creation and the
coordinator's loading on leadership changes are not wired yet: the coordinator there owns no partition and
answers NOT_COORDINATOR. Markers: written in-process through ``ReplicaManager.write_txn_markers`` (acks=all), retried every
``MARKER_RETRY_S`` until each partition has it or is gone. The last stable offset and read_committed fetches are
not built yet: consumers see aborted records.

Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from samsa.protocol.errors import ErrorCode
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition
from samsa.transaction.log_format import TRANSACTION_STATE_TOPIC

from .replica_manager import TxnMarkerEntry

if TYPE_CHECKING:
    from samsa.storage.log_manager import LogManager
    from samsa.transaction.state import TopicPartitionKey

    from .replica_manager import ReplicaManager

_log = logging.getLogger(__name__)

MARKER_RETRY_S = 0.1


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
        pending = tuple(TopicPartition(topic, partition) for topic, partition in partitions)
        while pending:
            entry = TxnMarkerEntry(producer_id, producer_epoch, commit, coordinator_epoch, pending)
            answers = await self._replicas.write_txn_markers([entry])
            # written, or the partition was deleted meanwhile (done, as Kafka counts it); the rest again
            pending = tuple(
                tp
                for tp in pending
                if answers.get((producer_id, tp))
                not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            )
            if pending:
                _log.info(
                    "transaction markers for producer %d on %s not written yet: retrying",
                    producer_id,
                    ", ".join(map(str, pending)),
                )
                await asyncio.sleep(MARKER_RETRY_S)
