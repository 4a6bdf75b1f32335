"""A transactional producer over ``KafkaClient``, with the one thing Kafka's producers do not offer: the
transaction may be ended by another process than the one that wrote it (the exactly-once Spark sink's executors
write, its driver commits).

A ``TransactionHandle`` (transactional id, producer id, epoch) is all it takes to end a transaction: EndTxn to the
id's coordinator with those three values commits or aborts it, as Kafka's coordinator checks only them.

    writer = await TransactionalProducer.begin(client, "sink-3", timeout_ms=900_000)   # InitProducerId
    await writer.send(TopicPartition("out", 0), [record, ...])     # AddPartitionsToTxn once, then Produce
    handle = writer.handle
    ...
    await end_transaction(client, handle, commit=True)              # anywhere: EndTxn

``begin`` with an id already in use fences its previous producer and aborts that producer's open transaction (the
coordinator does both), so a task retried with the same id never leaves two transactions. Retriable coordinator
answers (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS) are
retried with a short backoff for ``RETRY_FOR_S``; anything else raises ``BrokerError``.

Not thread-safe: one task, one producer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from samsa.protocol import ErrorCode
from samsa.records import Record, build_batch

from .client import KafkaClient
from .errors import BrokerError, check
from .types import TopicPartition

RETRY_FOR_S = 60.0
BACKOFF_S = 0.05
_RETRIABLE = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.CONCURRENT_TRANSACTIONS,
}


@dataclass(frozen=True, slots=True)
class TransactionHandle:
    """What ends a transaction: its id and the producer id and epoch that opened it."""

    transactional_id: str
    producer_id: int
    producer_epoch: int


async def _coordinator(client: KafkaClient, transactional_id: str) -> int:
    from samsa.protocol.messages.find_coordinator import FindCoordinatorRequest

    answer = await client.send(
        FindCoordinatorRequest(key=transactional_id, key_type=1), api_key=10, version=3
    )
    check(answer.error_code)
    await client.metadata([])  # the coordinator's address, for ``connection(node_id)``
    return int(answer.node_id)


async def _with_coordinator(
    client: KafkaClient, transactional_id: str, request: Any, api_key: int, version: int | None = None
) -> Any:
    """Send ``request`` to the id's coordinator, finding it again and retrying on retriable errors; the answer."""
    deadline = time.monotonic() + RETRY_FOR_S
    while True:
        try:
            node_id = await _coordinator(client, transactional_id)
            answer = await client.send(request, api_key=api_key, node_id=node_id, version=version)
            error = _error_of(answer)
        except BrokerError as exc:
            error = exc.error_code
            answer = None
        if error not in _RETRIABLE:
            check(error)
            return answer
        if time.monotonic() > deadline:
            check(error)
        await asyncio.sleep(BACKOFF_S)


def _error_of(answer: Any) -> int:
    """The first error of an InitProducerId, AddPartitionsToTxn (any version) or EndTxn answer."""
    if getattr(answer, "error_code", 0):
        return int(answer.error_code)
    for result in getattr(answer, "results_by_transaction", None) or ():
        for topic in result.topic_results:
            for partition in topic.results_by_partition:
                if partition.partition_error_code:
                    return int(partition.partition_error_code)
    for topic in getattr(answer, "results_by_topic_v3_and_below", None) or ():
        for partition in topic.results_by_partition:
            if partition.partition_error_code:
                return int(partition.partition_error_code)
    return 0


@dataclass
class TransactionalProducer:
    """One open transaction of ``transactional_id`` (module doc)."""

    client: KafkaClient
    handle: TransactionHandle
    added: set[TopicPartition] = field(default_factory=set)
    sequences: dict[TopicPartition, int] = field(default_factory=dict)

    @classmethod
    async def begin(
        cls, client: KafkaClient, transactional_id: str, timeout_ms: int
    ) -> TransactionalProducer:
        """InitProducerId for ``transactional_id`` (fencing any earlier producer of it): a new transaction."""
        from samsa.protocol.messages.init_producer_id import InitProducerIdRequest

        answer = await _with_coordinator(
            client,
            transactional_id,
            InitProducerIdRequest(transactional_id=transactional_id, transaction_timeout_ms=timeout_ms),
            22,
        )
        return cls(client, TransactionHandle(transactional_id, answer.producer_id, answer.producer_epoch))

    async def send(self, tp: TopicPartition, records: Sequence[Record]) -> None:
        """Write ``records`` to ``tp`` in the transaction (the partition is added to it first, once)."""
        if not records:
            return
        if tp not in self.added:
            await self._add(tp)
        handle = self.handle
        sequence = self.sequences.get(tp, 0)
        batch = build_batch(
            [Record(i, r.timestamp, r.key, r.value, r.headers) for i, r in enumerate(records)],
            producer_id=handle.producer_id,
            producer_epoch=handle.producer_epoch,
            base_sequence=sequence,
            is_transactional=True,
        )
        await self.client.produce(tp, batch, acks=-1, transactional_id=handle.transactional_id)
        self.sequences[tp] = sequence + len(records)

    async def _add(self, tp: TopicPartition) -> None:
        from samsa.protocol.messages import add_partitions_to_txn as ap

        handle = self.handle
        request = ap.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=handle.transactional_id,
            v3_and_below_producer_id=handle.producer_id,
            v3_and_below_producer_epoch=handle.producer_epoch,
            v3_and_below_topics=[ap.AddPartitionsToTxnTopic(tp.topic, [tp.partition])],
        )
        await _with_coordinator(
            self.client, handle.transactional_id, request, 24, version=3
        )  # a client's form
        self.added.add(tp)


async def end_transaction(client: KafkaClient, handle: TransactionHandle, *, commit: bool) -> None:
    """Commit or abort the transaction ``handle`` names (EndTxn; retried while the coordinator moves). A commit of
    a transaction already committed is answered NONE, as Kafka answers a retried EndTxn."""
    from samsa.protocol.messages.end_txn import EndTxnRequest

    request = EndTxnRequest(
        transactional_id=handle.transactional_id,
        producer_id=handle.producer_id,
        producer_epoch=handle.producer_epoch,
        committed=commit,
    )
    await _with_coordinator(client, handle.transactional_id, request, 26)
