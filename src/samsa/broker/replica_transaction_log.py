"""The broker's ``TransactionStateLog`` (defined by ``samsa.transaction.coordinator``): ``__transaction_state``
through the replica manager, and the marker sender the coordinator drives.

A broker alone creates ``__transaction_state`` (compacted, ``transaction.state.log.num.partitions``) at the
coordinator's first use, leads every partition and loads them all. In a cluster FindCoordinator creates the topic
through ZooKeeper (``ZkMetadataStore.ensure_transaction_topic``) and the broker loads the partitions it leads on
every leadership change (``KafkaServer.partitions_changed``). A state write is acks=all: answered once the ISR has
it. Markers: written in-process through ``ReplicaManager.write_txn_markers`` (acks=all) where this broker leads the
partition, else sent to its leader as WriteTxnMarkers (``send_remote``); retried every ``MARKER_RETRY_S`` until
each partition has it or is gone.

Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from samsa.client.errors import KafkaError
from samsa.protocol.errors import ErrorCode
from samsa.storage.topic import CONSUMER_OFFSETS_TOPIC, TopicPartition
from samsa.transaction.log_format import TRANSACTION_STATE_TOPIC

from .replica_manager import TxnMarkerEntry

if TYPE_CHECKING:
    from samsa.client.security import ClientSecurity
    from samsa.storage.log_manager import LogManager
    from samsa.transaction.state import TopicPartitionKey

    from .replica_manager import ReplicaManager

_log = logging.getLogger(__name__)

MARKER_RETRY_S = 0.1
_CODES = {int(code): code for code in ErrorCode}
WRITE_TIMEOUT_MS = 5_000  # Kafka's transaction.state.log write timeout (request.timeout.ms of the append)

# (leader id, marker) -> the answer per partition, from the leader's WriteTxnMarkers
RemoteMarkers = Callable[[int, TxnMarkerEntry], Awaitable[dict[TopicPartition, ErrorCode]]]


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
        if result.error or not self._replicas.acks_pending(tp, result):
            return result.error
        acked = await self._replicas.wait_for_acks([(tp, result.last_offset)], WRITE_TIMEOUT_MS)
        return acked.get(tp, ErrorCode.NONE)


class LocalMarkerSender:
    """Writes markers through the replica manager's ``write_txn_markers`` when it has one (module doc); a marker
    for a ``__consumer_offsets`` partition also tells the group coordinator (``offsets_marker``) to apply or drop
    the producer's pending TxnOffsetCommit offsets."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        offsets_marker: Callable[[int, bool], None],
        leader_of: Callable[[TopicPartition], int | None] | None = None,
        send_remote: RemoteMarkers | None = None,
    ) -> None:
        self._replicas = replica_manager
        self._offsets_marker = offsets_marker
        self._leader_of = leader_of
        self._send_remote = send_remote

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
            answers = await self._write_once(producer_id, producer_epoch, commit, coordinator_epoch, pending)
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

    async def _write_once(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: tuple[TopicPartition, ...],
    ) -> dict[tuple[int, TopicPartition], ErrorCode]:
        """One attempt at every partition: in-process where this broker leads it (or no other leader is known),
        else one WriteTxnMarkers per leader."""
        me = self._replicas.node_id
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in partitions:
            leader = self._leader_of(tp) if self._leader_of is not None else me
            by_leader.setdefault(me if leader is None or self._send_remote is None else leader, []).append(tp)
        answers: dict[tuple[int, TopicPartition], ErrorCode] = {}
        for leader, tps in by_leader.items():
            entry = TxnMarkerEntry(producer_id, producer_epoch, commit, coordinator_epoch, tuple(tps))
            if leader == me:
                answers.update(await self._replicas.write_txn_markers([entry]))
                continue
            assert self._send_remote is not None
            try:
                remote = await self._send_remote(leader, entry)
            except (OSError, asyncio.TimeoutError, KafkaError) as exc:
                _log.info("transaction markers to broker %d failed (%s): retrying", leader, exc)
                remote = dict.fromkeys(tps, ErrorCode.NOT_LEADER_OR_FOLLOWER)
            answers.update({(producer_id, tp): error for tp, error in remote.items()})
        return answers


class BrokerConnections:
    """Connections to other brokers over their inter-broker listener (``address_of``), one per broker, kept open;
    one that fails (or is ``drop``ped after a timeout) is closed and made again at the next request."""

    def __init__(
        self,
        address_of: Callable[[int], tuple[str, int] | None] | None,
        client_id: str,
        security: ClientSecurity | None = None,
    ) -> None:
        self._address_of = address_of
        self._client_id = client_id
        self._security = security  # the inter-broker listener's TLS and SASL (None: PLAINTEXT)
        self._connections: dict[int, Any] = {}
        self._closing: set[asyncio.Task[None]] = set()

    async def request(
        self, broker: int, message: Any, api_key: int, version: int | None = None
    ) -> Any | None:
        """``message``'s answer from ``broker``; None when its address is unknown. Raises what the connection
        raises (KafkaError, OSError, timeouts), the connection dropped then."""
        from samsa.client.connection import BrokerConnection

        connection = self._connections.get(broker)
        if connection is None or connection.closed:
            address = self._address_of(broker) if self._address_of is not None else None
            if address is None:
                return None
            connection = BrokerConnection(
                *address, client_id=self._client_id, request_timeout_ms=30_000, security=self._security
            )
            await connection.open()
            self._connections[broker] = connection
        try:
            return await connection.request(message, api_key, version)
        except BaseException:
            self.drop(broker)
            raise

    def drop(self, broker: int) -> None:
        """Forget the connection to ``broker`` (closed in the background)."""
        connection = self._connections.pop(broker, None)
        if connection is not None:
            task = asyncio.get_running_loop().create_task(connection.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    async def close(self) -> None:
        connections = list(self._connections.values())
        self._connections.clear()
        for connection in connections:
            await connection.close()


class RemoteMarkerClient:
    """WriteTxnMarkers to other brokers (``BrokerConnections``)."""

    def __init__(
        self,
        address_of: Callable[[int], tuple[str, int] | None],
        client_id: str,
        security: ClientSecurity | None = None,
    ) -> None:
        self._brokers = BrokerConnections(address_of, client_id, security)

    async def __call__(self, leader: int, entry: TxnMarkerEntry) -> dict[TopicPartition, ErrorCode]:
        from samsa.protocol.messages.write_txn_markers import (
            WritableTxnMarker,
            WritableTxnMarkerTopic,
            WriteTxnMarkersRequest,
        )

        by_topic: dict[str, list[int]] = {}
        for tp in entry.partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        marker = WritableTxnMarker(
            producer_id=entry.producer_id,
            producer_epoch=entry.producer_epoch,
            transaction_result=entry.commit,
            topics=[WritableTxnMarkerTopic(t, ps) for t, ps in by_topic.items()],
            coordinator_epoch=entry.coordinator_epoch,
        )
        answer = await self._brokers.request(leader, WriteTxnMarkersRequest([marker]), 27)
        if answer is None:
            return dict.fromkeys(entry.partitions, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return {
            TopicPartition(t.name, p.partition_index): _CODES.get(
                p.error_code, ErrorCode.UNKNOWN_SERVER_ERROR
            )
            for m in answer.markers
            for t in m.topics
            for p in t.partitions
        }

    async def close(self) -> None:
        await self._brokers.close()


VERIFY_TIMEOUT_S = (
    5.0  # a coordinator that does not answer: the producer is told to retry (NOT_ENOUGH_REPLICAS)
)
_RETRY_LATER = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
}


class TransactionVerifier:
    """KIP-890 part 1, the partition leader's side: before it appends a transaction's first batch to a partition,
    it asks the transaction's coordinator whether the partition is in the producer's open transaction (the
    verify-only AddPartitionsToTxn), so a late or stray transactional write cannot open a transaction no marker
    will end. The coordinator is this broker's own where it leads the id's ``__transaction_state`` partition, else
    the leader named by ``leader_of`` (AddPartitionsToTxn v4, ``verify_only``, over the inter-broker listener).

    A coordinator that is moving or busy is answered NOT_ENOUGH_REPLICAS for the partitions (retriable: the
    producer sends the batch again), as Kafka maps it for produce requests."""

    def __init__(
        self,
        coordinator: Callable[[], Any],
        leader_of: Callable[[str], int | None] | None = None,
        address_of: Callable[[int], tuple[str, int] | None] | None = None,
        node_id: int = -1,
        client_id: str = "samsa-txn-verify",
        security: ClientSecurity | None = None,
    ) -> None:
        self._coordinator = coordinator
        self._leader_of = leader_of
        self._node_id = node_id
        self._brokers = BrokerConnections(address_of, client_id, security)

    async def __call__(
        self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: list[tuple[str, int]]
    ) -> dict[tuple[str, int], ErrorCode]:
        leader = self._leader_of(transactional_id) if self._leader_of is not None else self._node_id
        if leader is None:
            return dict.fromkeys(partitions, ErrorCode.NOT_ENOUGH_REPLICAS)
        if leader == self._node_id:
            coordinator = self._coordinator()
            answers = coordinator.verify_partitions(transactional_id, producer_id, producer_epoch, partitions)
        else:
            try:
                answers = await asyncio.wait_for(
                    self._remote(leader, transactional_id, producer_id, producer_epoch, partitions),
                    VERIFY_TIMEOUT_S,
                )
            except (OSError, asyncio.TimeoutError, KafkaError) as exc:
                self._brokers.drop(leader)
                _log.info("verifying a transaction with broker %d failed (%s)", leader, exc)
                answers = dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return {
            tp: ErrorCode.NOT_ENOUGH_REPLICAS if error in _RETRY_LATER else error
            for tp, error in answers.items()
        }

    async def _remote(
        self,
        leader: int,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[tuple[str, int]],
    ) -> dict[tuple[str, int], ErrorCode]:
        from samsa.protocol.messages import add_partitions_to_txn as ap

        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        request = ap.AddPartitionsToTxnRequest(
            transactions=[
                ap.AddPartitionsToTxnTransaction(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    verify_only=True,
                    topics=[ap.AddPartitionsToTxnTopic(t, ps) for t, ps in by_topic.items()],
                )
            ]
        )
        answer = await self._brokers.request(leader, request, 24, 4)
        if answer is None:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if answer.error_code:
            return dict.fromkeys(partitions, _CODES.get(answer.error_code, ErrorCode.UNKNOWN_SERVER_ERROR))
        return {
            (topic.name, p.partition_index): _CODES.get(
                p.partition_error_code, ErrorCode.UNKNOWN_SERVER_ERROR
            )
            for result in answer.results_by_transaction
            for topic in result.topic_results
            for p in topic.results_by_partition
        }

    async def close(self) -> None:
        await self._brokers.close()
