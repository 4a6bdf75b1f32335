"""ISR changes from a leader to the controller: Kafka's AlterPartition manager (KIP-497).

A leader that wants to add a caught-up follower to a partition's ISR, or drop a lagging one, submits the new ISR
with the leader epoch and partition epoch it holds. The channel keeps one pending change per partition (a newer
one replaces it), sends every pending change in one AlterPartition at a time to the broker the metadata cache
names as controller, and reports each answer:

- accepted: the committed ISR and the new partition epoch;
- refused for good (``INELIGIBLE_REPLICA``, ``OPERATION_NOT_ATTEMPTED``): the leader rolls back to its committed
  ISR;
- refused as stale (``FENCED_LEADER_EPOCH``, ``INVALID_UPDATE_VERSION``, unknown topic or partition): the change
  stays pending until the next LeaderAndIsr replaces the partition's state, as Kafka's leader does;
- anything else (no controller yet, ``NOT_CONTROLLER``, a lost connection): sent again after a short backoff,
  which a new controller cuts short (``controller_changed``): after a controller failover the pending changes go
  to the new one as soon as its UpdateMetadata names it, not a backoff later (the ISR of a partition whose leader
  stayed, ``__consumer_offsets`` among them, waits on that change before acks=all can complete again).

Its only use of time is those backoffs: they go through an injected ``sleep`` (``asyncio.sleep`` by default; a
test's sleep advances a manual clock and returns at once), and the connection to the controller is made by an
injected factory, so the AlterPartition path is tested in memory.

Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from samsa.client.connection import BrokerConnection
from samsa.client.errors import KafkaError
from samsa.protocol import ApiKey, ErrorCode
from samsa.protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
    AlterPartitionResponse,
    BrokerState,
)
from samsa.topic_partition import TopicPartition

from .controller import stop_task

__all__ = ["IsrChange", "IsrChannel"]

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0
NO_CONTROLLER_BACKOFF_S = 0.5
_STALE = {
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.INVALID_UPDATE_VERSION,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.INVALID_REQUEST,
}
_REFUSED = {ErrorCode.INELIGIBLE_REPLICA, ErrorCode.OPERATION_NOT_ATTEMPTED}


@dataclass(frozen=True, slots=True)
class IsrChange:
    tp: TopicPartition
    leader_epoch: int
    partition_epoch: int
    new_isr: frozenset[int]


# (tp, leader epoch sent, committed ISR or None for a rollback, partition epoch)
Answered = Callable[[TopicPartition, int, "list[int] | None", int], None]


class ControllerConnection(Protocol):
    """What the channel needs of its connection to the controller (``BrokerConnection``)."""

    @property
    def closed(self) -> bool: ...

    async def open(self) -> Any: ...

    def pick_version(self, api_key: int) -> int: ...

    async def request(self, message: Any, api_key: int, version: int | None = None) -> Any: ...

    async def close(self) -> None: ...


# (host, port, client id) -> a connection not yet open
ConnectController = Callable[[str, int, str], ControllerConnection]


def _broker_connection(host: str, port: int, client_id: str) -> ControllerConnection:
    return BrokerConnection(host, port, client_id=client_id, request_timeout_ms=30_000)


class IsrChannel:
    """Pending ISR changes of this leader and the task that sends them (module doc). Event-loop thread only."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        controller: Callable[[], tuple[int, str, int] | None],
        topic_id: Callable[[str], uuid.UUID | None],
        answered: Answered,
        *,
        connect: ConnectController = _broker_connection,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._connect = connect
        self._sleep = sleep
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._controller = controller
        self._topic_id = topic_id
        self._answered = answered
        self._pending: dict[TopicPartition, IsrChange] = {}
        self._wake = asyncio.Event()
        self._controller_moved = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self._failures = 0
        self._connection: ControllerConnection | None = None
        self._connected_to: tuple[int, str, int] | None = None

    def submit(self, change: IsrChange) -> None:
        self._pending[change.tp] = change
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="samsa-isr-changes")
        self._wake.set()

    def controller_changed(self) -> None:
        """The metadata names a new controller: a backoff in progress ends, the pending changes go to it."""
        self._controller_moved.set()

    def pending(self) -> int:
        return len(self._pending)

    async def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            await stop_task(self._task)
            self._task = None

    async def _run(self) -> None:
        try:
            while not self._closed:
                await self._wake.wait()
                self._wake.clear()
                while self._pending and not self._closed:
                    self._controller_moved.clear()  # a controller named after this read ends the backoff
                    controller = self._controller()
                    if controller is None:
                        await self._pause(NO_CONTROLLER_BACKOFF_S)
                        continue
                    batch, self._pending = self._pending, {}
                    response = await self._send(controller, batch)
                    if response is None or response.error_code:
                        self._failures += 1
                        if response is not None:
                            log.debug(
                                "AlterPartition to broker %d: error %d", controller[0], response.error_code
                            )
                        self._requeue(batch)
                        await self._pause(self._backoff())
                        continue
                    self._failures = 0
                    self._apply(batch, response)
        finally:
            if self._connection is not None:
                await self._connection.close()

    async def _send(
        self, controller: tuple[int, str, int], batch: dict[TopicPartition, IsrChange]
    ) -> AlterPartitionResponse | None:
        """One AlterPartition to ``controller`` (connecting when it changed); None when it could not be sent."""
        try:
            if self._connection is None or self._connection.closed or self._connected_to != controller:
                if self._connection is not None:
                    await self._connection.close()
                self._connection = self._connect(controller[1], controller[2], f"isr-{self._broker_id}")
                self._connected_to = controller
                await self._connection.open()
            version = self._connection.pick_version(ApiKey.ALTER_PARTITION)
            response: AlterPartitionResponse = await self._connection.request(
                self._request(batch, version), ApiKey.ALTER_PARTITION, version
            )
            return response
        except KafkaError as exc:
            level = logging.INFO if self._failures == 0 else logging.DEBUG  # once per outage
            log.log(level, "AlterPartition to broker %d failed: %s (retrying)", controller[0], exc)
            if self._connection is not None:
                await self._connection.close()
            self._connection = None
            return None

    async def _pause(self, seconds: float) -> None:
        """A backoff of ``seconds``, over early when a new controller is named (``controller_changed``)."""
        sleeping = asyncio.ensure_future(self._sleep(seconds))
        moved = asyncio.ensure_future(self._controller_moved.wait())
        try:
            await asyncio.wait((sleeping, moved), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeping.cancel()
            moved.cancel()

    def _backoff(self) -> float:
        """50 ms, doubling with each failure in a row, up to a second (the controller may be moving)."""
        return float(min(RETRY_BACKOFF_S * 2 ** min(self._failures - 1, 5), MAX_BACKOFF_S))

    def _requeue(self, batch: dict[TopicPartition, IsrChange]) -> None:
        for tp, change in batch.items():
            self._pending.setdefault(tp, change)  # a newer change submitted meanwhile wins

    def _request(self, batch: dict[TopicPartition, IsrChange], version: int) -> AlterPartitionRequest:
        """The request in ``version``: the ISR as ids (v0-2) or with broker epochs (v3+, -1 as ZooKeeper mode
        sends), the topic by name (v0-1) or id (v2+)."""
        by_topic: dict[str, list[AlterPartitionRequestPartitionData]] = {}
        for tp, change in sorted(batch.items()):
            isr = sorted(change.new_isr)
            by_topic.setdefault(tp.topic, []).append(
                AlterPartitionRequestPartitionData(
                    partition_index=tp.partition,
                    leader_epoch=change.leader_epoch,
                    new_isr=isr if version < 3 else [],
                    new_isr_with_epochs=[BrokerState(broker_id=r, broker_epoch=-1) for r in isr]
                    if version >= 3
                    else [],
                    partition_epoch=change.partition_epoch,
                )
            )
        return AlterPartitionRequest(
            broker_id=self._broker_id,
            broker_epoch=self._broker_epoch(),
            topics=[
                AlterPartitionRequestTopicData(
                    topic_name=topic,
                    topic_id=self._topic_id(topic) or uuid.UUID(int=0),
                    partitions=partitions,
                )
                for topic, partitions in by_topic.items()
            ],
        )

    def _apply(self, batch: dict[TopicPartition, IsrChange], response: AlterPartitionResponse) -> None:
        names = {self._topic_id(tp.topic): tp.topic for tp in batch}
        for topic in response.topics:
            name = topic.topic_name or names.get(topic.topic_id, "")
            for answer in topic.partitions:
                tp = TopicPartition(name, answer.partition_index)
                change = batch.get(tp)
                if change is None:
                    continue
                error = answer.error_code
                if error == ErrorCode.NONE:
                    self._answered(tp, change.leader_epoch, list(answer.isr), answer.partition_epoch)
                elif error in _REFUSED:
                    log.info("%s: ISR change to %s refused (error %d)", tp, sorted(change.new_isr), error)
                    self._answered(tp, change.leader_epoch, None, -1)
                elif error in _STALE:
                    log.info("%s: ISR change stale (error %d); waiting for the controller's state", tp, error)
                else:
                    self._pending.setdefault(tp, change)
        if self._pending:
            self._wake.set()
