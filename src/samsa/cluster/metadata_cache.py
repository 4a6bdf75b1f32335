"""What a broker knows of the cluster: live brokers, the controller, and each partition's leader, replicas and ISR.

In cluster mode the controller feeds it with UpdateMetadata requests (Kafka's ``MetadataCache``); Metadata,
FindCoordinator and DescribeCluster answer from it, so every broker tells clients the same leaders. A request
carries the whole broker list and the states of the partitions it names; partitions it does not name keep their
state, and a partition whose leader is ``LEADER_DELETED`` (-2) is dropped with its topic when it was the last.

Until the controller's first UpdateMetadata (``known``), a starting broker knows only what it reads from ZooKeeper
(``set_provisional``, at start and again whenever the registered brokers change): the registered brokers and the
topic names, no leaders. Answering clients then from the empty cache (no brokers, every topic unknown) made
librdkafka 2.16 drop every broker it knew and stop consuming for minutes (a nemesis run, 2026-11-27); naming only
the brokers registered at start made it drop one that registered again just after, with produce requests in
flight to it (a nemesis run, 2026-11-27); see ``ZkMetadataStore``.

Event-loop thread only.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from samsa.topic_partition import TopicPartition

__all__ = ["LEADER_DELETED", "NO_LEADER", "BrokerNode", "MetadataCache", "PartitionInfo"]

NO_LEADER = -1
LEADER_DELETED = -2  # the controller's mark for a partition of a deleted topic (Kafka's LeaderDuringDelete)


@dataclass(frozen=True, slots=True)
class BrokerNode:
    """A live broker: its address on each listener (name -> host, port) and its rack."""

    broker_id: int
    endpoints: dict[str, tuple[str, int]]
    rack: str | None = None

    def address(self, listener: str) -> tuple[str, int] | None:
        """Where clients of ``listener`` reach this broker (None: it has no such listener)."""
        return self.endpoints.get(listener)


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition as the controller last described it (``partition_epoch`` is its state znode's version)."""

    tp: TopicPartition
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    partition_epoch: int = 0


class MetadataCache:
    """Brokers, controller and partition states as last sent by the controller. Event-loop thread only."""

    def __init__(self) -> None:
        self.controller_id: int | None = None
        self.controller_epoch = -1
        self.brokers: dict[int, BrokerNode] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        self._partitions: dict[str, dict[int, PartitionInfo]] = {}
        self._known = asyncio.Event()  # set by the controller's first UpdateMetadata (``known``)
        self.provisional_brokers: list[BrokerNode] = []  # read from ZooKeeper until ``known``
        self.provisional_topics: set[str] = set()
        # called when an UpdateMetadata names another controller than the last (``set_brokers``)
        self.on_new_controller: Callable[[], None] | None = None

    def set_provisional(self, brokers: list[BrokerNode], topics: set[str]) -> None:
        """What ZooKeeper holds until the controller's first UpdateMetadata: the registered brokers and the topic
        names (module doc); ignored once that came."""
        if self.known:
            return
        self.provisional_brokers = brokers
        self.provisional_topics = topics

    # --- updates (from UpdateMetadata) -----------------------------------------------------------------------

    def set_brokers(self, controller_id: int, controller_epoch: int, brokers: list[BrokerNode]) -> None:
        moved = controller_epoch != self.controller_epoch or controller_id != self.controller_id
        self.controller_id = controller_id
        self.controller_epoch = controller_epoch
        self.brokers = {broker.broker_id: broker for broker in brokers}
        if moved and self.on_new_controller is not None:
            self.on_new_controller()
        if not self.known:
            self._known.set()
            self.provisional_brokers, self.provisional_topics = [], set()

    @property
    def known(self) -> bool:
        """Whether the controller has sent its first UpdateMetadata."""
        return self._known.is_set()

    async def wait_known(self, timeout_s: float) -> bool:
        """Whether the controller's first UpdateMetadata has come, waiting for it up to ``timeout_s``."""
        if not self.known:
            try:
                await asyncio.wait_for(self._known.wait(), timeout_s)
            except TimeoutError:
                pass
        return self.known

    def set_partition(self, info: PartitionInfo, topic_id: uuid.UUID | None = None) -> None:
        """Store one partition's state; a partition led by ``LEADER_DELETED`` is removed."""
        topic = info.tp.topic
        if info.leader == LEADER_DELETED:
            partitions = self._partitions.get(topic, {})
            partitions.pop(info.tp.partition, None)
            if not partitions:
                self._partitions.pop(topic, None)
                self.topic_ids.pop(topic, None)
            return
        self._partitions.setdefault(topic, {})[info.tp.partition] = info
        if topic_id is not None and topic_id.int != 0:
            self.topic_ids[topic] = topic_id

    # --- reads ----------------------------------------------------------------------------------------------

    def topics(self) -> set[str]:
        return set(self._partitions)

    def partitions_of(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions in partition order (empty: not known to the cluster)."""
        partitions = self._partitions.get(topic, {})
        return [partitions[p] for p in sorted(partitions)]

    def partition(self, tp: TopicPartition) -> PartitionInfo | None:
        return self._partitions.get(tp.topic, {}).get(tp.partition)

    def leader_node(self, tp: TopicPartition) -> BrokerNode | None:
        """The live broker leading ``tp``, or None (unknown partition, no leader, or a leader not alive)."""
        info = self.partition(tp)
        return self.brokers.get(info.leader) if info is not None else None

    def alive_brokers(self) -> list[BrokerNode]:
        return [self.brokers[broker_id] for broker_id in sorted(self.brokers)]
